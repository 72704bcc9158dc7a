#include "trace/json_splitter.h"

#include <algorithm>
#include <cstring>

#include "trace/block_scanner.h"

namespace eroica {
namespace {

// A quarter of a 1 MB L2: the kernel's copy and the parser's pass over it both stay in cache, and
// the buffer that reads cycle through is 1 MB. Real traces read 1.11-1.19x as fast as in 1 MB
// reads (interleaved fresh runs); 128 KB was no faster, 512 KB slower.
constexpr size_t kReadBytes = 1 << 18;
// The buffer grows to hold one element (or one top-level value) whole; past this, the input is
// not a trace (a sparse or zero-filled file, one endless string) and reading stops there.
constexpr size_t kMaxBufferBytes = size_t{256} << 20;

inline bool IsWhitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// True when [begin, end) is whitespace around exactly one ',': what separates two elements.
bool IsSeparator(const char* begin, const char* end) {
  int commas = 0;
  for (const char* p = begin; p < end; ++p) {
    if (*p == ',') {
      ++commas;
    } else if (!IsWhitespace(*p)) {
      return false;
    }
  }
  return commas == 1;
}

}  // namespace

JsonSplitter::JsonSplitter(ByteSource* source, std::string path, size_t chunk_bytes)
    : source_(source), path_(std::move(path)), chunk_bytes_(chunk_bytes) {
  buffer_.Resize(std::max<size_t>(4 * kReadBytes, 2 * chunk_bytes_ + kReadBytes) + kJsonPadding);
  ClearPadding();
}

void JsonSplitter::Buffer::Resize(size_t size) {
  // Not zero-filled: a multi-MB memset per file would cost more than reading a small trace.
  std::unique_ptr<char[]> bigger(new char[size]);
  if (bytes_) std::memcpy(bigger.get(), bytes_.get(), std::min(size, size_));
  bytes_ = std::move(bigger);
  size_ = size;
}

// Reads the next kReadBytes at most, so that the parser finds them still in cache. When the
// free room runs short, the bytes still needed move to the front first (one byte before the
// pin is kept so a chunk can be framed with '[' in place). They also move as soon as a read's
// worth before them is done with: reads then cycle through the buffer's first few MB, which stay
// in cache and are faulted in once, instead of walking all of it.
bool JsonSplitter::Refill() {
  if (eof_) return false;
  size_t needed_from = pin_ == kNoPin ? pos_ : std::min(pin_, pos_);
  int64_t needed_at = FileOffset(needed_from);
  if (buffer_.size() - kJsonPadding - end_ < kReadBytes || needed_from > kReadBytes) {
    size_t keep_from = needed_from;
    if (keep_from > 0) keep_from -= 1;
    if (keep_from > 0) {
      std::memmove(buffer_.data(), buffer_.data() + keep_from, end_ - keep_from);
      end_ -= keep_from;
      pos_ -= keep_from;
      if (pin_ != kNoPin) pin_ -= keep_from;
      if (chunk_start_ != kNoPin) {
        chunk_start_ -= keep_from;
        chunk_end_ -= keep_from;
      }
      buffer_file_offset_ += static_cast<int64_t>(keep_from);
      ClearPadding();
    }
    if (end_ + kReadBytes + kJsonPadding > buffer_.size()) {
      if (buffer_.size() * 2 > kMaxBufferBytes) {
        read_problem_ = fmt::format(
            "one JSON value runs past {} MB from byte {}; not a trace "
            "(a zero-filled or sparse file?)",
            kMaxBufferBytes >> 20, needed_at);
        eof_ = true;
        return false;
      }
      buffer_.Resize(buffer_.size() * 2);  // one element larger than the buffer
    }
  }
  if (sink_ != nullptr && !sink_->wants_more()) {
    result_.stopped_by_sink = true;
    eof_ = true;
    return false;
  }
  size_t room = std::min(kReadBytes, buffer_.size() - kJsonPadding - end_);
  StatusOr<size_t> n = source_->Read(buffer_.data() + end_, room);
  if (!n.ok()) {
    read_problem_ = n.status().message();
    eof_ = true;
    return false;
  }
  if (*n == 0) {
    eof_ = true;
    return false;
  }
  end_ += *n;
  result_.bytes_read += static_cast<int64_t>(*n);
  ClearPadding();
  return true;
}

// The padding after the data holds zeros, never stale bytes of an earlier read: a parser that
// looks ahead there (SIMD loads, a layout's next gap) must not find the rest of an event cut at
// the end of the data (a healthy run's trace once did: an event cut before its args "ended" in
// such bytes, and the splitter's position ran past its data).
void JsonSplitter::ClearPadding() { std::memset(buffer_.data() + end_, 0, kJsonPadding); }

bool JsonSplitter::EnsureByte() { return pos_ < end_ || Refill(); }

bool JsonSplitter::SkipWhitespace() {
  while (true) {
    while (pos_ < end_ && IsWhitespace(buffer_[pos_])) ++pos_;
    if (pos_ < end_) return true;
    if (!Refill()) return false;
  }
}

bool JsonSplitter::ScanString() {
  ++pos_;  // opening quote
  while (true) {
    const char* p = buffer_.data() + pos_;
    const char* e = buffer_.data() + end_;
    while (p < e) {
      char c = *p;
      if (c == '"') {
        pos_ = p - buffer_.data() + 1;
        return true;
      }
      if (c == '\\') {
        if (p + 1 >= e) break;  // the escaped byte is not read yet
        p += 2;
        continue;
      }
      ++p;
    }
    pos_ = p - buffer_.data();
    if (!Refill()) return false;
  }
}

bool JsonSplitter::ScanCompound() {
  int depth = 0;
  bool in_string = false;
  while (true) {
    const char* p = buffer_.data() + pos_;
    const char* e = buffer_.data() + end_;
    while (p < e) {
      if (in_string) {
        while (p < e && *p != '"' && *p != '\\') ++p;
        if (p >= e) break;
        if (*p == '\\') {
          if (p + 1 >= e) break;
          p += 2;
          continue;
        }
        in_string = false;
        ++p;
        continue;
      }
      char c = *p++;
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          pos_ = p - buffer_.data();
          return true;
        }
      }
    }
    pos_ = p - buffer_.data();
    if (!Refill()) return false;
  }
}

// Always consumes at least one byte, so a stray '}' or ':' where a value belongs becomes a
// one-byte malformed element instead of a scan that never advances.
bool JsonSplitter::ScanScalar() {
  ++pos_;
  while (true) {
    while (pos_ < end_) {
      char c = buffer_[pos_];
      if (c == ',' || c == ']' || c == '}' || IsWhitespace(c)) return true;
      ++pos_;
    }
    if (!Refill()) return false;
  }
}

bool JsonSplitter::ScanValue() {
  if (!EnsureByte()) return false;
  char c = buffer_[pos_];
  if (c == '{' || c == '[') return ScanCompound();
  if (c == '"') return ScanString();
  return ScanScalar();
}

void JsonSplitter::FlushChunk(TraceChunkSink* sink) {
  if (chunk_start_ == kNoPin || element_offsets_.empty()) {
    chunk_start_ = kNoPin;
    return;
  }
  // Frame the run of elements as an array in place: the byte before the first element and the
  // one after the last are separators we may overwrite for the duration of the call.
  size_t open = chunk_start_ - 1;
  char saved_open = buffer_[open];
  char saved_close = buffer_[chunk_end_];
  buffer_[open] = '[';
  buffer_[chunk_end_] = ']';
  std::string_view array(buffer_.data() + open, chunk_end_ - open + 1);
  sink->OnEventChunk(array, buffer_.size() - open, element_offsets_, element_ends_, FileOffset(open));
  buffer_[open] = saved_open;
  buffer_[chunk_end_] = saved_close;
  element_offsets_.clear();
  element_ends_.clear();
  chunk_start_ = kNoPin;
  pin_ = kNoPin;
}

// From an element that opens at pos_, walks 64-byte blocks and records each object or array
// element, flushing a chunk whenever it passes chunk_bytes_. It hands back to the byte-wise loop
// at the end of the last element recorded when the chunk is flushed, when anything but ","
// and whitespace precedes the next element (a scalar, a stray byte, the array's own ']'), or
// returns false when the data ends inside an element.
bool JsonSplitter::ScanElementsFast(TraceChunkSink* sink) {
  BlockScanner scanner;
  int depth = 1;  // inside the events array
  size_t element_start = pos_;
  size_t scan = pos_;
  while (true) {
    if (end_ - scan < 64 && !eof_) {
      size_t element_offset = element_start - chunk_start_;
      pos_ = scan;
      Refill();  // keeps everything from the pinned chunk start on
      scan = pos_;
      element_start = chunk_start_ + element_offset;
      continue;
    }
    size_t available = end_ - scan;
    if (available == 0) return false;
    uint64_t valid = available >= 64 ? ~uint64_t{0} : (uint64_t{1} << available) - 1;
    BracketMasks masks = scanner.Next(buffer_.data() + scan);
    for (uint64_t brackets = (masks.open | masks.close) & valid; brackets != 0; brackets &= brackets - 1) {
      int bit = __builtin_ctzll(brackets);
      size_t at = scan + static_cast<size_t>(bit);
      if ((masks.open >> bit) & 1) {
        if (depth == 1 && at != element_start) {
          if (!IsSeparator(buffer_.data() + chunk_end_, buffer_.data() + at)) {
            pos_ = chunk_end_;
            return true;
          }
          element_start = at;
        }
        ++depth;
        continue;
      }
      if (--depth == 1) {
        chunk_end_ = at + 1;
        element_offsets_.push_back(static_cast<uint32_t>(element_start - chunk_start_ + 1));
        element_ends_.push_back(static_cast<uint32_t>(chunk_end_ - chunk_start_ + 1));
        if (chunk_end_ - chunk_start_ >= chunk_bytes_) {
          pos_ = chunk_end_;
          FlushChunk(sink);
          return true;
        }
      } else if (depth == 0) {
        pos_ = chunk_end_;
        return true;
      }
    }
    scan += std::min<size_t>(available, 64);
  }
}

// Returns false when the data ended inside the array.
bool JsonSplitter::ParseEventArray(TraceChunkSink* sink) {
  result_.found_events = true;
  const bool in_place = sink->parses_in_place();
  ++pos_;  // '['
  while (true) {
    if (!SkipWhitespace()) return false;
    char c = buffer_[pos_];
    if (c == ']') {
      FlushChunk(sink);
      ++pos_;
      return true;
    }
    if (c == ',') {
      ++pos_;
      continue;
    }
    if (c == '{' && in_place) {
      const char* end = sink->ParseEventInPlace(buffer_.data() + pos_, buffer_.data() + end_);
      // Never past the data read (pos_ past end_ would make Refill move a negative length).
      if (end != nullptr && end <= buffer_.data() + end_) {
        pos_ = static_cast<size_t>(end - buffer_.data());
        continue;
      }
    }
    size_t start = pos_;
    if (chunk_start_ == kNoPin) {
      // Refill always keeps the byte before the pin, so start > 0: room for the '[' frame.
      chunk_start_ = start;
      chunk_end_ = start;
      pin_ = start;
    }
    if ((c == '{' || c == '[') && !in_place) {
      if (!ScanElementsFast(sink)) return false;
      continue;
    }
    size_t start_in_chunk = start - chunk_start_;  // Refill may move the bytes
    if (c == '}') {
      ++pos_;  // a stray '}': a one-byte malformed element, so the loop moves on
    } else if (!ScanValue()) {
      return false;
    }
    element_offsets_.push_back(static_cast<uint32_t>(start_in_chunk + 1));
    element_ends_.push_back(static_cast<uint32_t>(pos_ - chunk_start_ + 1));
    chunk_end_ = pos_;
    // In-place sinks get the elements they refused at once, to keep file order.
    if (in_place || chunk_end_ - chunk_start_ >= chunk_bytes_) FlushChunk(sink);
  }
}

Status JsonSplitter::ParseTopLevelObject(TraceChunkSink* sink) {
  ++pos_;  // '{'
  while (true) {
    if (!SkipWhitespace()) return Status::Ok();
    char c = buffer_[pos_];
    if (c == '}') {
      object_closed_ = true;
      return Status::Ok();
    }
    if (c == ',') {
      ++pos_;
      continue;
    }
    if (c != '"') {
      return ErrorStatus("{}: not a trace: unexpected '{}' at byte {}", path_, c, FileOffset(pos_));
    }
    pin_ = pos_;
    if (!ScanString()) return Status::Ok();
    std::string key(buffer_.data() + pin_ + 1, pos_ - pin_ - 2);
    pin_ = kNoPin;
    if (!SkipWhitespace()) return Status::Ok();
    if (buffer_[pos_] != ':') {
      return ErrorStatus("{}: not valid JSON: expected ':' at byte {}", path_, FileOffset(pos_));
    }
    ++pos_;
    if (!SkipWhitespace()) return Status::Ok();
    if (key == "traceEvents" && buffer_[pos_] == '[') {
      if (!ParseEventArray(sink)) return Status::Ok();
      continue;
    }
    size_t value_start = pos_;
    pin_ = value_start;
    if (!ScanValue()) return Status::Ok();
    sink->OnTopLevelValue(key, std::string_view(buffer_.data() + pin_, pos_ - pin_));
    pin_ = kNoPin;
  }
}

StatusOr<SplitResult> JsonSplitter::Run(TraceChunkSink* sink) {
  sink_ = sink;
  if (!SkipWhitespace()) {
    if (!read_problem_.empty()) return ErrorStatus("{}", read_problem_);
    return ErrorStatus("{}: empty file", path_);
  }
  // A UTF-8 byte-order mark is harmless.
  if (end_ - pos_ >= 3 && std::memcmp(buffer_.data() + pos_, "\xEF\xBB\xBF", 3) == 0) {
    pos_ += 3;
    if (!SkipWhitespace()) return ErrorStatus("{}: empty file", path_);
  }
  char first = buffer_[pos_];
  if (first == '[') {
    result_.bare_event_list = true;
    if (!ParseEventArray(sink)) {
      FlushChunk(sink);
      result_.truncated = true;
    }
  } else if (first == '{') {
    EROICA_RETURN_IF_ERROR(ParseTopLevelObject(sink));
    if (!object_closed_) {
      FlushChunk(sink);
      result_.truncated = true;
    }
  } else {
    return ErrorStatus("{}: not a JSON trace (starts with '{}')", path_, first >= 32 && first < 127 ? first : '?');
  }
  if (result_.truncated) {
    result_.truncated_at_byte = result_.bytes_read;
    result_.problem =
        read_problem_.empty() ? fmt::format("JSON is truncated at byte {}", result_.bytes_read) : read_problem_;
  }
  if (!result_.found_events) {
    if (result_.truncated) return ErrorStatus("{}: {} before any traceEvents", path_, result_.problem);
    return ErrorStatus("{}: not a PyTorch profiler trace (no traceEvents)", path_);
  }
  return result_;
}

}  // namespace eroica
