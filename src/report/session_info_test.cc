#include "report/session_info.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/temp_dir.h"
#include "report/session_chart.h"

namespace eroica {
namespace {

TEST(SessionInfoTest, ReadsTheOnlinePackagesFiles) {
  TempDir dir;
  dir.Write("session.json", R"({"schema": "eroica.session/v1", "session_id": "job-s0-it130", "reason": "degradation",
    "trigger_rank": 2, "trigger_host": "node-a", "target_iteration": 130, "capture_iters": 5,
    "detected_iteration": 126, "best_mean_s": 0.1, "current_mean_s": 0.14, "threshold": 1.05, "world_size": 4,
    "best_cpu_s": 0.033, "current_cpu_s": 0.045, "best_faults_per_iter": 3.0, "current_faults_per_iter": 9343.4,
    "window": {"iterations": 5, "max_seconds": 20}, "iteration_times_s": [0.1, 0.1, 0.15, 0.14],
    "iteration_times_first_id": 123})");
  dir.Write("rank-0.meta.json", R"({"rank": 0, "world_size": 4, "host": "node-a", "torch_version": "2.3.0",
    "python_version": "3.11.2", "iteration_ids": [130, 131], "iteration_times_s": [0.14, 0.15]})");
  dir.Write("rank-1.meta.json", R"({"rank": 1, "host": "node-b", "torch_version": "2.3.0", "missed": "no profiler"})");
  dir.Write("rank-2.meta.json", "{ not json");
  SessionInfo s = ReadSessionInfo({dir.path()});
  EXPECT_TRUE(s.has_session);
  EXPECT_EQ(s.session_id, "job-s0-it130");
  EXPECT_EQ(s.trigger_rank, 2);
  EXPECT_EQ(s.target_iteration, 130);
  EXPECT_EQ(s.capture_iterations, 5);
  EXPECT_DOUBLE_EQ(s.best_cpu_s, 0.033);
  EXPECT_DOUBLE_EQ(s.current_cpu_s, 0.045);
  EXPECT_NE(FreshMemoryNote(s).find("rank 2's training thread took 9343 page faults an iteration against 3"),
            std::string::npos)
      << FreshMemoryNote(s);
  SessionInfo session_only = ReadSessionInfo({dir.path()}, /*with_ranks=*/false);
  EXPECT_TRUE(session_only.ranks.empty() && session_only.warnings.empty());
  EXPECT_EQ(FreshMemoryNote(session_only), FreshMemoryNote(s));
  SessionInfo quiet;
  quiet.trigger_rank = 2;
  EXPECT_EQ(FreshMemoryNote(quiet), "");  // a session that says nothing of page faults
  SessionInfo few = s;                    // 12 more a 165 ms step: microseconds
  few.best_faults_per_iter = 0;
  few.current_faults_per_iter = 12;
  few.current_mean_s = 0.165;
  EXPECT_EQ(FreshMemoryNote(few), "");
  few.current_faults_per_iter = 2000;  // a 165 ms step's 1 % at a microsecond each
  EXPECT_NE(FreshMemoryNote(few), "");
  EXPECT_NEAR(DetectedSlowdownMs(s), 40.0, 1e-9);  // a degradation: 100 -> 140 ms
  SessionInfo forced = s;
  forced.reason = "forced";
  EXPECT_EQ(DetectedSlowdownMs(forced), 0.0);
  EXPECT_EQ(s.iteration_times_s.size(), 4u);
  EXPECT_EQ(s.iteration_times_first_id, 123);
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.TorchVersions(), "2.3.0");
  EXPECT_EQ(s.HostCount(), 2);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "rank 1 missed the session: no profiler");

  LineChart chart = IterationTimeChart(s);
  ASSERT_EQ(chart.series.size(), 3u);  // baseline, threshold, times
  EXPECT_EQ(chart.series.back().points.front().first, 123);
  ASSERT_EQ(chart.ranges.size(), 1u);
  EXPECT_EQ(chart.ranges[0].x_low, 130);
  EXPECT_EQ(chart.ranges[0].x_high, 135);
}

TEST(SessionInfoTest, WarmUpIterationsAreClippedAndTheChartSaysSo) {
  SessionInfo s;
  s.iteration_times_s = {2.4, 0.9, 0.11, 0.10, 0.10, 0.11, 0.10, 0.10, 0.12, 0.14, 0.15, 0.15};
  s.iteration_times_first_id = 0;
  s.best_mean_s = 0.10;
  s.threshold = 1.05;
  s.current_mean_s = 0.14;
  LineChart chart = IterationTimeChart(s);
  EXPECT_NEAR(chart.y_clip, 210, 1e-6);  // 1.5 x the detector's current mean, its highest level
  EXPECT_EQ(chart.clip_note, "2 early iterations above 210 ms clipped (warm-up; the slowest 2400 ms at 0)");
  std::string svg = RenderLineChartSvg(chart);
  EXPECT_NE(svg.find("clipped (warm-up"), std::string::npos);
  // The slowdown itself is never clipped: a later time above the level raises the ceiling.
  s.iteration_times_s.back() = 0.5;
  EXPECT_NEAR(IterationTimeChart(s).y_clip, 500, 1e-6);
  // A series without outliers is drawn whole.
  s.iteration_times_s = {0.10, 0.11, 0.10, 0.14};
  EXPECT_EQ(IterationTimeChart(s).y_clip, 0);
  EXPECT_TRUE(IterationTimeChart(s).clip_note.empty());
}

TEST(SessionInfoTest, ToleratesOtherKeysAndTypes) {
  SessionInfo s;
  ParseSessionJson(R"({"reason": 7, "trigger_rank": 1.0, "series": {"times_s": [0.2, "x", 0.3], "first_id": 9},
                       "target_iteration": "soon"})",
                   &s);
  EXPECT_TRUE(s.has_session);
  EXPECT_EQ(s.reason, "7");
  EXPECT_EQ(s.trigger_rank, 1);
  EXPECT_EQ(s.target_iteration, -1);
  EXPECT_EQ(s.iteration_times_s, (std::vector<double>{0.2, 0.3}));
  EXPECT_EQ(s.iteration_times_first_id, 9);
  SessionInfo empty;
  ParseSessionJson("[1, 2]", &empty);
  EXPECT_FALSE(empty.has_session);
}

TEST(SessionInfoTest, AFolderWithoutSessionFilesHasNone) {
  TempDir dir;
  dir.Write("rank-0.json", "[]");
  SessionInfo s = ReadSessionInfo({dir.path() + "/rank-0.json"});
  EXPECT_FALSE(s.has_session);
  EXPECT_TRUE(IterationTimeChart(s).series.empty());
}

// A FIFO named session.json or rank-7.meta.json used to hang `report` for good.
TEST(SessionInfoTest, FifosAreReportedNotWaitedFor) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir.path() + "/session.json").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir.path() + "/rank-7.meta.json").c_str(), 0600), 0);
  dir.Write("rank-1.meta.json", R"({"rank": 1, "world_size": 1e300, "iteration_ids": [1, "x", 2.0]})");
  SessionInfo info = ReadSessionInfo({dir.path()});
  ASSERT_EQ(info.ranks.size(), 1u);
  EXPECT_EQ(info.ranks[0].iteration_ids, (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(info.warnings.size(), 2u);
  EXPECT_NE(info.warnings[0].find("FIFO"), std::string::npos) << info.warnings[0];
}
}  // namespace
}  // namespace eroica
