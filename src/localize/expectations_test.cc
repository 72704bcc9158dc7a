#include "localize/expectations.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(ExpectationsTest, DefaultsParseAndCarryTheirReasons) {
  Expectations e = DefaultExpectations();
  ASSERT_FALSE(e.boxes.empty());
  for (const Box& box : e.boxes) EXPECT_FALSE(box.why.empty());
  EXPECT_DOUBLE_EQ(e.outlier_z, 5);
}

TEST(ExpectationsTest, PythonOnAGpuJobHasThePapersBox) {
  Expectations e = DefaultExpectations();
  FunctionPattern f;
  f.category = Category::kHost;
  f.host_kind = HostKind::kPython;
  f.beta = 0.005;
  EXPECT_DOUBLE_EQ(e.Distance(f, /*has_device=*/true), 0);
  f.beta = 0.21;
  EXPECT_NEAR(e.Distance(f, true), 0.20, 1e-12);
}

TEST(ExpectationsTest, MuCountsInTheDistanceWhenPresent) {
  Expectations e = DefaultExpectations();
  FunctionPattern f;
  f.category = Category::kCompute;
  f.beta = 0.5;
  EXPECT_DOUBLE_EQ(e.Distance(f, true), 0);  // no μ: nothing to compare
  f.mu = 0.1;
  EXPECT_NEAR(e.Distance(f, true), 0.2, 1e-12);
}

TEST(ExpectationsTest, OverridesAndErrors) {
  StatusOr<Expectations> e = ParseExpectations(
      R"({"boxes": [{"target": "category", "category": "dataloader", "beta": [0, 0.5], "why": "x"}],
          "thresholds": {"outlier_z": 3}})", "mine.json");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_DOUBLE_EQ(e->outlier_z, 3);
  EXPECT_DOUBLE_EQ(e->CategoryDistance(Category::kDataloader, 0.7, false), 0.2);
  StatusOr<Expectations> bad = ParseExpectations(R"({"boxes": [{"category": "gpu", "beta": [0, 1]}]})", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json"), std::string::npos);
  EXPECT_FALSE(ParseExpectations("{nope", "x.json").ok());
  EXPECT_FALSE(ParseExpectations(R"({"boxes": [{"category": "host", "beta": [0.5, 0.1]}]})", "x.json").ok());
}

}  // namespace
}  // namespace eroica
