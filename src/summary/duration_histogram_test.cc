#include "summary/duration_histogram.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace eroica {
namespace {

TEST(DurationHistogramTest, BucketsAreContiguousAndNarrow) {
  double previous_high = 0;
  for (uint32_t b = 0; b < 16 * 40; ++b) {
    double low = 0, high = 0;
    DurationHistogram::BucketRange(b, &low, &high);
    EXPECT_EQ(low, previous_high) << b;
    EXPECT_LE(high - low, std::max(1.0, low / 16)) << b;
    previous_high = high;
    // Every duration in the range maps back to the bucket.
    EXPECT_EQ(DurationHistogram::BucketOf(static_cast<int64_t>(low)), b);
    EXPECT_EQ(DurationHistogram::BucketOf(static_cast<int64_t>(high) - 1), b);
  }
  EXPECT_EQ(DurationHistogram::BucketOf(0), 0u);
  EXPECT_EQ(DurationHistogram::BucketOf(-5), 0u);
}

TEST(DurationHistogramTest, MedianIsTheMiddleCallWithinABucket) {
  DurationHistogram h;
  EXPECT_EQ(h.MedianNs(), 0);
  // 60 calls of about 300 us, 40 preempted ones of 5 ms: the mean moves to 2.2 ms, the median
  // stays the work's size.
  for (int i = 0; i < 60; ++i) h.Add(300'000 + i * 100);
  for (int i = 0; i < 40; ++i) h.Add(5'000'000);
  EXPECT_EQ(h.count(), 100);
  EXPECT_NEAR(h.MedianNs(), 303'000, 303'000 / 32.0);
}

// A net's two convolutions a step, each called as often: the median is the top of the smaller
// one's calls, the one the scheduler stretched most; the lower quartile stays with its typical call.
TEST(DurationHistogramTest, TheLowerQuartileStaysWithTheSmallerShapeOfAnOpCalledWithTwo) {
  DurationHistogram h;
  EXPECT_EQ(h.LowerQuartileNs(), 0);
  for (int64_t d : {82'000, 90'000, 91'000, 102'000, 620'000, 1'538'000, 1'562'000, 1'604'000, 1'831'000, 10'123'000}) {
    h.Add(d);
  }
  EXPECT_NEAR(h.MedianNs(), 620'000, 620'000 / 32.0);
  EXPECT_NEAR(h.LowerQuartileNs(), 91'000, 91'000 / 32.0);
  EXPECT_NEAR(h.QuantileNs(1.0), 10'123'000, 10'123'000 / 32.0);
  EXPECT_NEAR(h.QuantileNs(0.0), 82'000, 82'000 / 32.0);
}

TEST(DurationHistogramTest, SmallDurationsAreExact) {
  DurationHistogram h;
  for (int64_t d : {3, 7, 9}) h.Add(d);
  EXPECT_EQ(h.MedianNs(), 7);
  DurationHistogram even;
  for (int64_t d : {1000, 1000, 2000, 2000}) even.Add(d);
  EXPECT_NEAR(even.MedianNs(), 1000, 1000 / 32.0);  // the lower middle call
  DurationHistogram alike;
  for (int i = 0; i < 5; ++i) alike.Add(500'000);
  EXPECT_EQ(alike.MedianNs(), 500'000);  // exact, not the bucket's middle
}

}  // namespace
}  // namespace eroica
