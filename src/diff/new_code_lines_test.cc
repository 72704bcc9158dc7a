#include "diff/new_code_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diff/diff_test_util.h"
#include "localize/own_code_line.h"

namespace eroica {
namespace {

// `n` ranks at 0.1 s a step sampled over the training loop's lines; `extra` adds a line (and its
// caller's) holding `share` of each rank's window; `periods`: the sampling periods a window's
// samples span (5 steps at 150 Hz: 75).
std::vector<WorkerPattern> SampledJob(int n, float share = 0, bool extra = false, float periods = 75) {
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
  LocateByNewCodeLines(SampledJob(4), SampledJob(4, 0.4F, true), &findings);
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
  LocateByNewCodeLines(SampledJob(4, 0.1F, true), SampledJob(4, 0.4F, true), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // Too few samples now for the baseline's to have missed it by chance only (5 periods a window, 2
  // at the line: a baseline that ran it as long misses it with chance 1/4).
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(SampledJob(4, 0, false, 5), SampledJob(4, 0.4F, true, 5), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // It holds less than half of the finding's share of the step (0.3 of it: 0.1 < 0.15).
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(SampledJob(4), SampledJob(4, 0.1F, true), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // On one rank of four only.
  std::vector<WorkerPattern> now = SampledJob(4);
  now[2] = SampledJob(3, 0.4F, true)[2];
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(SampledJob(4), now, &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // The baseline's lists were full: the line may have been below their last.
  std::vector<WorkerPattern> full = SampledJob(4);
  for (WorkerPattern& w : full) {
    while (w.code_lines.size() < kMaxCodeLines) w.code_lines.push_back({"/job/x.py:1(f)", 0.01F, 3});
  }
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(full, SampledJob(4, 0.4F, true), &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // The job was restarted with its code edited: every line moved, none of them is new code.
  std::vector<WorkerPattern> moved = SampledJob(4, 0.4F, true);
  for (WorkerPattern& w : moved) {
    for (CodeFrame& line : w.code_lines) line.location += "#moved";
  }
  findings = {GlobalCompute(0.03)};
  LocateByNewCodeLines(SampledJob(4), moved, &findings);
  EXPECT_TRUE(findings[0].location.empty());
  // A located finding, and a local one, are left alone.
  findings = {GlobalCompute(0.03), GlobalCompute(0.03)};
  findings[0].location = "/job/train.py:70(main)";
  findings[1].scope = FindingScope::kLocal;
  LocateByNewCodeLines(SampledJob(4), SampledJob(4, 0.4F, true), &findings);
  EXPECT_EQ(findings[0].location, "/job/train.py:70(main)");
  EXPECT_TRUE(findings[1].location.empty());
}

// `job` with its iteration at `iteration_s` and `host_ms`/`compute_ms` of own work a step.
std::vector<WorkerPattern> Timed(std::vector<WorkerPattern> job, double iteration_s, double host_ms,
                                 double compute_ms) {
  for (WorkerPattern& w : job) {
    w.iteration_s = iteration_s;
    w.category_beta[static_cast<size_t>(Category::kHost)] = host_ms / 1e3 / iteration_s;
    w.category_beta[static_cast<size_t>(Category::kCompute)] = compute_ms / 1e3 / iteration_s;
  }
  return job;
}

// `job` with a host program point `name` holding `ms` a step on the ranks `ranks`.
std::vector<WorkerPattern> WithPoint(std::vector<WorkerPattern> job, const std::string& name, double ms,
                                     const std::vector<int>& ranks) {
  for (int r : ranks) {
    FunctionPattern f;
    f.name = name;
    f.category = Category::kHost;
    f.host_kind = HostKind::kPython;
    f.beta = ms / 1e3 / job[r].iteration_s;
    job[r].functions.push_back(f);
  }
  return job;
}

// An unseen 6-rank audio job (2 cores) whose every rank began building a confusion matrix in
// Python each step: 219 -> 247 ms a step against its baseline, the new code 6.4 % of rank 0's
// window under its call's line, which no baseline sample reached; its program point split between
// two names on some ranks and cleared the pattern diff's bar on 2 of the 6, so nothing was found.
TEST(NewCodeOnEveryRank, ASlowerJobWhoseEveryRankRunsCodeItsBaselineNeverRanIsAGlobalFinding) {
  std::vector<WorkerPattern> base = Timed(SampledJob(6, 0, false, 300), 0.219, 11, 150);
  std::vector<WorkerPattern> now = Timed(SampledJob(6, 0.064F, true, 300), 0.247, 29, 165);
  // The new code's program point, split on two ranks between two names.
  now = WithPoint(now, "(python between aten::argmax and aten::zeros)", 13, {0, 1, 2, 3, 4, 5});
  now = WithPoint(now, "(python between aten::resolve_conj and aten::zeros)", 5, {0, 3});
  Diagnosis d;
  FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kGlobal);
  EXPECT_EQ(f.category, FindingCategory::kHost);  // host grew 18 ms, compute 15
  EXPECT_EQ(f.workers, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.function, "(python between aten::argmax and aten::zeros)");
  EXPECT_EQ(f.location, "/job/train.py:87(run_eval)");  // the deeper of the two new lines
  EXPECT_NEAR(f.impact_s_per_iter, 0.064 * 0.247, 1e-4);
  EXPECT_NE(f.evidence.find("6 of the 6 ranks sampled then and now run /job/train.py:87(run_eval) now, 15.8 ms per "
                            "iteration (median), code their baseline's samples never reached; their host time grew "
                            "+18.0 ms/iter"),
            std::string::npos)
      << f.evidence;
  // What grew most names the category: an added pass of the model's own ops is compute.
  d = {};
  FindNewCodeOnEveryRank(base, Timed(SampledJob(6, 0.064F, true, 300), 0.247, 13, 180), IterationsOnly(219, 247), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kCompute);
  EXPECT_EQ(d.findings[0].function, "(compute code)");
  // New Python whose every rank's ops also slowed on the busy cores: host grew by half the new
  // code's time (+9 of 15.8 ms), compute by more (+45): the host's.
  d = {};
  FindNewCodeOnEveryRank(base, Timed(SampledJob(6, 0.064F, true, 300), 0.247, 20, 195), IterationsOnly(219, 247), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kHost);
}

TEST(NewCodeOnEveryRank, NothingWhereTheLineIsNotTheSlowdownsOrAFindingAlreadyIs) {
  std::vector<WorkerPattern> base = Timed(SampledJob(6, 0, false, 300), 0.219, 11, 150);
  std::vector<WorkerPattern> now = Timed(SampledJob(6, 0.064F, true, 300), 0.247, 29, 165);
  Diagnosis d;
  // Not slower than the baseline by the detector's 5 %.
  FindNewCodeOnEveryRank(base, Timed(SampledJob(6, 0.064F, true, 300), 0.229, 29, 165), IterationsOnly(219, 229), &d);
  EXPECT_TRUE(d.findings.empty());
  // The line alone would not slow the baseline's step by the detector's 5 % (9.9 of 219 ms).
  FindNewCodeOnEveryRank(base, Timed(SampledJob(6, 0.04F, true, 300), 0.247, 29, 165), IterationsOnly(219, 247), &d);
  EXPECT_TRUE(d.findings.empty());
  // On 4 of the 6 ranks only: one rank may lack it in groups of 10 and more, none below.
  std::vector<WorkerPattern> two_without = now;
  two_without[1] = base[1];
  two_without[4] = base[4];
  FindNewCodeOnEveryRank(base, two_without, IterationsOnly(219, 247), &d);
  EXPECT_TRUE(d.findings.empty());
  // The baseline ran it too.
  FindNewCodeOnEveryRank(Timed(SampledJob(6, 0.05F, true, 300), 0.219, 11, 150), now, IterationsOnly(219, 247), &d);
  EXPECT_TRUE(d.findings.empty());
  // A local finding explains the slowdown (all but less than 5 % of the baseline's step), or a
  // global one stands for it already.
  Finding local;
  local.scope = FindingScope::kLocal;
  local.impact_s_per_iter = 0.018;
  d.findings = {local};
  FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
  EXPECT_EQ(d.findings.size(), 1U);
  local.impact_s_per_iter = 0.015;  // half of it: the rest, 13 ms, is the new code's
  d.findings = {local};
  FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_NEAR(d.findings[0].impact_s_per_iter, 0.015, 1e-9);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 0.013, 1e-6);
  d.findings = {GlobalCompute(0.01)};
  FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
  EXPECT_EQ(d.findings.size(), 1U);
  // A cause the baseline's rules found at the new code's line (or its caller's) explains less than
  // half the slowdown: it is still that code's finding, not found twice.
  for (const char* line : {"/job/train.py:87(run_eval)", "/job/train.py:75(main)"}) {
    Finding grown = GlobalCompute(0.01);
    grown.from_baseline = true;
    grown.category = FindingCategory::kHost;
    grown.location = line;
    d.findings = {grown};
    FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
    EXPECT_EQ(d.findings.size(), 1U) << line;
    d.findings[0].location = "/job/other.py:3(f)";  // elsewhere: the new code is found beside it
    FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
    EXPECT_EQ(d.findings.size(), 2U) << line;
  }
  // A local finding that explains less goes after it.
  local.impact_s_per_iter = 0.005;
  d.findings = {local};
  FindNewCodeOnEveryRank(base, now, IterationsOnly(219, 247), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].scope, FindingScope::kGlobal);
}

// A 3-rank session of 0.6 s windows (83 sampling periods, 62 at the baseline): its new call's line
// held 0.084-0.115 of each window, 7-10 periods a rank, each too few alone (a baseline window that
// ran it would miss it with chance 0.013 at 7.8), about 1e-6 together. The deepest new line names
// it; the call's line, with all the new code under it, says what it costs.
TEST(NewCodeOnEveryRank, RanksTooFewSamplesAloneCountTogetherAndTheOutermostLineSaysTheCost) {
  std::vector<WorkerPattern> base = Timed(SampledJob(3, 0, false, 62), 0.087, 10, 60);
  std::vector<WorkerPattern> now = Timed(SampledJob(3, 0.094F, true, 83), 0.119, 26, 70);
  for (WorkerPattern& w : now) w.code_lines[4].share = 0.045F;  // run_eval, under the call's line
  EXPECT_FALSE(MissingLineMeansNeverRan(0.094 * 83, 83, 62));
  Diagnosis d;
  FindNewCodeOnEveryRank(base, now, IterationsOnly(87, 119), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].location, "/job/train.py:87(run_eval)");
  EXPECT_NEAR(d.findings[0].impact_s_per_iter, 0.094 * 0.119, 1e-4);
  EXPECT_NE(d.findings[0].evidence.find("run /job/train.py:87(run_eval) (deepest; 5.4 ms there), under "
                                        "/job/train.py:75(main) now, 11.2 ms per iteration (median)"),
            std::string::npos)
      << d.findings[0].evidence;
}

// A 3-rank session the detector started at 94 -> 106 ms a step (its windows, unprofiled): the
// baseline's profiled window had run 126 ms, as the session's did, so the windows alone showed no
// slowdown; every rank's new call's line held 0.072-0.095 of its window.
TEST(NewCodeOnEveryRank, TheDetectorsSlowdownCountsWhereTwoProfiledWindowsHideIt) {
  std::vector<WorkerPattern> base = Timed(SampledJob(3, 0, false, 90), 0.126, 10, 80);
  std::vector<WorkerPattern> now = Timed(SampledJob(3, 0.08F, true, 90), 0.126, 21, 75);
  Diagnosis d;
  FindNewCodeOnEveryRank(base, now, IterationsOnly(126, 126.4), &d);
  EXPECT_TRUE(d.findings.empty());
  BaselineOptions detected;
  detected.detected_slowdown_ms = 11.5;
  FindNewCodeOnEveryRank(base, now, IterationsOnly(126, 126.4), &d, detected);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_NEAR(d.findings[0].impact_s_per_iter, 0.08 * 0.126, 1e-4);
  EXPECT_NE(d.findings[0].evidence.find("of the 11.5 ms/iter slowdown (iteration 126.0 ms at the baseline, 126.4 ms "
                                        "now in profiled windows; unprofiled, the detector's window ran 11.5 ms/iter "
                                        "above its best)"),
            std::string::npos)
      << d.findings[0].evidence;
}

// An unseen 5-rank forecaster whose rank 3 got a 35 % CPU quota after its baseline (2 busy cores):
// 261.7 -> 535.1 ms a step, rank 3 throttled 0.31 of its window, its peers waiting for it; named
// `local compute rank 3` at 94 ms a step, a third of the slowdown. The window also held the job's
// evaluation pass, new code on every rank at 26 ms. The quota's rank costs more and its slower ops
// are its quota's, not the node's: it comes first. The same finding on a rank no quota held is
// what the new code's taken cores may have caused: behind it, read with care.
TEST(NewCodeOnEveryRank, ARankItsQuotaHeldBackIsNoSymptomOfTheNewCodeAndGoesByCost) {
  auto busy = [](std::vector<WorkerPattern> job, float throttled_rank3) {
    for (WorkerPattern& w : job) w.cpu = CpuShare{.cpus = 2, .host_busy = 0.97f, .throttled = 0};
    job[3].cpu->throttled = throttled_rank3;
    return job;
  };
  std::vector<WorkerPattern> base = busy(Timed(SampledJob(6, 0, false, 300), 0.219, 11, 150), 0);
  Finding quota;
  quota.scope = FindingScope::kLocal;
  quota.category = FindingCategory::kCompute;
  quota.workers = {3};
  quota.function = "aten::mm";
  quota.impact_s_per_iter = 0.018;  // under half the 41 ms slowdown, over the new code's 15.8
  quota.evidence = "rank 3: its CPU quota held it back 0.31 of the window";
  Diagnosis d;
  d.findings = {quota};
  FindNewCodeOnEveryRank(base, busy(Timed(SampledJob(6, 0.064F, true, 300), 0.247, 29, 165), 0.31f),
                         IterationsOnly(219, 260), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[1].scope, FindingScope::kGlobal);  // 15.8 ms
  EXPECT_EQ(d.findings[0].evidence, quota.evidence);      // no "read with care"
  d.findings = {quota};
  FindNewCodeOnEveryRank(base, busy(Timed(SampledJob(6, 0.064F, true, 300), 0.247, 29, 165), 0),
                         IterationsOnly(219, 260), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].scope, FindingScope::kGlobal);
  EXPECT_NE(d.findings[1].evidence.find("read with care: every rank's new code took the busy cores"),
            std::string::npos);
}

}  // namespace
}  // namespace eroica
