// The fast path for one trace event: a hand-written walk over one JSON object that reads the
// fields a TraceEvent keeps and skips the rest without building anything. It covers the events
// profilers write (keys and kept strings without escapes, numbers where numbers belong); on
// anything else it answers kUnsure, and the caller parses that event with simdjson, which
// decides exactly. The walk never reads past the element, except for SIMD loads into the
// buffer's padding whose results beyond the element are ignored.
#pragma once

#include <string>
#include <string_view>

#include "trace/string_cache.h"
#include "trace/trace.h"

namespace eroica {

// Bytes per element of a PyTorch dtype name ("Float", "BFloat16"), 0 when unknown.
int DtypeBytes(std::string_view dtype);

class FastEventParser {
 public:
  enum class Result { kKept, kCounted, kUnsure };

  explicit FastEventParser(Trace* trace) : trace_(trace) {}

  // Parses the object that opens at `begin`, reading nothing past `limit` but for SIMD loads into
  // the 16 bytes after it. Returns the byte after the object's '}' and sets *result, or returns
  // nullptr when unsure (then trace->stats is untouched). A `limit` that cuts the object makes
  // it unsure.
  const char* Parse(const char* begin, const char* limit, TraceEvent* event, Result* result);

  // Past the whitespace and the one ',' that follow an element, if that is what follows.
  static const char* SkipSeparator(const char* p, const char* limit);

  // Interning shared with the simdjson path; kNoString for text that is not valid UTF-8.
  static constexpr StringId kNoString = StringCache::kNoString;
  StringId InternEventName(std::string_view raw);  // folds object addresses (0x7f...)
  StringId InternCat(std::string_view raw);
  StringId InternShapes(std::string_view raw);     // the first 512 bytes of args["Input Dims"]

 private:
  struct Cursor;
  Result Parse(const char* begin, const char* limit, TraceEvent* event);
  bool ParseArgs(Cursor* c, TraceEvent* event);

  Trace* trace_;
  StringCache names_;
  StringCache cats_;
  StringCache shapes_;
  std::string scratch_;
  const char* end_ = nullptr;  // where the last object parsed ended
};

}  // namespace eroica
