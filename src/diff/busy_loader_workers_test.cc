#include "diff/busy_loader_workers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diff/diff_test_util.h"

namespace eroica {
namespace {

// `n` ranks on one 2-core host, each step `iteration_s` with `compute_ms` of compute, its
// DataLoader workers using `loader_cores` of a core, the node `busy` (0..1).
std::vector<WorkerPattern> LoaderJob(int n, double iteration_s, double compute_ms, float loader_cores,
                                     float busy = 0.98f) {
  std::vector<WorkerPattern> job;
  for (int r = 0; r < n; ++r) {
    WorkerPattern w;
    w.rank = r;
    w.host = "node-a";
    w.iteration_s = iteration_s;
    w.category_beta[static_cast<size_t>(Category::kCompute)] = compute_ms / 1e3 / iteration_s;
    w.category_beta[static_cast<size_t>(Category::kDataloader)] = 0.05;
    FunctionPattern loader;
    loader.name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
    loader.category = Category::kDataloader;
    loader.beta = 0.05;
    w.functions.push_back(loader);
    w.cpu = CpuShare{.cpus = 2, .host_busy = busy, .process_cpu = 0.34f, .run_delay = 0.8f, .loader_cpu = loader_cores};
    w.loader_worker_frames = {{"/job/data.py:53(__getitem__)", 0.6F}};
    job.push_back(w);
  }
  return job;
}

// The diagnosis after the rule, of a window whose one finding was `rank`'s wait for its batches
// (`local dataloader`, `impact_s` a step).
Diagnosis AfterALoaderWait(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now, int rank,
                           double impact_s, const PatternDiff& diff) {
  Finding wait;
  wait.scope = FindingScope::kLocal;
  wait.category = FindingCategory::kDataloader;
  wait.workers = {rank};
  wait.impact_s_per_iter = impact_s;
  Diagnosis d;
  d.findings = {wait};
  FindLoaderWorkersTakingCores(base, now, diff, &d);
  return d;
}

// An unseen 4-rank audio job on 2 cores, 2 workers a rank, whose every rank's dataset began
// masking time bands in Python: 169 -> 250 ms a step, every rank's workers 2.8-4.3 -> 19.3-21.6 ms
// of CPU a step on cores 98 % busy, training's wait for batches unchanged (0.03-0.07 of a step),
// its compute 127 -> 204 ms. Peers alike, no per-function change on most ranks: `healthy`.
TEST(LoaderWorkersTakingCores, EveryRanksWorkersUsingMoreCpuOnBusyCoresIsAGlobalDataloaderFinding) {
  std::vector<WorkerPattern> before = LoaderJob(4, 0.169, 127, 0.022f);
  for (WorkerPattern& w : before) w.loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.7F}};  // the decode
  Diagnosis d;
  FindLoaderWorkersTakingCores(before, LoaderJob(4, 0.250, 204, 0.083f), IterationsOnly(169, 250), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kGlobal);
  EXPECT_EQ(f.category, FindingCategory::kDataloader);
  EXPECT_EQ(f.workers, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f.function, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  EXPECT_EQ(f.location, "/job/data.py:53(__getitem__)");
  // 4 ranks x (20.75 - 3.72) ms over 2 cores.
  EXPECT_NEAR(f.impact_s_per_iter, 4 * (0.083 * 250 - 0.022 * 169) / 2 / 1e3, 1e-4);
  EXPECT_NE(
      f.evidence.find("the DataLoader workers of 4 of the 4 ranks read at both times use 20.7 ms of CPU per "
                      "iteration (median), 3.7 ms at the baseline (+17.0); their nodes' cores were busy 98% of "
                      "the window, so that time came from the training threads, whose compute grew +77.0 ms/iter"),
      std::string::npos)
      << f.evidence;
  EXPECT_NE(f.action.find("(their hottest code: /job/data.py:53(__getitem__))"), std::string::npos);
  // The masking loop's lines, listed by most ranks, over the decode that was hot at the baseline too.
  std::vector<WorkerPattern> base = LoaderJob(4, 0.169, 127, 0.022f), now = LoaderJob(4, 0.250, 204, 0.083f);
  for (WorkerPattern& w : base) w.loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.7F}};
  now[0].loader_worker_frames = {{"/job/data.py:54(__getitem__)", 0.23F}, {"/job/data.py:52(__getitem__)", 0.21F}};
  now[1].loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.3F}, {"/job/data.py:52(__getitem__)", 0.18F}};
  now[2].loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.3F}, {"/job/data.py:54(__getitem__)", 0.17F}};
  now[3].loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.3F}, {"/job/data.py:52(__getitem__)", 0.22F}};
  d = {};
  FindLoaderWorkersTakingCores(base, now, IterationsOnly(169, 250), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].location, "/job/data.py:52(__getitem__)");
  // Listed by every rank but hot at the baseline too, new on none: not the work that grew.
  std::vector<WorkerPattern> stale = now;
  for (WorkerPattern& w : stale) w.loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.3F}};
  stale[0].loader_worker_frames.push_back({"/job/data.py:54(__getitem__)", 0.2F});
  stale[1].loader_worker_frames.push_back({"/job/data.py:54(__getitem__)", 0.2F});
  d = {};
  FindLoaderWorkersTakingCores(base, stale, IterationsOnly(169, 250), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].location, "");
  // New lines on no majority: no location, rather than the decode that was hot then too.
  now[3].loader_worker_frames = {{"/job/data.py:44(__getitem__)", 0.3F}, {"/job/data.py:48(__getitem__)", 0.22F}};
  d = {};
  FindLoaderWorkersTakingCores(base, now, IterationsOnly(169, 250), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].location, "");
}

TEST(LoaderWorkersTakingCores, NothingWhereTheWorkersKeptTheirCpuHadIdleCoresOrAreOneRanks) {
  const std::vector<WorkerPattern> base = LoaderJob(4, 0.169, 127, 0.022f);
  Diagnosis d;
  // Healthy sessions against their baselines moved by -2.6 to +1.1 ms a step.
  FindLoaderWorkersTakingCores(base, LoaderJob(4, 0.250, 204, 0.024f), IterationsOnly(169, 250), &d);
  EXPECT_TRUE(d.findings.empty());
  // An idle core: the workers' time need not have come from training.
  FindLoaderWorkersTakingCores(base, LoaderJob(4, 0.250, 204, 0.083f, 0.70f), IterationsOnly(169, 250), &d);
  EXPECT_TRUE(d.findings.empty());
  // One rank's workers (a local fault: the peers' analysis is for it).
  std::vector<WorkerPattern> one = LoaderJob(4, 0.188, 140, 0.022f);
  one[2].cpu->loader_cpu = 0.08f;
  FindLoaderWorkersTakingCores(base, one, IterationsOnly(169, 188), &d);
  EXPECT_TRUE(d.findings.empty());
  // Not slower than the baseline by the detector's 5 %.
  FindLoaderWorkersTakingCores(base, LoaderJob(4, 0.175, 130, 0.083f), IterationsOnly(169, 175), &d);
  EXPECT_TRUE(d.findings.empty());
  // Without loader workers read at the baseline.
  std::vector<WorkerPattern> unread = base;
  for (WorkerPattern& w : unread) w.cpu->loader_cpu = 0;
  FindLoaderWorkersTakingCores(unread, LoaderJob(4, 0.250, 204, 0.083f), IterationsOnly(169, 250), &d);
  EXPECT_TRUE(d.findings.empty());
  // A hang stands for the slowdown.
  Finding hang;
  hang.scope = FindingScope::kGlobal;
  hang.category = FindingCategory::kHang;
  d.findings = {hang};
  FindLoaderWorkersTakingCores(base, LoaderJob(4, 0.250, 204, 0.083f), IterationsOnly(169, 250), &d);
  EXPECT_EQ(d.findings.size(), 1U);
  // A window's global finding stands for it too (UnexplainedSlowdownMs), but not for the cores the
  // workers took, measured on their own: both are named, the costlier first.
  Finding global;
  global.scope = FindingScope::kGlobal;
  global.category = FindingCategory::kHost;
  global.impact_s_per_iter = 0.060;
  d.findings = {global};
  FindLoaderWorkersTakingCores(base, LoaderJob(4, 0.250, 204, 0.083f), IterationsOnly(169, 250), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kHost);
  EXPECT_EQ(d.findings[1].category, FindingCategory::kDataloader);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 4 * (0.083 * 250 - 0.022 * 169) / 2 / 1e3, 1e-4);
}

// The same audio job's online session (the detector's own, 141 -> 248 ms a step): its baseline's
// comparison named `global compute` (aten::mm 0.90 -> 1.67 ms a call on 2 of 4 ranks, every rank's
// compute +83 ms), the symptom of the cores its workers took (+9.1-10.3 ms of CPU a step each).
TEST(LoaderWorkersTakingCores, OpsSlowerOnEveryRankOnBusyCoresAreTheirSymptomNotTheCause) {
  Finding slower_ops;  // the baseline's own (ApplyBaseline's)
  slower_ops.from_baseline = true;
  slower_ops.scope = FindingScope::kGlobal;
  slower_ops.category = FindingCategory::kCompute;
  slower_ops.function = "aten::mm";
  slower_ops.impact_s_per_iter = 0.052;
  slower_ops.evidence = "against the baseline: 2 of 4 ranks' aten::mm takes 1.67 ms per call, 0.90 ms at the baseline";
  Finding local;  // the peers' own finding stays
  local.scope = FindingScope::kLocal;
  local.category = FindingCategory::kHost;
  local.impact_s_per_iter = 0.005;
  Diagnosis d;
  d.findings = {slower_ops, local};
  FindLoaderWorkersTakingCores(LoaderJob(4, 0.141, 100, 0.021f), LoaderJob(4, 0.248, 183, 0.052f),
                               IterationsOnly(141, 248), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kDataloader);
  EXPECT_NE(d.findings[0].evidence.find("; every rank's ops ran slower beside it on the cores it took (compute "
                                        "aten::mm: 2 of 4 ranks' aten::mm takes 1.67 ms per call"),
            std::string::npos)
      << d.findings[0].evidence;
  EXPECT_EQ(d.findings[1].scope, FindingScope::kLocal);
  EXPECT_EQ(d.findings[1].evidence, "");  // a host finding of its own: nothing to say
  // A rank named by its ops' speed does not stand for the slowdown there, and says why.
  Finding by_ops;
  by_ops.scope = FindingScope::kLocal;
  by_ops.category = FindingCategory::kImbalance;
  by_ops.workers = {2};
  by_ops.impact_s_per_iter = 0.059;
  d.findings = {by_ops};
  FindLoaderWorkersTakingCores(LoaderJob(4, 0.141, 100, 0.021f), LoaderJob(4, 0.248, 183, 0.052f),
                               IterationsOnly(141, 248), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kDataloader);
  EXPECT_NE(d.findings[1].evidence.find("read with care: every rank's DataLoader workers took the busy cores"),
            std::string::npos);
  // New code on every rank (an added pass of the model's ops) is a cause, not a symptom: it stays,
  // first (it costs more), and what the workers took of the rest comes after it.
  Finding new_code = slower_ops;
  new_code.evidence =
      "against the baseline: 4 of the 4 ranks sampled then and now run eval.py:12(run) now, 30.0 ms "
      "per iteration (median), code their baseline's samples never reached";
  d.findings = {new_code};
  FindLoaderWorkersTakingCores(LoaderJob(4, 0.141, 100, 0.021f), LoaderJob(4, 0.248, 183, 0.052f),
                               IterationsOnly(141, 248), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].evidence, new_code.evidence);
  EXPECT_EQ(d.findings[1].category, FindingCategory::kDataloader);
  // New code that claims all but 5 ms (under a slowdown's 7 ms) leaves the workers' taken cores
  // their own measure, held to the whole slowdown (busy_loader_workers.h).
  new_code.impact_s_per_iter = 0.102;
  d.findings = {new_code};
  FindLoaderWorkersTakingCores(LoaderJob(4, 0.141, 100, 0.021f), LoaderJob(4, 0.248, 183, 0.052f),
                               IterationsOnly(141, 248), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[1].category, FindingCategory::kDataloader);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 4 * (0.052 * 248 - 0.021 * 141) / 2 / 1e3, 1e-4);
  // With a core idle the ops' finding stands: nothing says what else took the processor.
  d.findings = {slower_ops};
  FindLoaderWorkersTakingCores(LoaderJob(4, 0.141, 100, 0.021f), LoaderJob(4, 0.248, 183, 0.052f, 0.6f),
                               IterationsOnly(141, 248), &d);
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kCompute);
}

// An unseen 5-rank recommender whose every rank hashed its ids in one worker each on 2 cores: 172
// -> 310 ms a step, every rank's workers +51 to +59 ms of CPU a step; rank 1 waited 0.61 of its
// step for batches against its peers' 0.30, +98.5 ms, named `local dataloader` by its peers. Its
// workers grew like the others': its turn, folded into the global finding. A rank whose workers
// grew by far more than the others' keeps its own finding beside it.
TEST(LoaderWorkersTakingCores, OneRanksLongestWaitIsItsTurnWhereItsWorkersGrewLikeEveryRanks) {
  const std::vector<WorkerPattern> base = LoaderJob(5, 0.172, 100, 0.035f, 0.98f);
  std::vector<WorkerPattern> now = LoaderJob(5, 0.310, 116, 0.20f, 1.0f);
  now[1].cpu->loader_cpu = 0.21f;
  Diagnosis d = AfterALoaderWait(base, now, 1, 0.0985, IterationsOnly(172.5, 310));
  ASSERT_EQ(d.findings.size(), 1U) << d.findings[1].evidence;
  EXPECT_EQ(d.findings[0].scope, FindingScope::kGlobal);
  EXPECT_NE(d.findings[0].evidence.find("rank 1 waited longest for its batches in this window (98.5 ms/iter over its "
                                        "peers), its workers' CPU grown +59.1 ms/iter against the others' +56.0 "
                                        "(median), more of it shared than its own: its turn"),
            std::string::npos)
      << d.findings[0].evidence;
  // Its workers did more than twice the others' added work: its own wait, named first; what the
  // others' workers took of the cores explains the 39 ms it leaves.
  now[1].cpu->loader_cpu = 0.40f;
  d = AfterALoaderWait(base, now, 1, 0.0985, IterationsOnly(172.5, 310));
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].scope, FindingScope::kLocal);
  EXPECT_EQ(d.findings[1].scope, FindingScope::kGlobal);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, (137.5 - 98.5) / 1e3, 1e-4);
}

// An unseen 5-rank contrastive job (one loader worker a rank, 2 cores) whose every rank's colour
// jitter began running Python passes: 226 -> 470 ms a step, every rank's workers +82 to +119 ms of
// CPU a step, rank 0's 1.34 times the others' median; rank 0 waited 0.29 of its step for batches
// (+128.9 ms over its peers) and was named `local dataloader`. Most of its growth is every rank's:
// its turn. Where the others' workers grew by less than half of its own, the wait is its own.
TEST(LoaderWorkersTakingCores, ARankWhoseWorkersGrewMostlyAsEveryRanksWaitsByItsTurn) {
  const std::vector<WorkerPattern> base = LoaderJob(5, 0.226, 170, 0.08f, 0.96f);
  std::vector<WorkerPattern> now = LoaderJob(5, 0.4705, 250, 0.22f, 1.0f);
  now[0].cpu->loader_cpu = 0.296f;  // 139.3 ms against the others' 103.5: +121.2 against +85.4
  Diagnosis d = AfterALoaderWait(base, now, 0, 0.1289, IterationsOnly(226.1, 470.5));
  ASSERT_EQ(d.findings.size(), 1U) << d.findings[1].evidence;
  EXPECT_EQ(d.findings[0].scope, FindingScope::kGlobal);
  EXPECT_EQ(d.findings[0].workers, (std::vector<int>{0, 1, 2, 3, 4}));
  now[0].cpu->loader_cpu = 0.45f;  // +193.7 against +85.4: more its own than shared
  d = AfterALoaderWait(base, now, 0, 0.1289, IterationsOnly(226.1, 470.5));
  EXPECT_EQ(d.findings[0].scope, FindingScope::kLocal);
}

// A 6-rank session against a baseline whose profiled window ran 420 ms a step (the job's first,
// the profiler's costliest; the job ran 200-260): its workers +8.3-14.6 ms a step each, one under
// 2 % of 420 ms, all above 2 % of the session's 326 ms. Bars are shares of the faster window's step.
TEST(LoaderWorkersTakingCores, BarsAreSharesOfTheFasterWindowsStep) {
  std::vector<WorkerPattern> base = LoaderJob(6, 0.420, 300, 0.0125f), now = LoaderJob(6, 0.326, 240, 0.0565f);
  now[5].cpu->loader_cpu = 0.0416f;  // 13.6 ms against 5.25: +8.3 ms
  Diagnosis d;
  FindLoaderWorkersTakingCores(base, now, IterationsOnly(420, 326), &d, [] {
    BaselineOptions detected;
    detected.detected_slowdown_ms = 37.7;  // the detector's 202 -> 240 ms
    return detected;
  }());
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].workers.size(), 6U);
}

// An unseen forecaster job's 5-rank session (one loader worker a rank, 2 cores): every rank's
// dataset began smoothing each window in Python, 235.6 -> 337.5 ms a step, its workers 0.01 -> 0.07
// of a core, compute 153 -> 233 ms. Its window also held the job's evaluation pass (once in 40
// steps, not in the baseline's window), found first as new code on every rank, 19.0 ms a step: a
// cause the baseline's rules measured that explains less than half the slowdown leaves the rest to
// find, and what it explains is not found twice; the most costly comes first.
TEST(LoaderWorkersTakingCores, APartlyExplainedSlowdownLeavesTheRestToFindMostCostlyFirst) {
  auto new_code = [](double impact_s) {
    Finding f;
    f.from_baseline = true;
    f.scope = FindingScope::kGlobal;
    f.category = FindingCategory::kHost;
    f.workers = {0, 1, 2, 3, 4};
    f.location = "/job/train.py:119(main)";
    f.impact_s_per_iter = impact_s;
    f.evidence = std::string(kNewCodeEvidence);
    return f;
  };
  const std::vector<WorkerPattern> base = LoaderJob(5, 0.2356, 153, 0.01f);
  Diagnosis d;
  d.findings = {new_code(0.019)};
  FindLoaderWorkersTakingCores(base, LoaderJob(5, 0.3375, 233, 0.07f), IterationsOnly(235.6, 337.5), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kDataloader);
  // 5 ranks x (23.6 - 2.4) ms over 2 cores, within the 82.9 ms the evaluation pass leaves.
  EXPECT_NEAR(d.findings[0].impact_s_per_iter, 5 * (0.07 * 337.5 - 0.01 * 235.6) / 2 / 1e3, 1e-4);
  EXPECT_EQ(d.findings[1].location, "/job/train.py:119(main)");
  EXPECT_NE(d.findings[0].evidence.find("of the 82.9 ms/iter slowdown on the busiest node's cores (what the other "
                                        "findings leave of a 101.9 ms/iter slowdown; iteration 235.6 ms"),
            std::string::npos)
      << d.findings[0].evidence;
  // The workers' added CPU took less than the new code: it goes second, held to what is left.
  d.findings = {new_code(0.045)};
  FindLoaderWorkersTakingCores(base, LoaderJob(5, 0.3375, 233, 0.04f), IterationsOnly(235.6, 337.5), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kHost);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 5 * (0.04 * 337.5 - 0.01 * 235.6) / 2 / 1e3, 1e-4);
  // Every rank's loader named already (a baseline rule's, explaining less): not found twice.
  Finding loader = new_code(0.019);
  loader.category = FindingCategory::kDataloader;
  loader.evidence = "against the baseline: every rank's enumerate(DataLoader) grew";
  d.findings = {loader};
  FindLoaderWorkersTakingCores(base, LoaderJob(5, 0.3375, 233, 0.07f), IterationsOnly(235.6, 337.5), &d);
  EXPECT_EQ(d.findings.size(), 1U);
  // A cause that explains all but less than a slowdown's worth (5 % of the baseline's 235.6 ms
  // step) leaves the workers held to the whole slowdown; one that explains half leaves them the
  // other half.
  d.findings = {new_code(0.092)};
  FindLoaderWorkersTakingCores(base, LoaderJob(5, 0.3375, 233, 0.07f), IterationsOnly(235.6, 337.5), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 5 * (0.07 * 337.5 - 0.01 * 235.6) / 2 / 1e3, 1e-4);
  EXPECT_NE(d.findings[1].evidence.find("ms/iter of the 101.9 ms/iter slowdown on the busiest node's cores "
                                        "(iteration 235.6 ms"),
            std::string::npos)
      << d.findings[1].evidence;
  d.findings = {new_code(0.051)};
  FindLoaderWorkersTakingCores(base, LoaderJob(5, 0.3375, 233, 0.07f), IterationsOnly(235.6, 337.5), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, (101.9 - 51) / 1e3, 1e-4);
  d.findings = {new_code(0.045), new_code(0.045)};  // what they leave is less than the workers took
  FindLoaderWorkersTakingCores(base, LoaderJob(5, 0.3375, 233, 0.07f), IterationsOnly(235.6, 337.5), &d);
  ASSERT_EQ(d.findings.size(), 3U);
  EXPECT_NEAR(d.findings[2].impact_s_per_iter, (101.9 - 90) / 1e3, 1e-4);
}

// An unseen 4-rank denoiser (one loader worker a rank, 2 cores 94 % busy): rank 2 at a CPU quota of
// 30 % of a core (throttled 0.42 of the window) while every rank's augmentation began running
// Python passes in its worker (7.8-8.5 -> 32.8-36.2 ms of CPU a step): 233 -> 300 ms a step. The
// quota's finding (40 ms, most of the slowdown) does not stand for the workers' taken cores: a
// quota freezes its rank whatever the other cores do. Both are named, the costlier first; a rank
// named by its ops' speed without a quota holding it back still stands for the slowdown.
TEST(LoaderWorkersTakingCores, ARanksQuotaExplainsItsImpactNotTheCoresEveryRanksWorkersTook) {
  Finding slower_rank;
  slower_rank.scope = FindingScope::kLocal;
  slower_rank.category = FindingCategory::kCompute;
  slower_rank.workers = {2};
  slower_rank.impact_s_per_iter = 0.040;
  const std::vector<WorkerPattern> base = LoaderJob(4, 0.233, 180, 0.035f, 0.94f);
  auto after = [&](bool throttled) {
    std::vector<WorkerPattern> now = LoaderJob(4, 0.300, 240, 0.115f, 0.94f);
    if (throttled) now[2].cpu->throttled = 0.42f;
    Diagnosis d;
    d.findings = {slower_rank};
    FindLoaderWorkersTakingCores(base, now, IterationsOnly(233, 300), &d);
    return d;
  };
  Diagnosis held = after(true);
  ASSERT_EQ(held.findings.size(), 2U);
  EXPECT_EQ(held.findings[0].category, FindingCategory::kCompute);
  EXPECT_EQ(held.findings[1].scope, FindingScope::kGlobal);
  EXPECT_EQ(held.findings[1].category, FindingCategory::kDataloader);
  // 4 ranks x (34.5 - 8.2) ms over 2 cores is more than the 27 ms the quota's finding leaves.
  EXPECT_NEAR(held.findings[1].impact_s_per_iter, (67.0 - 40.0) / 1e3, 1e-4);
  // No quota: the rank named by its ops' speed on busy cores is what the taken cores may have
  // caused (MayBeASymptom), and the workers' finding comes first, held to the whole slowdown.
  Diagnosis unheld = after(false);
  ASSERT_EQ(unheld.findings.size(), 2U);
  EXPECT_EQ(unheld.findings[0].category, FindingCategory::kDataloader);
}

// An unseen 5-rank GAN (one loader worker a rank, 2 cores 94 % busy): rank 0 began per-sample
// statistics of its fakes in Python (86.3 ms a step over its peers) while every rank's dataset
// began blurring its images in Python (its worker's CPU +16.5 ms a step): 189.7 -> 289.8 ms a
// step. The statistics explain 86 ms of the 100 ms slowdown, not all of it: the workers' taken
// cores are named second, held to the 13.8 ms left. A rank's own cost that leaves less than a
// slowdown's worth (5 % of the baseline's step) stands for it.
TEST(LoaderWorkersTakingCores, ARanksOwnCostExplainsItsImpactNotTheCoresEveryRanksWorkersTook) {
  Finding statistics = FindingOf(FindingScope::kLocal, FindingCategory::kHost, {0}, 0.0863);
  const std::vector<WorkerPattern> base = LoaderJob(5, 0.1897, 120, 0.02f, 0.94f);
  const std::vector<WorkerPattern> now = LoaderJob(5, 0.2898, 140, 0.077f, 0.94f);
  Diagnosis d;
  d.findings = {statistics};
  FindLoaderWorkersTakingCores(base, now, IterationsOnly(189.7, 289.8), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kHost);
  EXPECT_EQ(d.findings[1].scope, FindingScope::kGlobal);
  EXPECT_EQ(d.findings[1].category, FindingCategory::kDataloader);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, (100.1 - 86.3) / 1e3, 1e-4);
  // Statistics that leave 8.1 ms (under a slowdown's 9.5): the workers' taken cores, measured on
  // their own, are named second, held to the whole slowdown (5 x 16.6 ms over 2 cores).
  statistics.impact_s_per_iter = 0.092;
  d.findings = {statistics};
  FindLoaderWorkersTakingCores(base, now, IterationsOnly(189.7, 289.8), &d);
  ASSERT_EQ(d.findings.size(), 2U);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 5 * (0.077 * 289.8 - 0.02 * 189.7) / 2 / 1e3, 1e-4);
}

// An unseen 2-stage pipeline of 2 replicas a stage (4 ranks on 2 cores, 99 % busy, 2 loader
// workers a rank) whose rank 3's dataset began redrawing each image's augmentation 100 times:
// 296.8 -> 356.2 ms a step, rank 3's workers 13.3 -> 141.1 ms of CPU a step, the others' as before.
// Its stage has one other rank: no peers to tell it by (BlameBusyLoaderWorkers needs 3), and the
// run read `healthy`. Against its own past it is named, at what the workers took of the 2 cores.
TEST(OwnLoaderWorkersTakingCores, OneRanksWorkersTakingTheCoresAgainstItsPastIsItsLoader) {
  const std::vector<WorkerPattern> base = LoaderJob(4, 0.2968, 200, 0.045f, 0.99f);
  std::vector<WorkerPattern> now = LoaderJob(4, 0.3562, 230, 0.035f, 0.99f);
  now[3].cpu->loader_cpu = 0.396f;
  now[3].loader_worker_frames = {{"/job/data.py:82(__getitem__)", 0.5F}};
  auto after = [&](const std::vector<WorkerPattern>& job, std::vector<Finding> findings) {
    Diagnosis d;
    d.findings = std::move(findings);
    FindOwnLoaderWorkersTakingCores(base, job, IterationsOnly(296.8, 356.2), &d);
    return d;
  };
  Diagnosis d = after(now, {});
  ASSERT_EQ(d.findings.size(), 1U);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kLocal);
  EXPECT_EQ(f.category, FindingCategory::kDataloader);
  EXPECT_EQ(f.workers, std::vector<int>{3});
  EXPECT_EQ(f.location, "/job/data.py:82(__getitem__)");
  // (141.1 - 13.4) ms over 2 cores is more than the 59.4 ms slowdown: held to it.
  EXPECT_NEAR(f.impact_s_per_iter, 0.0594, 1e-4);
  // What they took: all of their growth (the others' did not grow) over the 2 cores.
  EXPECT_NEAR(f.cores_taken_s_per_iter, (0.396 * 356.2 - 0.045 * 296.8) / 2 / 1e3, 1e-4);
  EXPECT_NE(f.evidence.find("rank 3's DataLoader workers use 141.1 ms of CPU per iteration, 13.4 ms at the baseline "
                            "(+127.7; the other ranks' -0.9, median)"),
            std::string::npos)
      << f.evidence;
  // Every rank's ops slower by no more than the workers took: their symptom, folded in.
  Finding slower = FindingOf(FindingScope::kGlobal, FindingCategory::kCompute, {0, 1, 2, 3}, 0.030, "aten::mm");
  slower.from_baseline = true;
  slower.evidence = "against the baseline: every rank's aten::mm takes 1.2 ms per call";
  d = after(now, {slower});
  ASSERT_EQ(d.findings.size(), 1U);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kDataloader);
  EXPECT_NE(d.findings[0].evidence.find("every rank's ops ran slower beside it"), std::string::npos);

  // Nothing where: an idle core gave the workers their time;
  std::vector<WorkerPattern> idle = now;
  for (WorkerPattern& w : idle) w.cpu->host_busy = 0.6f;
  EXPECT_TRUE(after(idle, {}).findings.empty());
  // every rank's workers grew (FindLoaderWorkersTakingCores's);
  std::vector<WorkerPattern> every = now;
  for (WorkerPattern& w : every) w.cpu->loader_cpu = 0.396f;
  EXPECT_TRUE(after(every, {}).findings.empty());
  // the rank's growth is mostly what the others' grew too (2 of 4 grew);
  std::vector<WorkerPattern> shared = now;
  shared[3].cpu->loader_cpu = 0.12f;
  shared[2].cpu->loader_cpu = 0.09f;
  shared[1].cpu->loader_cpu = 0.09f;
  EXPECT_TRUE(after(shared, {}).findings.empty());
  // what they took is less than a slowdown's worth (5 % of the 296.8 ms step);
  std::vector<WorkerPattern> little = now;
  little[3].cpu->loader_cpu = 0.11f;
  EXPECT_TRUE(after(little, {}).findings.empty());
  // its loader is named already, or a hang stands for the slowdown.
  EXPECT_EQ(after(now, {FindingOf(FindingScope::kLocal, FindingCategory::kDataloader, {3}, 0.05)}).findings.size(), 1U);
  EXPECT_EQ(after(now, {FindingOf(FindingScope::kGlobal, FindingCategory::kHang, {0, 1, 2, 3}, 0)}).findings.size(),
            1U);
  // Another rank's cost that claims the whole slowdown (a checkpoint its peer waits for) leaves the
  // workers' taken cores their own measure, held to the whole slowdown, named after it.
  Diagnosis checkpoint = after(now, {FindingOf(FindingScope::kLocal, FindingCategory::kHost, {1}, 0.2217)});
  ASSERT_EQ(checkpoint.findings.size(), 2U);
  EXPECT_EQ(checkpoint.findings[0].category, FindingCategory::kHost);
  EXPECT_EQ(checkpoint.findings[1].workers, std::vector<int>{3});
  EXPECT_NEAR(checkpoint.findings[1].impact_s_per_iter, 0.0594, 1e-4);
}

}  // namespace
}  // namespace eroica
