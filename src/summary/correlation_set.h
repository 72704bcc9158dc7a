// A set of correlation ids (launch <-> kernel links). Profilers number launches densely, so a
// bitmap over [smallest, largest] answers each lookup in one load; ids too sparse for that are
// sorted and binary-searched instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace eroica {

class CorrelationSet {
 public:
  // Sizes the set for `count` ids within [smallest, largest], before they are added: dense ids go
  // straight into the bitmap, so no list of them is ever held (1.4 million launches made a 16 MB
  // list that the heap kept after the bitmap replaced it). Without a plan, ids are listed.
  void Plan(int64_t smallest, int64_t largest, size_t count) {
    if (count == 0 || largest < smallest) return;
    uint64_t range = static_cast<uint64_t>(largest) - static_cast<uint64_t>(smallest) + 1;
    if (range / 64 <= count + 1024) {  // the bitmap is no bigger than the ids themselves
      smallest_ = smallest;
      range_ = range;
      bits_.assign(range / 64 + 1, 0);
    } else {
      ids_.reserve(count);
    }
  }
  // An id within the planned range.
  void Add(int64_t id) {
    if (bits_.empty()) {
      ids_.push_back(id);
      return;
    }
    uint64_t k = static_cast<uint64_t>(id) - static_cast<uint64_t>(smallest_);
    if (k < range_) bits_[k >> 6] |= uint64_t{1} << (k & 63);
  }

  // Call once after the last Add and before Contains.
  void Seal() { std::sort(ids_.begin(), ids_.end()); }

  bool Contains(int64_t id) const {
    if (!bits_.empty()) {
      uint64_t k = static_cast<uint64_t>(id) - static_cast<uint64_t>(smallest_);  // wraps below smallest
      return k < range_ && (bits_[k >> 6] >> (k & 63) & 1) != 0;
    }
    return std::binary_search(ids_.begin(), ids_.end(), id);
  }

 private:
  std::vector<int64_t> ids_;    // when sparse or unplanned
  std::vector<uint64_t> bits_;  // when dense
  int64_t smallest_ = 0;
  uint64_t range_ = 0;
};

}  // namespace eroica
