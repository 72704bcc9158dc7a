#include "summary/duration_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace eroica {
namespace {
constexpr int64_t kExact = int64_t{1} << DurationHistogram::kSubBucketBits;  // below: one bucket per ns
}  // namespace

uint32_t DurationHistogram::BucketOf(int64_t duration_ns) {
  if (duration_ns < kExact) return duration_ns <= 0 ? 0 : static_cast<uint32_t>(duration_ns);
  auto d = static_cast<uint64_t>(duration_ns);
  int octave = std::bit_width(d) - 1;  // >= kSubBucketBits
  int shift = octave - kSubBucketBits;
  auto sub = static_cast<uint32_t>((d >> shift) & (kExact - 1));
  return static_cast<uint32_t>((shift + 1) * kExact) + sub;
}

void DurationHistogram::BucketRange(uint32_t bucket, double* low, double* high) {
  if (bucket < kExact) {
    *low = bucket;
    *high = bucket + 1.0;
    return;
  }
  int shift = static_cast<int>(bucket / kExact) - 1;
  double sub = static_cast<double>(bucket % kExact);
  *low = std::ldexp(kExact + sub, shift);
  *high = std::ldexp(kExact + sub + 1, shift);
}

void DurationHistogram::Add(int64_t duration_ns) {
  uint32_t bucket = BucketOf(duration_ns);
  if (bucket >= counts_.size()) counts_.resize(bucket + 1, 0);
  ++counts_[bucket];
  min_ = count_ == 0 ? duration_ns : std::min(min_, duration_ns);
  max_ = count_ == 0 ? duration_ns : std::max(max_, duration_ns);
  ++count_;
}

double DurationHistogram::QuantileNs(double q) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<int64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_)));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (uint32_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= rank) {
      double low = 0, high = 0;
      BucketRange(b, &low, &high);
      double middle = b < kExact ? low : (low + high) / 2;
      return std::clamp(middle, static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return 0;
}

}  // namespace eroica
