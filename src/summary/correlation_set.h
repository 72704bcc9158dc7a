// A set of correlation ids (launch <-> kernel links). Profilers number launches densely, so a
// bitmap over [smallest, largest] answers each lookup in one load, built in one pass; ids too
// sparse for that are sorted and binary-searched instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace eroica {

class CorrelationSet {
 public:
  void Add(int64_t id) { ids_.push_back(id); }

  // Call once after the last Add and before Contains.
  void Seal() {
    if (ids_.empty()) return;
    auto [lo, hi] = std::minmax_element(ids_.begin(), ids_.end());
    uint64_t range = static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo) + 1;
    if (range / 64 <= ids_.size() + 1024) {  // the bitmap is no bigger than the ids themselves
      smallest_ = *lo;
      range_ = range;
      bits_.assign(range / 64 + 1, 0);
      for (int64_t id : ids_) {
        uint64_t k = static_cast<uint64_t>(id - smallest_);
        bits_[k >> 6] |= uint64_t{1} << (k & 63);
      }
      ids_.clear();
      ids_.shrink_to_fit();
    } else {
      std::sort(ids_.begin(), ids_.end());
    }
  }

  bool Contains(int64_t id) const {
    if (!bits_.empty()) {
      uint64_t k = static_cast<uint64_t>(id) - static_cast<uint64_t>(smallest_);  // wraps below smallest
      return k < range_ && (bits_[k >> 6] >> (k & 63) & 1) != 0;
    }
    return std::binary_search(ids_.begin(), ids_.end(), id);
  }

 private:
  std::vector<int64_t> ids_;    // until sealed; after, only when sparse
  std::vector<uint64_t> bits_;  // when dense
  int64_t smallest_ = 0;
  uint64_t range_ = 0;
};

}  // namespace eroica
