#include "diff/pattern_diff.h"

#include <gtest/gtest.h>

#include <array>

#include "diff/diff_report.h"
#include "diff/diff_test_util.h"

namespace eroica {
namespace {

TEST(PatternDiff, SameJobHasNoDifference) {
  PatternDiff diff = DiffPatterns(Job(4), Job(4));
  EXPECT_TRUE(diff.same()) << FormatDiffText(diff);
  EXPECT_NEAR(diff.base.iteration_ms, diff.now.iteration_ms, 1e-9);
}

TEST(PatternDiff, GrownFunctionOnEveryRankComesFirstWithItsPerCallTime) {
  std::vector<WorkerPattern> now;
  for (int r = 0; r < 4; ++r) {
    auto ms = Healthy();
    std::get<2>(ms[0]) = 100;  // aten::mm: 60 -> 100 ms per iteration on every rank
    now.push_back(Worker(r, 4, ms));
  }
  PatternDiff diff = DiffPatterns(Job(4), now);
  ASSERT_FALSE(diff.functions.empty());
  const PatternChange& first = diff.functions.front();
  EXPECT_EQ(first.function, "aten::mm");
  EXPECT_EQ(first.kind, ChangeKind::kGrew);
  EXPECT_EQ(first.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NEAR(first.delta_ms_per_iter, 40, 2);
  EXPECT_NEAR(first.base_ms_per_call, 6, 0.2);
  EXPECT_NEAR(first.now_ms_per_call, 10, 0.3);
  EXPECT_GT(diff.now.iteration_ms, diff.base.iteration_ms + 35);
  // Only aten::mm changed by more than the bar (the others keep their ms per iteration).
  for (const PatternChange& c : diff.functions) EXPECT_EQ(c.function, "aten::mm") << ChangeSentence(c);
  ASSERT_FALSE(diff.categories.empty());
  EXPECT_EQ(diff.categories.front().category, Category::kCompute);
}

TEST(PatternDiff, OneRanksNewFunctionIsNamedBeforeThePeersLongerWaits) {
  std::vector<WorkerPattern> now = Job(4);
  auto storm = Healthy();
  storm.emplace_back("gc.collect", Category::kHost, 30);
  now[2] = Worker(2, 4, storm);
  for (int r : {0, 1, 3}) {  // the peers wait for rank 2 at the all-reduce
    auto waiting = Healthy();
    std::get<2>(waiting[2]) = 50;
    now[static_cast<size_t>(r)] = Worker(r, 4, waiting);
  }
  PatternDiff diff = DiffPatterns(Job(4), now);
  ASSERT_GE(diff.functions.size(), 2u) << FormatDiffText(diff);
  EXPECT_EQ(diff.functions[0].function, "gc.collect");
  EXPECT_EQ(diff.functions[0].kind, ChangeKind::kAppeared);
  EXPECT_EQ(diff.functions[0].ranks, std::vector<int>{2});
  EXPECT_EQ(diff.functions[1].function, "gloo:all_reduce");
  EXPECT_EQ(diff.functions[1].ranks, (std::vector<int>{0, 1, 3}));
}

TEST(PatternDiff, VanishedFunctionIsNamed) {
  std::vector<WorkerPattern> base;
  for (int r = 0; r < 4; ++r) {
    auto ms = Healthy();
    ms.emplace_back("aten::copy_", Category::kMemory, 25);
    base.push_back(Worker(r, 4, ms));
  }
  PatternDiff diff = DiffPatterns(base, Job(4));
  ASSERT_EQ(diff.functions.size(), 1u) << FormatDiffText(diff);
  const PatternChange& c = diff.functions.front();
  EXPECT_EQ(c.function, "aten::copy_");
  EXPECT_EQ(c.kind, ChangeKind::kVanished);
  EXPECT_NEAR(c.delta_ms_per_iter, -25, 2);
  EXPECT_LT(diff.now.iteration_ms, diff.base.iteration_ms - 20);
}

TEST(PatternDiff, ChangeWithinTheSpreadAcrossRanksIsNoise) {
  // Base ranks differ by ±8 ms in aten::mm; a rank 5 ms slower now is inside that spread.
  std::vector<WorkerPattern> base, now;
  for (int r = 0; r < 4; ++r) {
    auto ms = Healthy();
    std::get<2>(ms[0]) = 60 + (r % 2 == 0 ? 8 : -8);
    base.push_back(Worker(r, 4, ms));
    auto later = ms;
    if (r == 1) std::get<2>(later[0]) += 5;
    now.push_back(Worker(r, 4, later));
  }
  PatternDiff diff = DiffPatterns(base, now);
  EXPECT_TRUE(diff.functions.empty()) << FormatDiffText(diff);
}

TEST(PatternDiff, AFunctionSeenInOnlySomeProfiledIterationsIsNoChange) {
  // A scheduling blip at one program point: in 1 of 5 iterations at the base, 3 of 5 now, on
  // one rank. It can clear every bar by chance; a fault persists (in all but at most one of
  // the profiled iterations: a program point's name can differ in the window's first).
  std::vector<WorkerPattern> base = Job(4), now = Job(4);
  for (auto [side, calls] : {std::pair{&base, 0.2}, std::pair{&now, 0.6}}) {
    WorkerPattern& w = (*side)[3];
    FunctionPattern blip;
    blip.name = "(python between aten::empty and aten::zeros)";
    blip.calls_per_iter = calls;
    blip.mean_duration_us = 60e3;
    blip.beta = calls * 60 / (w.iteration_s * 1e3);
    w.functions.push_back(blip);
  }
  PatternDiff diff = DiffPatterns(base, now);
  EXPECT_TRUE(diff.functions.empty()) << FormatDiffText(diff);
  // The same growth in 4 of 5 iterations is one.
  now[3].functions.back().calls_per_iter = 0.8;
  EXPECT_EQ(DiffPatterns(base, now).functions.size(), 1u);
}

TEST(PatternDiff, AChangeWithinAWorkersOwnIterationToIterationSpreadIsNoise) {
  // Rank 1's aten::mm grows 60 -> 80 ms per iteration; its compute share swung between 0.2
  // and 0.9 across its 5 profiled iterations now (a loaded machine), so its mean is known only
  // to ±22 ms (standard error), a bar of 67 ms: not a change. Steady iterations make it one.
  std::vector<WorkerPattern> now = Job(4);
  FunctionMs ms = Healthy();
  std::get<2>(ms[0]) = 80;
  now[1] = Worker(1, 4, ms);
  std::array<float, kCategoryCount> steady{};
  steady[0] = static_cast<float>(now[1].category_beta[0]);
  now[1].iteration_category_beta.assign(5, steady);
  EXPECT_EQ(DiffPatterns(Job(4), now).functions.size(), 1u);
  for (size_t i = 0; i < 5; ++i) now[1].iteration_category_beta[i][0] = i % 2 == 0 ? 0.9F : 0.2F;
  PatternDiff diff = DiffPatterns(Job(4), now);
  EXPECT_TRUE(diff.functions.empty()) << FormatDiffText(diff);
}

// A collective no rank called at the base and every rank now calls in every iteration appeared on
// each rank whose time in it holds the least share of an iteration, whatever the noise of its
// time: its calls are exact. 5 ranks beside a neighbour each called a new barrier 20 times a step
// (15.5-18.8 ms of it) on iterations whose communication swung: it had cleared the noise on 2.
// The same times of a new host point (a program point's name shifts with the ops around it) and
// of a collective in only some iterations are still held to the noise.
TEST(PatternDiff, ACollectiveNoRankCalledBeforeAppearsOnEveryRankThatCallsItInEveryIteration) {
  const double barrier_ms[] = {16, 15.5, 16.4, 18.8, 17.7};
  auto run = [&](Category category, double calls) {
    std::vector<WorkerPattern> now;
    for (int r = 0; r < 5; ++r) {
      FunctionMs ms = Healthy();
      ms.emplace_back(category == Category::kCommunication ? "barrier" : "(python new point)", category, barrier_ms[r]);
      now.push_back(Worker(r, 5, ms));
      now.back().functions.back().calls_per_iter = calls;
      std::array<float, kCategoryCount> shares{};
      for (size_t c = 0; c < shares.size(); ++c) shares[c] = static_cast<float>(now.back().category_beta[c]);
      now.back().iteration_category_beta.assign(5, shares);
      for (size_t i = 0; i < 5; ++i) {  // a loaded node: the category's share swings by iteration
        float swing = i % 2 == 0 ? 0.15F : -0.15F;
        now.back().iteration_category_beta[i][static_cast<size_t>(category)] += swing;
      }
    }
    return DiffPatterns(Job(5), now);
  };
  auto ranks_of = [](const PatternDiff& diff, std::string_view function) {
    for (const PatternChange& c : diff.functions) {
      if (c.function == function) return c.ranks;
    }
    return std::vector<int>{};
  };
  PatternDiff barrier = run(Category::kCommunication, 20);
  EXPECT_EQ(ranks_of(barrier, "barrier"), (std::vector<int>{0, 1, 2, 3, 4})) << FormatDiffText(barrier);
  EXPECT_EQ(barrier.functions.front().kind, ChangeKind::kAppeared);
  EXPECT_LT(ranks_of(run(Category::kHost, 20), "(python new point)").size(), 3u);
  EXPECT_TRUE(ranks_of(run(Category::kCommunication, 0.4), "barrier").empty());
}

TEST(PatternDiff, DifferentWorldSizeComparesWithTheBasesMedianAndSaysSo) {
  std::vector<WorkerPattern> now;
  for (int r = 0; r < 8; ++r) {
    auto ms = Healthy();
    if (r == 6) std::get<2>(ms[3]) = 40;  // rank 6's Python: 10 -> 40 ms, and rank 6 is new
    now.push_back(Worker(r, 8, ms));
  }
  PatternDiff diff = DiffPatterns(Job(4), now);
  EXPECT_EQ(diff.base.world_size, 4);
  EXPECT_EQ(diff.now.world_size, 8);
  ASSERT_EQ(diff.notes.size(), 1u);
  EXPECT_NE(diff.notes[0].find("world size 4 at the base, 8 now"), std::string::npos);
  ASSERT_EQ(diff.functions.size(), 1u) << FormatDiffText(diff);
  EXPECT_EQ(diff.functions[0].function, "(python)");
  EXPECT_EQ(diff.functions[0].ranks, std::vector<int>{6});
  EXPECT_EQ(diff.functions[0].role_workers, 8);
}

TEST(PatternDiff, RolesAreComparedOnlyWithTheirLike) {
  std::vector<WorkerPattern> base = Job(4), now = Job(4);
  for (std::vector<WorkerPattern>* side : {&base, &now}) {
    for (WorkerPattern& w : *side) w.group = w.rank < 2 ? "stage0" : "stage1";
  }
  now.pop_back();  // rank 3 gone: stage1 has one worker now
  base.push_back(Worker(9, 4, Healthy()));
  base.back().group = "server";
  PatternDiff diff = DiffPatterns(base, now);
  EXPECT_TRUE(diff.functions.empty()) << FormatDiffText(diff);
  ASSERT_FALSE(diff.notes.empty());
  EXPECT_NE(diff.notes.back().find("server: 1 workers at the base, none now"), std::string::npos);
}

TEST(DiffReport, JsonCarriesTheSchemaAndTheChange) {
  std::vector<WorkerPattern> now;
  for (int r = 0; r < 4; ++r) {
    auto ms = Healthy();
    std::get<2>(ms[1]) = 50;
    now.push_back(Worker(r, 4, ms));
  }
  nlohmann::json j = DiffToJson(DiffPatterns(Job(4), now));
  EXPECT_EQ(j["schema"], "eroica.diff/v1");
  EXPECT_FALSE(j["same"].get<bool>());
  EXPECT_EQ(j["functions"][0]["function"], "aten::relu");
  EXPECT_EQ(j["functions"][0]["kind"], "grew");
  EXPECT_EQ(j["functions"][0]["category"], "compute");
  EXPECT_EQ(j["now"]["workers"], 4);
}

}  // namespace
}  // namespace eroica
