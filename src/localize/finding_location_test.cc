#include "localize/finding_location.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

constexpr const char* kPoint = "(python between aten::mm and aten::add)";

WorkerPattern Worker(int rank, const std::string& hot_frame) {
  WorkerPattern w;
  w.rank = rank;
  FunctionPattern point;
  point.name = kPoint;
  point.category = Category::kHost;
  point.host_kind = HostKind::kPython;
  if (!hot_frame.empty()) point.hot_frames = {{hot_frame, 0.8F}, {"other.py:1(f)", 0.1F}};
  w.functions.push_back(point);
  FunctionPattern mm;
  mm.name = "aten::mm";
  mm.category = Category::kCompute;
  mm.hot_frames = {{"model.py:9(forward)", 1.0F}};  // never used: compute is not located here
  w.functions.push_back(mm);
  return w;
}

Finding MakeFinding(FindingScope scope, FindingCategory category, std::vector<int> workers, std::string function) {
  Finding f;
  f.scope = scope;
  f.category = category;
  f.workers = std::move(workers);
  f.function = std::move(function);
  f.evidence = "numbers.";
  return f;
}

TEST(FindingLocationTest, LocalFindingTakesTheCulpritsHotFrame) {
  WorkerTable table;
  table.Add(Worker(0, "train.py:40(log)"));
  table.Add(Worker(1, "train.py:57(hot_loop)"));
  table.Add(Worker(2, ""));
  std::vector<Finding> findings = {MakeFinding(FindingScope::kLocal, FindingCategory::kHost, {1}, kPoint)};
  LocateFindings(table, &findings);
  EXPECT_EQ(findings[0].location, "train.py:57(hot_loop)");
  EXPECT_NE(findings[0].evidence.find("80% of this time at train.py:57(hot_loop)"), std::string::npos)
      << findings[0].evidence;
}

TEST(FindingLocationTest, GlobalFindingTakesTheFrameMostRanksName) {
  WorkerTable table;
  table.Add(Worker(0, "train.py:40(log)"));
  table.Add(Worker(1, "train.py:57(gc_every_step)"));
  table.Add(Worker(2, "train.py:57(gc_every_step)"));
  std::vector<Finding> findings = {MakeFinding(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2}, kPoint)};
  LocateFindings(table, &findings);
  EXPECT_EQ(findings[0].location, "train.py:57(gc_every_step)");
  EXPECT_NE(findings[0].evidence.find("2 of its 3 ranks"), std::string::npos) << findings[0].evidence;
}

TEST(FindingLocationTest, OnlyHostAndDataloaderFindingsWithoutALocationAreLocated) {
  WorkerTable table;
  table.Add(Worker(1, "train.py:57(hot_loop)"));
  std::vector<Finding> findings = {
      MakeFinding(FindingScope::kLocal, FindingCategory::kCompute, {1}, "aten::mm"),
      MakeFinding(FindingScope::kLocal, FindingCategory::kHost, {1}, kPoint),
      MakeFinding(FindingScope::kLocal, FindingCategory::kHost, {3},
                  kPoint),  // rank without samples
  };
  findings[1].location = "stuck.py:3";
  LocateFindings(table, &findings);
  EXPECT_EQ(findings[0].location, "");
  EXPECT_EQ(findings[1].location, "stuck.py:3");
  EXPECT_EQ(findings[2].location, "");
  EXPECT_EQ(findings[0].evidence, "numbers.");
}

}  // namespace
}  // namespace eroica
