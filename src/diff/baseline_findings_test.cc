#include "diff/baseline_findings.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "diff/diff_test_util.h"

namespace eroica {
namespace {

std::vector<WorkerPattern> EveryRanksMmSlower(double mm_ms) {
  std::vector<WorkerPattern> now;
  for (int r = 0; r < 4; ++r) {
    FunctionMs ms = Healthy();
    std::get<2>(ms[0]) = mm_ms;
    now.push_back(Worker(r, 4, ms));
  }
  return now;
}

TEST(BaselineFindings, EveryRankSlowerIsAGlobalFindingOfWhatGrew) {
  Diagnosis d;  // peers look alike: healthy by comparison
  ApplyBaseline(DiffPatterns(Job(4), EveryRanksMmSlower(100)), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kGlobal);
  EXPECT_EQ(f.category, FindingCategory::kCompute);
  EXPECT_EQ(f.function, "aten::mm");
  EXPECT_EQ(f.workers, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NEAR(f.impact_s_per_iter, 0.040, 0.003);
  // Per call: 100 and 60 ms over 10 calls, times the median rank jitter (1.005).
  EXPECT_NE(f.evidence.find("every rank's aten::mm takes 10.05 ms per call, 6.03 ms at the baseline"),
            std::string::npos)
      << f.evidence;
  EXPECT_NE(f.evidence.find("% of the 40."), std::string::npos) << f.evidence;
}

// Every rank's all-reduce 3x as long as at the baseline: the network, unless this window's
// collectives were found waiting for descheduled peers (a healthy control run in CI while other
// tests took the cores: every rank's allreduce 3.74 -> 12.59 ms a call).
TEST(BaselineFindings, CollectivesGrownWhileTheyWaitedForACpuAreNoNetworkFinding) {
  auto run = [](bool waited_for_cpu) {
    std::vector<WorkerPattern> now;
    for (int r = 0; r < 4; ++r) {
      FunctionMs ms = Healthy();
      std::get<2>(ms[2]) = 60;  // gloo:all_reduce, 20 ms at the baseline
      now.push_back(Worker(r, 4, ms));
    }
    Diagnosis d;
    d.collectives_waited_for_cpu = waited_for_cpu;
    ApplyBaseline(DiffPatterns(Job(4), now), &d);
    return d;
  };
  Diagnosis network = run(false);
  ASSERT_EQ(network.findings.size(), 1u);
  EXPECT_EQ(network.findings[0].category, FindingCategory::kCommunication);
  Diagnosis busy = run(true);
  EXPECT_TRUE(busy.healthy()) << busy.findings[0].evidence;
  EXPECT_TRUE(std::any_of(busy.notes.begin(), busy.notes.end(), [](const std::string& note) {
    return note.find("waited for descheduled peers (above): the node's cores are busier than at the baseline") !=
           std::string::npos;
  }));
}

// Every rank all-gathers metrics each step, a collective the baseline never called, while the
// window's collectives waited for descheduled peers (an unseen 5-rank distillation job on 2 busy
// cores, 30 scalar all_gathers a step: 161 -> 283 ms a step): the new calls are the job's, the
// network finding stands. A collective it ran before, 1 -> 1.2 calls an iteration (a periodic one
// newly in the window) and each call longer: still the waits' note.
TEST(BaselineFindings, CollectivesAddedSinceTheBaselineAreACauseWhileTheyWaitedForACpu) {
  auto run = [](bool own_work_grew) {
    std::vector<WorkerPattern> now = JobWith(4, [](int) {
      return FunctionMs{{"gloo:allgather", Category::kCommunication, 60}};
    });
    for (WorkerPattern& w : now) {
      for (FunctionPattern& f : w.functions) {
        if (f.name == "gloo:allgather") {
          f.mean_duration_us /= 3;
          f.calls_per_iter = 30;
        }
        if (own_work_grew && f.name == "aten::mm") f.beta *= 1.6;  // own work comes first in the order
      }
    }
    Diagnosis d;
    d.collectives_waited_for_cpu = true;
    ApplyBaseline(DiffPatterns(Job(4), now), &d);
    return d;
  };
  Diagnosis added = run(false);
  ASSERT_EQ(added.findings.size(), 1u);
  const Finding& f = added.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kGlobal);
  EXPECT_EQ(f.category, FindingCategory::kCommunication);
  EXPECT_EQ(f.function, "gloo:allgather");
  EXPECT_EQ(f.workers, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(f.evidence.find("absent at the baseline"), std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("but the baseline never made these calls"), std::string::npos) << f.evidence;
  EXPECT_NE(f.action.find("Every rank calls gloo:allgather in every iteration, which it did not at the baseline"),
            std::string::npos)
      << f.action;
  // Beside own work that grew on every rank too: both, the collectives not read as its symptom.
  Diagnosis both = run(true);
  EXPECT_TRUE(std::any_of(both.findings.begin(), both.findings.end(), [](const Finding& g) {
    return g.function == "gloo:allgather" && g.category == FindingCategory::kCommunication;
  }));
  EXPECT_TRUE(std::any_of(both.findings.begin(), both.findings.end(),
                          [](const Finding& g) { return g.function == "aten::mm"; }));

  auto once_per_iteration = [](double calls, double ms) {
    std::vector<WorkerPattern> job;
    for (int r = 0; r < 4; ++r) {
      FunctionMs ms_of = Healthy();
      std::get<2>(ms_of[2]) = ms;  // gloo:all_reduce
      job.push_back(Worker(r, 4, ms_of));
      for (FunctionPattern& f : job.back().functions) {
        if (f.name != "gloo:all_reduce") continue;
        f.mean_duration_us *= f.calls_per_iter / calls;
        f.calls_per_iter = calls;
      }
    }
    return job;
  };
  // Three times the calls of one it ran before, each as long: added calls too.
  Diagnosis more;
  more.collectives_waited_for_cpu = true;
  ApplyBaseline(DiffPatterns(once_per_iteration(10, 20), once_per_iteration(30, 60)), &more);
  ASSERT_EQ(more.findings.size(), 1u);
  EXPECT_EQ(more.findings[0].category, FindingCategory::kCommunication);
  EXPECT_NE(more.findings[0].action.find("Every rank calls gloo:all_reduce 3.0x as often per iteration as at the "
                                         "baseline: the job communicates more than it did"),
            std::string::npos)
      << more.findings[0].action;
  Diagnosis d;
  d.collectives_waited_for_cpu = true;
  ApplyBaseline(DiffPatterns(once_per_iteration(1, 20), once_per_iteration(1.2, 60)), &d);
  EXPECT_TRUE(d.healthy()) << d.findings[0].evidence;
  EXPECT_TRUE(std::any_of(d.notes.begin(), d.notes.end(), [](const std::string& note) {
    return note.find("waited for descheduled peers (above)") != std::string::npos;
  }));
}

// Every rank's all-reduce 3x as long as at the baseline, all but one rank's calls only: the
// others waited for that rank (the shortest call, the last arrival's, is as long as it was): no
// network finding, a note. Every call longer on every rank, the shortest too: the network.
TEST(BaselineFindings, CollectivesGrownByWaitingAreNoNetworkFinding) {
  auto with_calls = [](std::vector<WorkerPattern> job, auto call_ms) {
    for (WorkerPattern& w : job) {
      for (int i = 0; i < 10; ++i) w.collectives.push_back({"gloo:all_reduce", static_cast<float>(1e3 * call_ms(w))});
    }
    return job;
  };
  auto run = [&](bool late_rank_waits_less) {
    std::vector<WorkerPattern> now;
    for (int r = 0; r < 4; ++r) {
      FunctionMs ms = Healthy();
      std::get<2>(ms[2]) = 60;  // gloo:all_reduce, 20 ms at the baseline
      now.push_back(Worker(r, 4, ms));
    }
    now = with_calls(now, [&](const WorkerPattern& w) { return late_rank_waits_less && w.rank == 3 ? 2.0 : 6.0; });
    Diagnosis d;
    ApplyBaseline(DiffPatterns(with_calls(Job(4), [](const WorkerPattern&) { return 2.0; }), now), &d);
    return d;
  };
  Diagnosis waiting = run(true);
  EXPECT_TRUE(waiting.healthy()) << waiting.findings[0].evidence;
  EXPECT_TRUE(std::any_of(waiting.notes.begin(), waiting.notes.end(), [](const std::string& note) {
    return note.find(
               "by waiting: its calls took 2.00 ms then, 5.00 ms now, the shortest of each (the last rank to "
               "arrive, the transfer itself) 2.00 ms then, 2.00 ms now") != std::string::npos;
  }));
  Diagnosis network = run(false);
  ASSERT_EQ(network.findings.size(), 1u);
  EXPECT_EQ(network.findings[0].category, FindingCategory::kCommunication);
}

// Every rank calls an op more often, each call shorter (an evaluation pass added on every rank:
// its small batches' convolutions): more work, said so, not "slow compute".
TEST(BaselineFindings, MoreCallsEachNoSlowerAreMoreWorkNotSlowerWork) {
  std::vector<WorkerPattern> now = Job(4);
  for (WorkerPattern& w : now) {
    double total_ms = w.iteration_s * 1e3 + 40;
    w.iteration_s = total_ms / 1e3;
    for (FunctionPattern& f : w.functions) {
      f.beta = f.beta * (total_ms - 40) / total_ms;
      if (f.name == "aten::mm") {
        f.beta += 40 / total_ms;
        f.calls_per_iter = 100;  // 100 ms in 100 calls: 1 ms each, 6 ms at the baseline
        f.mean_duration_us = f.beta * total_ms * 1e3 / 100;
      }
    }
  }
  Diagnosis d;
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.function, "aten::mm");
  EXPECT_NE(f.evidence.find("every rank's aten::mm runs 100.0 calls per iteration, 10.0 at the baseline"),
            std::string::npos)
      << f.evidence;
  EXPECT_NE(f.action.find("calls aten::mm 10.0x as often per iteration as at the baseline, each call no slower"),
            std::string::npos)
      << f.action;
}

// Every rank's training thread queued 40 ms longer for a CPU after its collective than at the
// baseline (other processes took the cores): no cause of the job's own, said in a note.
TEST(BaselineFindings, TimeQueuedForACpuAfterCollectivesIsNoCauseOfItsOwn) {
  // (Rank 0's program point grew too: with the queueing counted in, the host time grown on every
  // rank would have named it.)
  std::vector<WorkerPattern> now = JobWith(4, [](int r) {
    return FunctionMs{{"(resuming after barrier)", Category::kHost, 40},
                      {"(python between a and b)", Category::kHost, r == 0 ? 2 : 0.5}};
  });
  std::vector<WorkerPattern> base = JobWith(4, [](int) {
    return FunctionMs{{"(python between a and b)", Category::kHost, 0.5}};
  });
  Diagnosis d;
  ApplyBaseline(DiffPatterns(base, now), &d);
  EXPECT_TRUE(d.findings.empty()) << d.findings[0].evidence;
  bool said = std::any_of(d.notes.begin(), d.notes.end(), [](const std::string& n) {
    return n.find("wait +40.") != std::string::npos &&
           n.find("longer for a CPU after their collectives") != std::string::npos;
  });
  EXPECT_TRUE(said) << (d.notes.empty() ? "" : d.notes.back());
}

TEST(BaselineFindings, AFunctionOnMostRanksStandsForItsCategoryGrownOnAll) {
  // Every rank's host time grew 40 ms; on rank 3 the program point has another name.
  std::vector<WorkerPattern> now = JobWith(4, [](int r) {
    return FunctionMs{{r == 3 ? "(python between b and c)" : "(python between a and b)", Category::kHost, 40}};
  });
  Diagnosis d;
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].function, "(python between a and b)");
  EXPECT_EQ(d.findings[0].workers, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(d.findings[0].evidence.find("3 of 4 ranks'"), std::string::npos) << d.findings[0].evidence;
  EXPECT_NE(d.findings[0].evidence.find("every rank's host time grew"), std::string::npos);
}

TEST(BaselineFindings, ACategoryGrownOnAllThatExplainsTheSlowdownIsGlobalUnderAnyOfItsNames) {
  // Every rank's host time grew 40 ms at one line, which the ops around it named three ways
  // (a real 4-rank run had two names on 2 ranks each): no one name is on most ranks, the
  // category is on all.
  const char* names[] = {"(python between a and b)", "(python between b and c)", "(python between c and d)"};
  auto job = [&](std::vector<int> grown) {
    std::vector<WorkerPattern> job;
    for (int r = 0; r < 5; ++r) {
      FunctionMs ms = Healthy();
      for (int k = 0; k < 3; ++k) ms.emplace_back(names[k], Category::kHost, grown[r] == k ? 40 : 0.5);
      job.push_back(Worker(r, 5, ms));
    }
    return job;
  };
  std::vector<WorkerPattern> base = job({-1, -1, -1, -1, -1});
  Diagnosis d;
  ApplyBaseline(DiffPatterns(base, job({0, 0, 1, 1, 2})), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].scope, FindingScope::kGlobal);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kHost);
  EXPECT_EQ(d.findings[0].workers, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_NE(d.findings[0].evidence.find("2 of 5 ranks'"), std::string::npos) << d.findings[0].evidence;
  EXPECT_NE(d.findings[0].evidence.find("every rank's host time grew"), std::string::npos);
  // Two ranks' host time alone is no global cause.
  Diagnosis two;
  ApplyBaseline(DiffPatterns(base, job({0, 0, -1, -1, -1})), &two);
  EXPECT_TRUE(two.findings.empty()) << two.findings[0].evidence;
}

// The peers' global host finding and the baseline's are one problem when both name a program
// point, whatever ops the point was named by in each.
TEST(BaselineFindings, AGlobalHostPointFromThePeersMergesWithTheBaselinesUnderAnotherName) {
  std::vector<WorkerPattern> now = JobWith(4, [](int) {
    return FunctionMs{{"(python between a and b)", Category::kHost, 40}};
  });
  Diagnosis d;
  Finding peers;
  peers.scope = FindingScope::kGlobal;
  peers.category = FindingCategory::kHost;
  peers.function = "(python between c and d)";
  peers.workers = {0, 1, 2, 3};
  peers.evidence = "on 4 of 4 workers it is the largest host cost";
  peers.location = "train.py:88(train)";
  d.findings.push_back(peers);
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  // Located once (its evidence names the line), so no later pass locates it again.
  EXPECT_EQ(d.findings[0].location, "train.py:88(train)");
  EXPECT_NE(d.findings[0].evidence.find("against the baseline"), std::string::npos) << d.findings[0].evidence;
  EXPECT_NE(d.findings[0].evidence.find("largest host cost"), std::string::npos) << d.findings[0].evidence;
  // A different function of the same category that is no program point stays apart.
  d.findings = {peers};
  d.findings[0].function = "gc.collect";
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  EXPECT_EQ(d.findings.size(), 2u);
}

TEST(BaselineFindings, NoSlowdownNoFinding) {
  Diagnosis d;
  ApplyBaseline(DiffPatterns(Job(4), Job(4)), &d);
  EXPECT_TRUE(d.findings.empty());
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("against the baseline"), std::string::npos);
}

TEST(BaselineFindings, AChangeOnOneRankIsNotGlobal) {
  std::vector<WorkerPattern> now = Job(4);
  FunctionMs slow = Healthy();
  std::get<2>(slow[0]) = 100;
  now[1] = Worker(1, 4, slow);
  Diagnosis d;
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  EXPECT_TRUE(d.findings.empty());
}

TEST(BaselineFindings, LocalFindingThatExplainsTheSlowdownKeepsPriorityAndIsConfirmed) {
  std::vector<WorkerPattern> now = EveryRanksMmSlower(100);
  FunctionMs storm = Healthy();
  std::get<2>(storm[0]) = 100;
  storm.emplace_back("gc.collect", Category::kHost, 60);
  now[2] = Worker(2, 4, storm);
  Diagnosis d;
  Finding local;
  local.scope = FindingScope::kLocal;
  local.category = FindingCategory::kHost;
  local.workers = {2};
  local.function = "gc.collect";
  local.impact_s_per_iter = 0.060;
  d.findings.push_back(local);
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].function, "gc.collect");
  EXPECT_NE(d.findings[0].evidence.find("against the baseline its gc.collect grew"), std::string::npos);
  EXPECT_EQ(d.findings[1].function, "aten::mm");
  EXPECT_EQ(d.findings[1].scope, FindingScope::kGlobal);
}

// Two causes at once: every rank's own code (collections each step) and one rank's larger batches.
// Each explains the slowdown; the one that costs more goes first, whichever its scope.
// The window's one finding, rank 3's imbalance costing `local_s` a step, against a healthy 4-rank
// baseline and `now`.
Diagnosis RankThreesImbalanceAgainstTheBaseline(const std::vector<WorkerPattern>& now, double local_s) {
  Diagnosis d;
  d.findings.push_back(FindingOf(FindingScope::kLocal, FindingCategory::kImbalance, {3}, local_s, "aten::addmm"));
  ApplyBaseline(DiffPatterns(Job(4), now), &d);
  return d;
}

TEST(BaselineFindings, EveryRanksOwnCodeThatCostsMoreGoesAheadOfALocalFinding) {
  const std::vector<WorkerPattern> now = JobWith(4, [](int) {
    return FunctionMs{{"gc.collect", Category::kHost, 140}};
  });
  auto diagnose = [&](double local_s) { return RankThreesImbalanceAgainstTheBaseline(now, local_s); };
  Diagnosis less = diagnose(0.120);
  ASSERT_EQ(less.findings.size(), 2u);
  EXPECT_EQ(less.findings[0].function, "gc.collect");
  EXPECT_EQ(less.findings[0].scope, FindingScope::kGlobal);
  EXPECT_EQ(less.findings[1].function, "aten::addmm");
  Diagnosis more = diagnose(0.200);
  ASSERT_EQ(more.findings.size(), 2u);
  EXPECT_EQ(more.findings[0].function, "aten::addmm");
}

// Two causes at once, neither explaining half the slowdown (the others' wait for rank 3 is the
// rest): every rank's logging (56 ms a step) and rank 3's larger graphs (88 ms): the one that costs
// more goes first, whichever its scope.
TEST(BaselineFindings, ALocalFindingThatCostsMoreStaysAheadThoughItExplainsLessThanHalf) {
  const std::vector<WorkerPattern> now = JobWith(4, [](int r) {
    return r == 3 ? FunctionMs{{"logging", Category::kHost, 56}, {"aten::addmm", Category::kCompute, 144}}
                  : FunctionMs{{"logging", Category::kHost, 56}, {"gloo:broadcast", Category::kCommunication, 144}};
  });
  auto diagnose = [&](double local_s) { return RankThreesImbalanceAgainstTheBaseline(now, local_s); };
  Diagnosis more = diagnose(0.088);
  ASSERT_EQ(more.findings.size(), 2u);
  EXPECT_EQ(more.findings[0].function, "aten::addmm");
  EXPECT_EQ(more.findings[1].function, "logging");
  EXPECT_EQ(more.findings[1].scope, FindingScope::kGlobal);
  Diagnosis less = diagnose(0.040);
  ASSERT_EQ(less.findings.size(), 2u);
  EXPECT_EQ(less.findings[0].function, "logging");
}

TEST(BaselineFindings, GlobalChangeGoesAheadOfALocalFindingThatExplainsLittle) {
  Diagnosis d;
  Finding local;
  local.scope = FindingScope::kLocal;
  local.workers = {1};
  local.function = "(python)";
  local.impact_s_per_iter = 0.004;
  d.findings.push_back(local);
  ApplyBaseline(DiffPatterns(Job(4), EveryRanksMmSlower(100)), &d);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].function, "aten::mm");
}

// An unseen 4-rank mixture of experts on 2 cores 97 % busy: rank 3's loader worker took 0.36 of
// the cores (79.1 ms of a 440 ms step) while rank 2 had twice the batch; the baseline's `global
// compute` (every rank's matrix products slower, 53.6 ms a step) is what the taken cores did, and
// goes into the loader's finding. Larger than what they took, or on cores not busy, it stays.
TEST(BaselineFindings, EveryRanksSlowerOpsBesideARanksProcessesThatTookTheCoresAreTheirSymptom) {
  auto now = [](float busy) {
    std::vector<WorkerPattern> job = Job(4);
    for (WorkerPattern& w : job) w.cpu = CpuShare{.cpus = 2, .host_busy = busy};
    return job;
  };
  Finding loader = FindingOf(FindingScope::kLocal, FindingCategory::kDataloader, {3}, 0.0791);
  loader.cores_taken_s_per_iter = 0.0791;
  const Finding imbalance = FindingOf(FindingScope::kLocal, FindingCategory::kImbalance, {2}, 0.0281);
  auto slower_ops = [](double impact_s) {
    Finding f = FindingOf(FindingScope::kGlobal, FindingCategory::kCompute, {0, 1, 2, 3}, impact_s, "aten::mm");
    f.from_baseline = true;
    f.evidence = "against the baseline: 3 of 4 ranks' aten::mm takes 13.86 ms per call, 9.72 ms at the baseline";
    return f;
  };
  Diagnosis d;
  d.findings = {loader, slower_ops(0.0536), imbalance};
  FoldSlowerOpsIntoTakenCores(now(0.97f), &d);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].category, FindingCategory::kDataloader);
  EXPECT_EQ(d.findings[1].category, FindingCategory::kImbalance);
  EXPECT_NE(d.findings[0].evidence.find("every rank's ops ran slower beside it on the cores its processes took, 53.6 "
                                        "ms/iter of the 79.1 they took (compute aten::mm: 3 of 4 ranks' aten::mm"),
            std::string::npos)
      << d.findings[0].evidence;
  d.findings = {loader, slower_ops(0.100), imbalance};
  FoldSlowerOpsIntoTakenCores(now(0.97f), &d);
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[1].category, FindingCategory::kCompute);
  d.findings = {loader, slower_ops(0.0536), imbalance};
  FoldSlowerOpsIntoTakenCores(now(0.6f), &d);
  EXPECT_EQ(d.findings.size(), 3u);
  loader.cores_taken_s_per_iter = 0;  // a loader that took no cores of every rank's
  d.findings = {loader, slower_ops(0.0536), imbalance};
  FoldSlowerOpsIntoTakenCores(now(0.97f), &d);
  EXPECT_EQ(d.findings.size(), 3u);
}

}  // namespace
}  // namespace eroica
