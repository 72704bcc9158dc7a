// The critical path as a partition of the window: at each instant the owner is the function
// of the highest-priority layer active then (device compute > memory > communication > host
// ranges ...), and within a layer the innermost (latest-started) span.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/growable_array.h"
#include "base/huge_page_allocator.h"

namespace eroica {

struct Span {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t function = 0;

  bool operator==(const Span&) const = default;
};

// Spans come by the million on long traces: their arrays take huge pages (a fresh process
// otherwise spends a fifth of its time faulting them in, 4 KB at a time).
using SpanList = BigVector<Span>;

// The critical path as it is kept: a partition of the window stored as (length, function)
// pieces of 8 bytes, because a GPU trace's path has about one piece per kernel (2.3 million on
// a 1.2 GB trace: 56 MB as Spans). Iteration yields Spans; pieces are contiguous and adjacent
// pieces never share a function.
class CriticalPath {
 public:
  explicit CriticalPath(int64_t start_ns = 0) : start_ns_(start_ns), end_ns_(start_ns) {}
  // The path of contiguous `spans` (tests and callers that build a path by hand).
  static CriticalPath FromSpans(const SpanList& spans);

  // Appends a span starting where the path ends; one with the last piece's function extends it.
  void Append(const Span& span);
  void set_function(size_t piece, uint32_t function) { pieces_[piece].function = function; }

  size_t size() const { return pieces_.size(); }
  bool empty() const { return pieces_.empty(); }
  int64_t start_ns() const { return start_ns_; }
  int64_t end_ns() const { return end_ns_; }
  SpanList ToSpans() const;

  class Iterator {
   public:
    using value_type = Span;
    using difference_type = std::ptrdiff_t;
    Span operator*() const;
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return index_ == other.index_; }
    size_t index() const { return index_; }

   private:
    friend class CriticalPath;
    Iterator(const CriticalPath* path, size_t index, int64_t start_ns) : path_(path), index_(index), start_(start_ns) {}
    int64_t Length() const;
    const CriticalPath* path_;
    size_t index_;
    int64_t start_;
    size_t long_index_ = 0;  // pieces before index_ whose length is in long_lengths_
  };
  Iterator begin() const { return {this, 0, start_ns_}; }
  Iterator end() const { return {this, pieces_.size(), end_ns_}; }

 private:
  static constexpr uint32_t kLongPiece = UINT32_MAX;  // the length is in long_lengths_
  struct Piece {
    uint32_t length;
    uint32_t function;
  };
  int64_t start_ns_;
  int64_t end_ns_;
  GrowableArray<Piece> pieces_;
  std::vector<int64_t> long_lengths_;  // pieces of 4.3 s and more, in order
};

inline int64_t CriticalPath::Iterator::Length() const {
  const Piece& piece = path_->pieces_[index_];
  return piece.length == kLongPiece ? path_->long_lengths_[long_index_] : piece.length;
}

inline Span CriticalPath::Iterator::operator*() const {
  return {start_, start_ + Length(), path_->pieces_[index_].function};
}

inline CriticalPath::Iterator& CriticalPath::Iterator::operator++() {
  start_ += Length();
  if (path_->pieces_[index_].length == kLongPiece) ++long_index_;
  ++index_;
  return *this;
}

// `layers` in priority order, highest first. Returns sorted, disjoint spans covering exactly
// [window_start_ns, window_end_ns); instants no layer covers go to `fill_function`.
SpanList PaintCriticalPath(std::vector<SpanList> layers, int64_t window_start_ns, int64_t window_end_ns,
                           uint32_t fill_function);

// A window cut into slices 2^shift ns wide (the last one ends at the window's end): an
// instant's slice is one subtraction and one shift, for millions of events.
struct TimeSlices {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int shift = 0;

  // The narrowest power-of-two slices that cut [start_ns, end_ns) into at most `count` slices.
  static TimeSlices About(int64_t start_ns, int64_t end_ns, size_t count) {
    TimeSlices slices{start_ns, end_ns, 0};
    while (slices.count() > std::max<size_t>(count, 1)) ++slices.shift;
    return slices;
  }
  uint64_t length() const {
    return end_ns > start_ns ? static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns) : 0;
  }
  size_t count() const { return length() == 0 ? 1 : static_cast<size_t>(((length() - 1) >> shift) + 1); }
  // Where slice k starts; slice count() starts at the window's end.
  int64_t Start(size_t k) const {
    if (k >= count()) return std::max(start_ns, end_ns);
    return start_ns + static_cast<int64_t>(static_cast<uint64_t>(k) << shift);
  }
  // The slice that holds instant t, clamped to the window's slices.
  size_t Of(int64_t t) const {
    if (t <= start_ns) return 0;
    uint64_t k = (static_cast<uint64_t>(t) - static_cast<uint64_t>(start_ns)) >> shift;
    return static_cast<size_t>(std::min<uint64_t>(k, count() - 1));
  }
};

// The same path as PaintCriticalPath, painted one time slice at a time so that only one
// slice's spans are held: `gather(k, lo, hi, &layers)` fills each layer (cleared) with the spans
// that meet [lo, hi), in the order PaintCriticalPath would have them (file order), unclipped.
// At every instant the owner depends only on the spans active then, so the slices' paths,
// joined, are the whole one.
using GatherSlice = std::function<void(size_t slice, int64_t lo, int64_t hi, std::vector<SpanList>* layers)>;
CriticalPath PaintCriticalPathBySlices(size_t layer_count, const TimeSlices& slices, uint32_t fill_function,
                                       const GatherSlice& gather);

// One layer's own timeline: overlapping spans resolve to the innermost. Sorted, disjoint.
SpanList InnermostTimeline(SpanList spans);

}  // namespace eroica
