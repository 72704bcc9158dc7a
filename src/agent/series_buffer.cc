#include "agent/series_buffer.h"

#include "base/byte_codec.h"

namespace eroica::agent {
namespace {

int64_t FloorToMicros(int64_t ts_ns) {
  int64_t us = ts_ns / 1000;
  if (ts_ns < 0 && us * 1000 != ts_ns) --us;
  return us;
}

}  // namespace

SeriesBuffer::SeriesBuffer(int64_t window_ns, size_t max_samples)
    : window_ns_(window_ns), max_samples_(max_samples < 1 ? 1 : max_samples) {}

bool SeriesBuffer::Append(int64_t ts_ns, int64_t value) {
  int64_t ts_us = FloorToMicros(ts_ns);
  if (!chunks_.empty() && ts_us < chunks_.back().prev_ts_us) return false;
  if (chunks_.empty() || chunks_.back().count >= kSamplesPerChunk) {
    if (!chunks_.empty()) chunks_.back().bytes.shrink_to_fit();
    chunks_.emplace_back();
  }
  Chunk& chunk = chunks_.back();
  ByteWriter writer(&chunk.bytes);
  if (chunk.count == 0) {
    writer.SignedVarint(ts_us);
    writer.SignedVarint(value);
    chunk.first_ts_ns = ts_us * 1000;
  } else {
    int64_t delta_ts_us = ts_us - chunk.prev_ts_us;
    // Wrapping arithmetic: counters near the int64 limits must not overflow (UB).
    int64_t delta_value = static_cast<int64_t>(static_cast<uint64_t>(value) - static_cast<uint64_t>(chunk.prev_value));
    writer.SignedVarint(delta_ts_us - chunk.prev_delta_ts_us);
    writer.SignedVarint(
        static_cast<int64_t>(static_cast<uint64_t>(delta_value) - static_cast<uint64_t>(chunk.prev_delta_value)));
    chunk.prev_delta_ts_us = delta_ts_us;
    chunk.prev_delta_value = delta_value;
  }
  chunk.prev_ts_us = ts_us;
  chunk.prev_value = value;
  chunk.last_ts_ns = ts_us * 1000;
  ++chunk.count;
  ++sample_count_;
  DropOld();
  return true;
}

void SeriesBuffer::DropOld() {
  int64_t newest_ns = chunks_.back().last_ts_ns;
  while (chunks_.size() > 1) {
    const Chunk& oldest = chunks_.front();
    bool too_old = oldest.last_ts_ns < newest_ns - window_ns_;
    bool too_many = sample_count_ - oldest.count >= max_samples_;
    if (!too_old && !too_many) break;
    sample_count_ -= oldest.count;
    chunks_.pop_front();
  }
}

void SeriesBuffer::CopyRange(int64_t from_ns, int64_t to_ns, std::vector<Sample>* out) const {
  for (const Chunk& chunk : chunks_) {
    if (chunk.last_ts_ns < from_ns || chunk.first_ts_ns > to_ns) continue;
    Decode(chunk, from_ns, to_ns, out);
  }
}

void SeriesBuffer::Decode(const Chunk& chunk, int64_t from_ns, int64_t to_ns, std::vector<Sample>* out) {
  ByteReader reader(chunk.bytes);
  int64_t ts_us = 0, value = 0, delta_ts_us = 0, delta_value = 0;
  for (uint32_t i = 0; i < chunk.count; ++i) {
    int64_t a = 0, b = 0;
    if (!reader.GetSigned(&a) || !reader.GetSigned(&b)) return;  // cannot happen: we wrote it
    if (i == 0) {
      ts_us = a;
      value = b;
    } else {
      delta_ts_us += a;
      delta_value = static_cast<int64_t>(static_cast<uint64_t>(delta_value) + static_cast<uint64_t>(b));
      ts_us += delta_ts_us;
      value = static_cast<int64_t>(static_cast<uint64_t>(value) + static_cast<uint64_t>(delta_value));
    }
    int64_t ts_ns = ts_us * 1000;
    if (ts_ns >= from_ns && ts_ns <= to_ns) out->push_back({ts_ns, value});
  }
}

size_t SeriesBuffer::memory_bytes() const {
  size_t bytes = sizeof(*this);
  for (const Chunk& chunk : chunks_) bytes += sizeof(Chunk) + chunk.bytes.capacity();
  return bytes;
}

}  // namespace eroica::agent
