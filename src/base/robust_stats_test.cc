#include "base/robust_stats.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(RobustStatsTest, MedianOddEvenEmpty) {
  std::vector<double> odd = {5, 1, 3};
  EXPECT_DOUBLE_EQ(MedianInPlace(odd), 3);
  std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(MedianInPlace(even), 2.5);
  std::vector<double> empty;
  EXPECT_DOUBLE_EQ(MedianInPlace(empty), 0);
}

TEST(RobustStatsTest, MedianOfOthersLeavesOutEachValueOnce) {
  EXPECT_EQ(MedianOfOthers({}), std::vector<double>{});
  EXPECT_EQ(MedianOfOthers({7}), std::vector<double>{0});
  EXPECT_EQ(MedianOfOthers({1, 2}), (std::vector<double>{2, 1}));
  // Ties: leaving out one of two equal values leaves the other.
  EXPECT_EQ(MedianOfOthers({5, 1, 5, 9}), (std::vector<double>{5, 5, 5, 5}));
  std::vector<double> values{3, 10, 1, 4, 4, 8};
  std::vector<double> got = MedianOfOthers(values);
  for (size_t k = 0; k < values.size(); ++k) {
    std::vector<double> others = values;
    others.erase(others.begin() + static_cast<long>(k));
    EXPECT_DOUBLE_EQ(got[k], MedianInPlace(others)) << k;
  }
}

TEST(RobustStatsTest, OneOutlierDoesNotMoveTheCenter) {
  RobustCenter c = MedianAndMad({0.10, 0.11, 0.09, 0.10, 0.90});
  EXPECT_DOUBLE_EQ(c.median, 0.10);
  EXPECT_NEAR(c.mad, 0.01, 1e-12);
  EXPECT_GT(RobustZ(0.90, c, 0.01), 5);
  EXPECT_LT(RobustZ(0.11, c, 0.01), 1);
}

TEST(RobustStatsTest, MinScaleKeepsIdenticalPeersFromMakingNoiseAnOutlier) {
  RobustCenter c = MedianAndMad({0.2, 0.2, 0.2, 0.205});
  EXPECT_LT(RobustZ(0.205, c, 0.01), 1);
}

}  // namespace
}  // namespace eroica
