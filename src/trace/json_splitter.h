// A streaming walker over a trace's top-level JSON structure. It never builds a DOM: it
// finds `traceEvents` wherever it sits among the top-level keys (Kineto writes metadata
// after it), hands the events on in chunks of complete elements that simdjson can parse in
// place, and hands every other top-level value on as raw text. A cut file is not an error:
// the complete events before the cut are delivered and `truncated_at_byte` says where.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/byte_source.h"

namespace eroica {

class TraceChunkSink {
 public:
  virtual ~TraceChunkSink() = default;
  // `array` is "[e1,e2,...]" with at least kJsonPadding readable bytes after it (simdjson's
  // padding). `element_offsets` locate each element inside `array` so a damaged chunk can be
  // re-parsed element by element; `file_offset` is where array[0] sits in the JSON text.
  virtual void OnEventChunk(std::string_view array, size_t capacity, const std::vector<uint32_t>& element_offsets,
                            const std::vector<uint32_t>& element_ends, int64_t file_offset) = 0;
  virtual void OnTopLevelValue(std::string_view key, std::string_view raw_value) = 0;
  // Sinks that can parse an event straight from the read buffer, saving the framing pass:
  // `begin` is the event's '{'; nothing past `limit` may be read but kJsonPadding bytes of
  // padding. Returns the byte after the event, or nullptr to have it delivered in a chunk.
  virtual bool parses_in_place() const { return false; }
  virtual const char* ParseEventInPlace(const char* begin, const char* limit) { return nullptr; }
  // False once the sink holds all it may (a memory budget): reading then stops at the next
  // read of the source, and the result says so.
  virtual bool wants_more() const { return true; }
};

struct SplitResult {
  bool bare_event_list = false;
  bool found_events = false;
  bool truncated = false;
  int64_t truncated_at_byte = -1;
  int64_t bytes_read = 0;
  bool stopped_by_sink = false;  // the sink's wants_more() ended the read early
  std::string problem;           // why the data ended early (truncation, corrupt gzip)
};

inline constexpr size_t kJsonPadding = 128;  // > SIMDJSON_PADDING

class JsonSplitter {
 public:
  JsonSplitter(ByteSource* source, std::string path, size_t chunk_bytes = 4 << 20);
  // Errors only for input that is not a trace at all; damage after events were found is
  // reported in the result.
  StatusOr<SplitResult> Run(TraceChunkSink* sink);

 private:
  static constexpr size_t kNoPin = static_cast<size_t>(-1);

  void ClearPadding();
  bool Refill();
  bool EnsureByte();
  bool SkipWhitespace();
  bool ScanValue();
  bool ScanString();
  bool ScanCompound();
  bool ScanScalar();
  bool ParseEventArray(TraceChunkSink* sink);
  bool ScanElementsFast(TraceChunkSink* sink);
  void FlushChunk(TraceChunkSink* sink);
  Status ParseTopLevelObject(TraceChunkSink* sink);
  int64_t FileOffset(size_t index) const { return buffer_file_offset_ + static_cast<int64_t>(index); }

  ByteSource* source_;
  const TraceChunkSink* sink_ = nullptr;  // set by Run
  std::string path_;
  size_t chunk_bytes_;
  // The read buffer: bytes [0, end_) are data, kJsonPadding readable bytes always follow.
  class Buffer {
   public:
    char* data() { return bytes_.get(); }
    size_t size() const { return size_; }
    char& operator[](size_t i) { return data()[i]; }
    void Resize(size_t size);  // keeps the contents

   private:
    std::unique_ptr<char[]> bytes_;
    size_t size_ = 0;
  };

  Buffer buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  size_t pin_ = kNoPin;  // first byte that must stay in the buffer
  int64_t buffer_file_offset_ = 0;
  bool eof_ = false;
  bool object_closed_ = false;  // the top-level object's '}' was seen
  std::string read_problem_;
  // The pending chunk of complete events.
  size_t chunk_start_ = kNoPin;
  size_t chunk_end_ = 0;
  std::vector<uint32_t> element_offsets_;
  std::vector<uint32_t> element_ends_;
  SplitResult result_;
};

}  // namespace eroica
