// The fast path for one trace event: a hand-written walk over one JSON object that reads the
// fields a ParsedEvent keeps and skips the rest without building anything. It covers the events
// profilers write (keys and kept strings without escapes, numbers where numbers belong); on
// anything else it answers kUnsure, and the caller parses that event with simdjson, which
// decides exactly. The walk never reads past the element, except for SIMD loads into the
// buffer's padding whose results beyond the element are ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace/layout_trie.h"
#include "trace/string_cache.h"
#include "trace/trace.h"

namespace eroica {

class FastEventParser {
 public:
  enum class Result { kKept, kCounted, kUnsure };

  // `learn_layouts` off reads every event by the full walk (to check the layout walk against).
  explicit FastEventParser(Trace* trace, bool learn_layouts = true) : trace_(trace), layouts_on_(learn_layouts) {}

  // Parses the object that opens at `begin` into `event` (default-constructed), reading nothing
  // past `limit` but for SIMD loads into the 64 bytes after it (callers' buffers keep
  // kJsonPadding, 128 bytes, readable there). Returns the byte after the object's '}' and sets
  // *result, or returns nullptr when unsure (then trace->stats is untouched). A `limit` that
  // cuts the object makes it unsure.
  const char* Parse(const char* begin, const char* limit, ParsedEvent* event, Result* result);

  // Past the whitespace and the one ',' that follow an element, if that is what follows.
  static const char* SkipSeparator(const char* p, const char* limit);

  // Interning shared with the simdjson path; kNoString for text that is not valid UTF-8.
  static constexpr StringId kNoString = StringCache::kNoString;
  StringId InternEventName(std::string_view raw);  // folds object addresses (0x7f...)
  StringId InternCat(std::string_view raw);
  StringId InternShapes(std::string_view raw);  // the first 512 bytes of args["Input Dims"]

 private:
  struct Cursor;
  struct EventState;
  // The layout of the event being read by the full walk, for the trie to learn.
  struct Layout {
    const char* last_end = nullptr;  // where the previous value ended
    std::vector<LayoutTrie::Step> steps;
    bool learnable = true;
    void Start(const char* begin) {
      last_end = begin;
      steps.clear();
      learnable = true;
    }
    void Add(const char* value_start, Field field) {
      steps.push_back({std::string_view(last_end, static_cast<size_t>(value_start - last_end)), field});
    }
    // The value just read (ending at `value_end`) becomes part of the last step's gap.
    void Fix(const char* value_end, Field fixed, uint32_t value) {
      LayoutTrie::Step& step = steps.back();
      step.gap = std::string_view(step.gap.data(), static_cast<size_t>(value_end - step.gap.data()));
      step.field = fixed;
      step.value = value;
    }
  };
  // Events whose layout could not be learned (trie full, gap too long) before layouts are
  // given up on for this trace.
  static constexpr int kMaxUnlearned = 1024;
  // Phase and cat values up to this many bytes (quotes included) become part of a layout.
  static constexpr int kMaxFixedValue = 24;

  // The full walk: key by key, recording the layout.
  Result Parse(const char* begin, const char* limit, ParsedEvent* event, Layout* layout);
  bool ParseArgs(Cursor* c, ParsedEvent* event, EventState* state, Layout* layout);
  // The walk along a learned layout: kUnsure as soon as the event leaves it.
  Result ParseByLayout(const char* begin, const char* limit, ParsedEvent* event);
  bool ReadValue(Field field, Cursor* c, ParsedEvent* event, EventState* state);
  Result Judge(const EventState& state, const ParsedEvent& event);

  Trace* trace_;
  LayoutTrie layouts_;
  Layout layout_;
  bool layouts_on_;
  int unlearned_ = 0;
  StringCache names_;
  StringCache cats_;
  StringCache shapes_;
  std::string scratch_;
  const char* end_ = nullptr;  // where the last object parsed ended
};

}  // namespace eroica
