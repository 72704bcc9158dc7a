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
          "thresholds": {"outlier_z": 3}})",
      "mine.json");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_DOUBLE_EQ(e->outlier_z, 3);
  EXPECT_DOUBLE_EQ(e->CategoryDistance(Category::kDataloader, 0.7, false), 0.2);
  StatusOr<Expectations> bad = ParseExpectations(R"({"boxes": [{"category": "gpu", "beta": [0, 1]}]})", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json"), std::string::npos);
  EXPECT_FALSE(ParseExpectations("{nope", "x.json").ok());
  EXPECT_FALSE(ParseExpectations(R"({"boxes": [{"category": "host", "beta": [0.5, 0.1]}]})", "x.json").ok());
}

// Wrong-typed fields used to abort the process (an uncaught nlohmann type_error, exit 134).
TEST(ExpectationsTest, WrongTypesAreErrorsNotAborts) {
  for (const char* text :
       {R"({"boxes": [1]})", R"({"boxes": [{"category": 5, "beta": [0, 1]}]})",
        R"({"boxes": [{"category": "host", "host_kind": 3, "beta": [0, 1]}]})",
        R"({"boxes": [{"category": "host", "target": [], "beta": [0, 1]}]})",
        R"({"boxes": [{"category": "host", "beta": ["a", 1]}]})",
        R"({"boxes": [{"category": "host", "beta": [0, 1], "mu": 3}]})",
        R"({"boxes": [{"category": "host", "beta": [0, 1], "why": 3}]})", R"({"boxes": {"a": 1}})"}) {
    StatusOr<Expectations> e = ParseExpectations(text, "mine.json");
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find("mine.json"), std::string::npos);
  }
  StatusOr<Expectations> e = ParseExpectations(
      R"({"boxes": [{"category": "host", "beta": [0, 1], "why": "w", "training": null}],
          "thresholds": {"outlier_z": "high", "min_beta": 0.5}, "other": null})",
      "mine.json");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_DOUBLE_EQ(e->min_beta, 0.5);
  EXPECT_DOUBLE_EQ(e->outlier_z, DefaultExpectations().outlier_z);
}
}  // namespace
}  // namespace eroica
