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
