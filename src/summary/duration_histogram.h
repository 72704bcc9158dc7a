// The durations of one function's calls, kept as counts in log-spaced buckets (16 per octave,
// so a bucket spans at most 1/16 of its lower edge): enough to give the median call to about
// ±3 % in a few hundred bytes, whatever the number of calls.
//
// Why the median: on a busy node the scheduler preempts some calls in the middle, and a few
// stretched calls move a mean far more than the size of the work (a rank given longer
// sequences had its aten::mm mean 1.4x its peers' and its median call 2.1x, while the preempted
// calls of everyone moved the means by 0.5-1.5x). The median call is the work's own size.
#pragma once

#include <cstdint>
#include <vector>

namespace eroica {

class DurationHistogram {
 public:
  void Add(int64_t duration_ns);
  int64_t count() const { return count_; }
  // The median duration in ns: the middle of the bucket holding it, within the shortest and the
  // longest call (so calls all alike give their exact duration); 0 without calls.
  double MedianNs() const { return QuantileNs(0.5); }
  // The lower quartile, likewise. An op called with two shapes a step as often (a net's two
  // convolutions) has its median at the top of the smaller shape's calls: the one the scheduler
  // stretched most, so it moves from rank to rank. Its lower quartile stays with the smaller
  // shape's typical call, and preemption, which only adds time, needs three calls in four to move
  // it.
  double LowerQuartileNs() const { return QuantileNs(0.25); }
  // The duration of the ceil(q * count)-th shortest call (the lower middle one for the median of
  // an even count), within its bucket as above; 0 without calls.
  double QuantileNs(double q) const;

  static constexpr int kSubBucketBits = 4;  // 16 buckets per octave
  // Bucket index of a duration, and the [low, high) range of a bucket (exposed for the tests).
  static uint32_t BucketOf(int64_t duration_ns);
  static void BucketRange(uint32_t bucket, double* low, double* high);

 private:
  std::vector<uint32_t> counts_;  // grown to the largest bucket seen
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
};

}  // namespace eroica
