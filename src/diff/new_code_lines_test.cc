#include "diff/new_code_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace eroica {
namespace {

// `n` ranks at 0.1 s a step sampled over the training loop's lines; `extra` adds a line (and its
// caller's) holding `share` of each rank's window; `periods`: the sampling periods a window's
// samples span (5 steps at 150 Hz: 75).
std::vector<WorkerPattern> Job(int n, float share = 0, bool extra = false, float periods = 75) {
  std::vector<WorkerPattern> job;
  for (int r = 0; r < n; ++r) {
    WorkerPattern w;
    w.rank = r;
    w.iteration_s = 0.1;
    w.code_line_periods = periods;
    w.code_lines = {{"/job/train.py:94(<module>)", 1.0F, 0},
                    {"/job/train.py:64(main)", 0.6F, 1},
                    {"/job/model.py:47(forward)", 0.5F, 2}};
    if (extra) {
      w.code_lines.push_back({"/job/train.py:75(main)", share, 1});
      w.code_lines.push_back({"/job/train.py:87(run_eval)", share, 2});
    }
    job.push_back(w);
  }
  return job;
}

Finding GlobalCompute(double impact_s) {
  Finding f;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategory::kCompute;
  f.workers = {0, 1, 2, 3};
  f.function = "aten::mkldnn_convolution";
  f.impact_s_per_iter = impact_s;
  f.evidence = "against the baseline: every rank's compute time grew";
  f.action = "Compute itself is slow everywhere.";
  return f;
}

// An unseen 4-rank conv job whose every rank began an evaluation pass every 4th step (150 ms):
// `global compute` against the baseline, 46.5 ms/iter of a 160 ms step, 0.4 of each window under
// the evaluation's lines, which the baseline's samples never reached.
TEST(NewCodeLines, ALineEveryRankRunsNowAndTheBaselineNeverRanIsTheFindingsLocation) {
  std::vector<Finding> findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(Job(4), Job(4, 0.4F, true), &findings);
  EXPECT_EQ(findings[0].location, "/job/train.py:87(run_eval)");  // the deeper of the two new lines
  EXPECT_NE(findings[0].evidence.find("40% of a rank's window (median) under /job/train.py:87(run_eval), a line the "
                                      "baseline's samples of 4 of its 4 ranks sampled then and now never reached"),
            std::string::npos)
      << findings[0].evidence;
  EXPECT_NE(findings[0].action.find("Start with the code at /job/train.py:87(run_eval)"), std::string::npos);
}

TEST(NewCodeLines, NoLocationWhereTheLineIsOldSmallOrTheCodeMoved) {
  // The baseline ran it too.
  std::vector<Finding> findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(Job(4, 0.1F, true), Job(4, 0.4F, true), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // Too few samples now for the baseline's to have missed it by chance only (5 periods a window, 2
  // at the line: a baseline that ran it as long misses it with chance 1/4).
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(Job(4, 0, false, 5), Job(4, 0.4F, true, 5), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // It holds less than half of the finding's share of the step (0.3 of it: 0.1 < 0.15).
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(Job(4), Job(4, 0.1F, true), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // On one rank of four only.
  std::vector<WorkerPattern> now = Job(4);
  now[2] = Job(3, 0.4F, true)[2];
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(Job(4), now, &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // The baseline's lists were full: the line may have been below their last.
  std::vector<WorkerPattern> full = Job(4);
  for (WorkerPattern& w : full) {
    while (w.code_lines.size() < kMaxCodeLines) w.code_lines.push_back({"/job/x.py:1(f)", 0.01F, 3});
  }
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(full, Job(4, 0.4F, true), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // The job was restarted with its code edited: every line moved, none of them is new code.
  std::vector<WorkerPattern> moved = Job(4, 0.4F, true);
  for (WorkerPattern& w : moved) {
    for (CodeFrame& line : w.code_lines) line.location += "#moved";
  }
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(Job(4), moved, &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // A located finding, and a local one, are left alone.
  findings = {GlobalCompute(0.03), GlobalCompute(0.03)};
  findings[0].location = "/job/train.py:70(main)";
  findings[1].scope = FindingScope::kLocal;
  LocateByNewCodeLines(Job(4), Job(4, 0.4F, true), &findings);
  EXPECT_EQ(findings[0].location, "/job/train.py:70(main)");
  EXPECT_TRUE(findings[1].location.empty());
}

}  // namespace
}  // namespace eroica
