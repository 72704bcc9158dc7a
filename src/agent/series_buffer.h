// The bounded in-memory history of one series: a ring of small compressed chunks.
//
// Samples are kept as delta-of-delta zigzag varints (timestamps at microsecond resolution),
// about 2-4 bytes a sample instead of 16, so a node with a thousand series keeps minutes of
// 100 Hz history in a few tens of MB. Whole chunks fall off the old end once they are older
// than the window or the sample cap is exceeded, so the buffer always covers at least the
// window (while it holds fewer than max_samples) and never much more than max_samples.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "agent/series.h"

namespace eroica::agent {

class SeriesBuffer {
 public:
  static constexpr uint32_t kSamplesPerChunk = 256;

  SeriesBuffer(int64_t window_ns, size_t max_samples);

  // Appends a sample; timestamps are floored to microseconds. Returns false (and keeps
  // nothing) when ts_ns is older than the newest sample: the realtime clock stepped back.
  bool Append(int64_t ts_ns, int64_t value);

  // Appends to *out the samples with from_ns <= ts_ns <= to_ns, oldest first.
  void CopyRange(int64_t from_ns, int64_t to_ns, std::vector<Sample>* out) const;

  size_t sample_count() const { return sample_count_; }
  size_t memory_bytes() const;
  bool empty() const { return sample_count_ == 0; }
  int64_t first_ts_ns() const { return chunks_.empty() ? 0 : chunks_.front().first_ts_ns; }
  int64_t last_ts_ns() const { return chunks_.empty() ? 0 : chunks_.back().last_ts_ns; }
  // The newest value (the open chunk's encoder state); 0 when empty.
  int64_t last_value() const { return chunks_.empty() ? 0 : chunks_.back().prev_value; }

 private:
  struct Chunk {
    int64_t first_ts_ns = 0;
    int64_t last_ts_ns = 0;
    uint32_t count = 0;
    std::string bytes;
    // Encoder state, meaningful for the open (last) chunk only.
    int64_t prev_ts_us = 0;
    int64_t prev_delta_ts_us = 0;
    int64_t prev_value = 0;
    int64_t prev_delta_value = 0;
  };

  void DropOld();
  static void Decode(const Chunk& chunk, int64_t from_ns, int64_t to_ns, std::vector<Sample>* out);

  int64_t window_ns_;
  size_t max_samples_;
  size_t sample_count_ = 0;
  std::deque<Chunk> chunks_;
};

}  // namespace eroica::agent
