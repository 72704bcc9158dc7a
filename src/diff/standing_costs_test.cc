#include "diff/standing_costs.h"

#include <gtest/gtest.h>

#include "diff/baseline_findings.h"
#include "diff/diff_test_util.h"

namespace eroica {
namespace {

// Every rank's loader 20 ms of a 120 ms step at the baseline; `loader_now` ms now, and rank 3's
// `rank3_loader_now` where given.
std::vector<WorkerPattern> WithLoader(double loader_ms, double rank3_loader_ms = -1) {
  return JobWith(4, [&](int r) {
    return FunctionMs{
        {"enumerate(DataLoader)", Category::kDataloader, r == 3 && rank3_loader_ms >= 0 ? rank3_loader_ms : loader_ms}};
  });
}

Finding GlobalLoader(double impact_ms) {
  Finding f;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategory::kDataloader;
  f.workers = {0, 1, 2, 3};
  f.function = "enumerate(DataLoader)";
  f.impact_s_per_iter = impact_ms / 1e3;
  f.evidence = "4 of 4 workers spend β 0.17 of each iteration in dataloader (expected at most 0.10)";
  return f;
}

Finding LocalLoader(int rank, double impact_ms) {
  Finding f = GlobalLoader(impact_ms);
  f.scope = FindingScope::kLocal;
  f.workers = {rank};
  return f;
}

// An unseen recommender whose every rank built its batches in the training process: its loader
// over the box at the baseline and in every later window. Against the baseline that is a cost the
// job already had; what changed (here rank 3's loader) leads.
TEST(StandingCosts, ALoaderOverItsBoxAtTheBaselineTooIsAStandingCostAndFollowsWhatChanged) {
  std::vector<WorkerPattern> base = WithLoader(20);
  std::vector<WorkerPattern> now = WithLoader(22, 60);
  Diagnosis d;
  d.findings = {GlobalLoader(8), LocalLoader(3, 38)};  // the standing one first, as by impact it may be
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  PutStandingCostsLast(&d);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].scope, FindingScope::kLocal) << d.findings[0].evidence;
  EXPECT_FALSE(d.findings[0].standing);
  EXPECT_EQ(d.findings[1].scope, FindingScope::kGlobal);
  EXPECT_TRUE(d.findings[1].standing);
  EXPECT_NE(d.findings[1].evidence.find("as at the baseline (dataloader 0.17 of the step then"), std::string::npos)
      << d.findings[1].evidence;
}

// The standing test above, made with every rank's training thread sampled: `line` among the
// lines of each rank's window (`share` of it), over 150 sampling periods.
void SampleLines(std::vector<WorkerPattern>* job, const char* line, double share) {
  for (WorkerPattern& w : *job) {
    w.code_line_periods = 150;
    w.code_lines.push_back({.location = "train.py:20(main)", .share = 0.9f});
    w.code_lines.push_back({.location = "train.py:30(main)", .share = 0.5f});
    if (line != nullptr) w.code_lines.push_back({.location = line, .share = static_cast<float>(share)});
  }
}

// Every rank's loader at its baseline's share, at a line the baseline never ran: new code, no
// standing cost (a second fault that lengthens the step dilutes a new cost's share).
TEST(StandingCosts, CodeTheBaselineNeverRanIsNoCostItHad) {
  std::vector<WorkerPattern> base = WithLoader(20);
  std::vector<WorkerPattern> now = WithLoader(22);
  SampleLines(&base, nullptr, 0);
  SampleLines(&now, "train.py:40(collate)", 0.15);
  Finding loader = GlobalLoader(8);
  loader.location = "train.py:40(collate)";
  Diagnosis d;
  d.findings = {loader};
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  EXPECT_FALSE(d.findings[0].standing) << d.findings[0].evidence;
  // The same line sampled at the baseline too: the cost it had.
  SampleLines(&base, "train.py:40(collate)", 0.14);
  d.findings = {loader};
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  EXPECT_TRUE(d.findings[0].standing);
}

// Marking alone keeps the order; PutStandingCostsLast moves it.
TEST(StandingCosts, MarkingAloneKeepsTheOrder) {
  std::vector<WorkerPattern> base = WithLoader(20);
  std::vector<WorkerPattern> now = WithLoader(21);
  Diagnosis d;
  d.findings = {GlobalLoader(8)};
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_TRUE(d.findings[0].standing);
}

// The loader grew by more than half the finding's cost since the baseline: what changed.
TEST(StandingCosts, ACostThatGrewSinceTheBaselineIsNotStanding) {
  std::vector<WorkerPattern> base = WithLoader(5);
  std::vector<WorkerPattern> now = WithLoader(25);
  Diagnosis d;
  d.findings = {GlobalLoader(10)};
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  EXPECT_FALSE(d.findings[0].standing) << d.findings[0].evidence;
}

// A function the baseline never ran is what changed, whatever its category's share did (a 5-rank
// ViT's new gc.collect, 386 ms a step in a step that grew from 519 ms).
TEST(StandingCosts, AFunctionTheBaselineNeverRanIsNotStanding) {
  std::vector<WorkerPattern> base = WithLoader(20);
  std::vector<WorkerPattern> now = WithLoader(21);
  PatternDiff diff = DiffPatterns(base, now);
  Diagnosis d;
  d.findings = {GlobalLoader(8)};
  MarkStandingCosts(base, now, diff, &d);
  ASSERT_TRUE(d.findings[0].standing);  // the same share then and now
  PatternChange appeared;
  appeared.function = "enumerate(DataLoader)";
  appeared.category = Category::kDataloader;
  appeared.kind = ChangeKind::kAppeared;
  diff.functions.push_back(appeared);
  d.findings = {GlobalLoader(8)};
  MarkStandingCosts(base, now, diff, &d);
  EXPECT_FALSE(d.findings[0].standing) << d.findings[0].evidence;
}

// The baseline's window ran 40 ms a step slower elsewhere (a first profiled window): the loader's
// 20 ms, 0.125 of that step, are 0.17 of the faster step now at 21 ms. Where the job runs no
// slower than at the baseline the loader's time a step says it did not grow; where the job got
// slower, the share's growth stands.
TEST(StandingCosts, AShareThatGrewOnlyAsTheRestOfTheStepShrankIsStanding) {
  auto job = [](double loader_ms, double other_host_ms) {
    return JobWith(4, [&](int) {
      return FunctionMs{{"enumerate(DataLoader)", Category::kDataloader, loader_ms},
                        {"(python elsewhere)", Category::kHost, other_host_ms}};
    });
  };
  std::vector<WorkerPattern> base = job(20, 40);
  Diagnosis faster;
  faster.findings = {GlobalLoader(8)};
  MarkStandingCosts(base, job(21, 0), DiffPatterns(base, job(21, 0)), &faster);
  EXPECT_TRUE(faster.findings[0].standing);
  EXPECT_NE(faster.findings[0].evidence.find("20.1 and 21.1 ms a step"), std::string::npos)
      << faster.findings[0].evidence;
  // The same loader share now in a step slower than the baseline's.
  Diagnosis slower;
  slower.findings = {GlobalLoader(8)};
  MarkStandingCosts(base, job(30, 50), DiffPatterns(base, job(30, 50)), &slower);
  EXPECT_FALSE(slower.findings[0].standing) << slower.findings[0].evidence;
}

// A rank that already stood out by as much at the baseline is standing; one that did not is not.
// Findings the baseline rules made are never marked, nor imbalance.
TEST(StandingCosts, ALocalCostIsStandingWhereItsRankStoodOutAsMuchAtTheBaseline) {
  std::vector<WorkerPattern> base = WithLoader(10, 40);
  std::vector<WorkerPattern> now = WithLoader(10, 45);
  Diagnosis d;
  d.findings = {LocalLoader(3, 30)};
  Finding made = GlobalLoader(5);
  made.from_baseline = true;
  d.findings.push_back(made);
  Finding imbalance = LocalLoader(3, 30);
  imbalance.category = FindingCategory::kImbalance;
  d.findings.push_back(imbalance);
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_TRUE(d.findings[0].standing) << d.findings[0].evidence;
  EXPECT_FALSE(d.findings[1].standing);  // the baseline rules'
  EXPECT_FALSE(d.findings[2].standing);  // imbalance
  PutStandingCostsLast(&d);
  EXPECT_EQ(d.findings[2].category, FindingCategory::kDataloader);
  EXPECT_TRUE(d.findings[2].standing);

  std::vector<WorkerPattern> fresh = WithLoader(10, 45);
  std::vector<WorkerPattern> healthy = WithLoader(10);
  Diagnosis d2;
  d2.findings = {LocalLoader(3, 30)};
  MarkStandingCosts(healthy, fresh, DiffPatterns(healthy, fresh), &d2);
  EXPECT_FALSE(d2.findings[0].standing);
}

// A rank's loader workers that keep up by taking cores cost what they take: standing only where
// they took as much at the baseline, whatever the rank's wait for them did. An unseen 3-rank job
// whose rank 1's jitter ran Python passes in its 2 workers: 0.78 cores against its peers' 0.09 now,
// like theirs at the baseline, its wait +0.02 of the step over its peers' then and +0.04 now.
TEST(StandingCosts, ALoaderWhoseWorkersTookCoresOnlyNowIsNotStanding) {
  auto workers = [](std::vector<WorkerPattern> job, float rank3_cores) {
    for (WorkerPattern& w : job) {
      w.cpu = CpuShare{.cpus = 2, .loader_cpu = w.rank == 3 ? rank3_cores : 0.09f};
      w.cpu->loader_making = 0.3f;
    }
    return job;
  };
  auto standing = [](const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now) {
    Diagnosis d;
    d.findings = {LocalLoader(3, 30)};
    MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
    return d.findings[0].standing;
  };
  // Its wait over its peers' as large then as now (standing by the wait alone).
  EXPECT_FALSE(standing(workers(WithLoader(10, 40), 0.09f), workers(WithLoader(10, 45), 0.78f)));
  EXPECT_TRUE(standing(workers(WithLoader(10, 40), 0.75f), workers(WithLoader(10, 45), 0.78f)));
}

// A quota that holds the rank back now and did not at the baseline is new, whatever the rank's
// excess then: m-quota1's rank 1 (5 ranks on 2 cores, a 45 % quota after the baseline).
TEST(StandingCosts, AFindingOnARankANewQuotaHoldsBackIsNotStanding) {
  auto throttled = [](std::vector<WorkerPattern> job, double share) {
    for (WorkerPattern& w : job) {
      w.cpu = CpuShare{};
      w.cpu->throttled = static_cast<float>(w.rank == 3 ? share : 0.0);
    }
    return job;
  };
  auto standing = [](const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now) {
    Diagnosis d;
    d.findings = {LocalLoader(3, 30)};  // the category its excess is in; a quota's may be any
    MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
    return d.findings[0].standing;
  };
  // Its excess then as large as now (as in the test above), throttled 0.10 of the window now.
  EXPECT_FALSE(standing(throttled(WithLoader(10, 40), 0.0), throttled(WithLoader(10, 45), 0.10)));
  // Held back as long at the baseline: standing, as before.
  EXPECT_TRUE(standing(throttled(WithLoader(10, 40), 0.10), throttled(WithLoader(10, 45), 0.10)));
}

// A standing cost stands for no slowdown: the rules against the baseline look past it.
TEST(StandingCosts, AStandingCostLeavesTheSlowdownUnexplained) {
  Diagnosis d;
  d.findings = {GlobalLoader(8)};
  EXPECT_EQ(UnexplainedSlowdownMs(IterationsOnly(68, 82), d, {}, {}), 0);
  d.findings[0].standing = true;
  EXPECT_NEAR(UnexplainedSlowdownMs(IterationsOnly(68, 82), d, {}, {}), 14, 1e-9);
}

// An unseen 5-rank mixture of experts whose rank 2 had 2.2x the batch, named as host time (calls
// of its own) at 0.35 of the step here, its excess in its ops: its host share a little above its
// peers' then and now says nothing of that cost. Its own work (all but waiting) then, level with
// its peers', is what is compared: no cost the job already had.
TEST(StandingCosts, AFindingWhoseCostIsItsOwnWorkInAllIsComparedByItsOwnWork) {
  std::vector<WorkerPattern> base = JobWith(4, [](int r) {
    return FunctionMs{{"(own python)", Category::kHost, r == 2 ? 3.0 : 1.5}};
  });
  std::vector<WorkerPattern> now = JobWith(4, [](int r) {
    if (r == 2) return FunctionMs{{"(own python)", Category::kHost, 3.0}, {"aten::bmm", Category::kCompute, 60}};
    return FunctionMs{{"(own python)", Category::kHost, 1.5}, {"gloo:wait", Category::kCommunication, 60}};
  });
  Finding own_calls = FindingOf(FindingScope::kLocal, FindingCategory::kHost, {2}, 0.057);
  Diagnosis d;
  d.findings = {own_calls};
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  EXPECT_FALSE(d.findings[0].standing) << d.findings[0].evidence;
  // Its own work over its peers' at the baseline too: standing, by that measure.
  base = JobWith(4, [](int r) {
    if (r == 2) return FunctionMs{{"(own python)", Category::kHost, 3.0}, {"aten::bmm", Category::kCompute, 60}};
    return FunctionMs{{"(own python)", Category::kHost, 1.5}, {"gloo:wait", Category::kCommunication, 60}};
  });
  d.findings = {own_calls};
  MarkStandingCosts(base, now, DiffPatterns(base, now), &d);
  EXPECT_TRUE(d.findings[0].standing);
  EXPECT_NE(d.findings[0].evidence.find("as at the baseline (its own work +0.3"), std::string::npos)
      << d.findings[0].evidence;
}

}  // namespace
}  // namespace eroica
