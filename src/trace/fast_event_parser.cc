#include "trace/fast_event_parser.h"

#include <simdjson.h>

#include <cctype>
#include <cstring>
#include <limits>

#include "trace/block_scanner.h"
#include "trace/event_field.h"
#include "trace/event_verdict.h"
#include "trace/layout_trie.h"
#include "trace/timestamp.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace eroica {
namespace {

// Outside strings, valid JSON has no control characters but whitespace: every byte up to ' '
// is taken as whitespace (lenient on the invalid rest).
inline bool IsSpace(char c) { return static_cast<unsigned char>(c) <= ' '; }

inline bool IsDelimiter(char c) { return c == ',' || c == '}' || c == ']' || IsSpace(c); }

inline bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// The first byte in [p, end) that is not whitespace, or end. Reads up to 16 bytes past end
// (p is never past end; the bytes after it are padding or more JSON).
inline const char* SkipSpaces(const char* p, const char* end) {
  if (!IsSpace(*p)) return p;  // most calls: no space, or one
  if (!IsSpace(p[1])) return p + 1 <= end ? p + 1 : end;
  ++p;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  for (; p < end; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // bytes <= ' ': max(v, ' ') == ' '
    auto spaces = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, space), space)));
    if (spaces != 0xFFFF) {
      const char* hit = p + __builtin_ctz(~spaces);
      return hit < end ? hit : end;
    }
  }
  return end;
#else
  while (p < end && IsSpace(*p)) ++p;
  return p;
#endif
}

// Up to eight digit values (0..9, one per byte, first digit in the lowest byte) as a number:
// SWAR, three multiplies instead of eight dependent steps.
inline uint64_t DigitBytesToNumber(uint64_t bytes) {
  bytes = (bytes * 10) + (bytes >> 8);
  bytes = (((bytes & 0x000000FF000000FFull) * 0x000F424000000064ull) +
           (((bytes >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >>
          32;
  return static_cast<uint32_t>(bytes);
}

// The first n (1..8) bytes at p, which are digits, as a number. Reads 8 bytes.
inline uint64_t FirstDigits(const char* p, int n) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  v -= 0x3030303030303030ull;
  return DigitBytesToNumber(v << (8 * (8 - n)));  // the bytes past n become leading zeros
}

constexpr uint64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

// The decimal digits at p (none read as digits past `end`): their value in *value, and the
// byte after them. nullptr for more than 16 digits (left to the exact parsers). Loads may
// read 16 bytes from p: callers stay within the padded buffer.
inline const char* Digits(const char* p, const char* end, uint64_t* value) {
  int n = 0;
#if defined(__SSE2__)
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i digits = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
  auto mask = static_cast<unsigned>(_mm_movemask_epi8(digits));
  if (mask == 0xFFFF) {
    if (end - p > 16 && IsDigit(p[16])) return nullptr;
    n = 16;
  } else {
    n = __builtin_ctz(~mask);
  }
#else
  while (n <= 16 && p + n < end && IsDigit(p[n])) ++n;
  if (n > 16) return nullptr;
#endif
  if (n > end - p) n = static_cast<int>(end - p);
  if (n == 0) {
    *value = 0;
    return p;
  }
  if (n <= 8) {
    *value = FirstDigits(p, n);
  } else {
    *value = FirstDigits(p, 8) * kPow10[n - 8] + FirstDigits(p + 8, n - 8);
  }
  return p + n;
}

constexpr int64_t kMaxPlainMicros = std::numeric_limits<int64_t>::max() / 1000 - 1;

// The first '"' or '\\' in [p, end), or end. Loads may run up to 15 bytes past `end`.
inline const char* FindQuoteOrBackslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; p < end; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    auto mask =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
    if (mask != 0) {
      const char* hit = p + __builtin_ctz(mask);
      return hit < end ? hit : end;
    }
  }
  return end;
#else
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
#endif
}

}  // namespace

// A position inside one element. Every method fails (returns false) rather than guess.
struct FastEventParser::Cursor {
  const char* p;
  const char* end;

  void SkipSpace() { p = SkipSpaces(p, end); }

  // Decimal digits without sign, fraction or exponent, then a delimiter: pids, tids, ids.
  // False (cursor unmoved) for anything else, which the exact parsers then take.
  [[gnu::always_inline]] bool PlainInteger(int64_t* out) {
    uint64_t value = 0;
    const char* q = Digits(p, end, &value);
    if (q == nullptr || q == p || (q < end && !IsDelimiter(*q))) return false;
    *out = static_cast<int64_t>(value);
    p = q;
    return true;
  }
  // Microseconds as Kineto writes them ("1669783687464181", "4458676522690.655") into
  // nanoseconds, with ParseMicrosToNanos's rounding. False (cursor unmoved) for anything else.
  [[gnu::always_inline]] bool PlainMicros(int64_t* ns) {
    uint64_t micros = 0;
    const char* q = Digits(p, end, &micros);
    if (q == nullptr || q == p || micros > static_cast<uint64_t>(kMaxPlainMicros)) return false;
    int64_t fraction = 0;
    if (q < end && *q == '.') {
      const char* first = ++q;
      int used = 0;
      bool round_up = false;
      for (; q < end && IsDigit(*q); ++q, ++used) {
        if (used < 3) fraction = fraction * 10 + (*q - '0');
        if (used == 3) round_up = *q >= '5';
      }
      if (q == first) return false;
      for (int d = used; d < 3; ++d) fraction *= 10;
      if (round_up) ++fraction;
    }
    if (q < end && !IsDelimiter(*q)) return false;
    *ns = static_cast<int64_t>(micros) * 1000 + fraction;
    p = q;
    return true;
  }
  // At a '"': the text up to the closing quote, which must come before any backslash.
  [[gnu::always_inline]] bool PlainString(std::string_view* out) {
    const char* start = p + 1;
    const char* q = FindQuoteOrBackslash(start, end);
    if (q >= end || *q != '"') return false;
    *out = std::string_view(start, static_cast<size_t>(q - start));
    p = q + 1;
    return true;
  }
  // At a '"': past the closing quote, escapes allowed; `token` gets the string with quotes.
  bool SkipString(std::string_view* token = nullptr) {
    const char* start = p;
    const char* q = p + 1;
    while (true) {
      q = FindQuoteOrBackslash(q, end);
      if (q >= end) return false;
      if (*q == '"') break;
      q += 2;  // the escaped character
    }
    p = q + 1;
    if (token != nullptr) *token = std::string_view(start, static_cast<size_t>(p - start));
    return true;
  }
  // A number, true, false or null: up to the next ',', '}', ']' or whitespace.
  std::string_view Scalar() {
    const char* start = p;
    while (p < end && !IsDelimiter(*p)) ++p;
    return std::string_view(start, static_cast<size_t>(p - start));
  }
  // At '{' or '[': past the matching bracket.
  bool SkipCompound() { return SkipToDepthZero(0); }
  // From just after a member of the event object (outside strings): past the '}' that closes
  // the event.
  bool SkipRestOfEvent() { return SkipToDepthZero(1); }
  // From outside strings, `depth` levels deep in objects and arrays: past the bracket that
  // closes the outermost, without a search per string: the rest of a flow or instant event,
  // or an array of strings in args. Values without a backslash (nearly all) take the quote-
  // parity skip, 32 bytes a compare; the rest walk 64-byte blocks whose brackets outside
  // strings come as bitmasks (the block scanner's, which knows escapes). Loads run up to 63
  // bytes past `end` (inside kJsonPadding).
  bool SkipToDepthZero(int depth) {
    if (const char* after = SkipBracketsWithoutEscapes(p, end, depth)) {
      p = after;
      return true;
    }
    BlockScanner scanner;
    for (const char* block = p; block < end; block += 64) {
      BracketMasks masks = scanner.Next(block);
      uint64_t inside = end - block >= 64 ? ~uint64_t{0} : (uint64_t{1} << (end - block)) - 1;
      for (uint64_t brackets = (masks.open | masks.close) & inside; brackets != 0; brackets &= brackets - 1) {
        int at = __builtin_ctzll(brackets);
        if (masks.open >> at & 1) {
          ++depth;
        } else if (--depth <= 0) {
          p = block + at + 1;
          return depth == 0;
        }
      }
    }
    return false;
  }
  [[gnu::always_inline]] bool SkipValue() {
    if (p >= end) return false;
    if (*p == '"') return SkipString();
    if (*p == '{' || *p == '[') return SkipCompound();
    if (IsDigit(*p)) {
      uint64_t ignored;
      const char* q = Digits(p, end, &ignored);
      if (q != nullptr && (q >= end || IsDelimiter(*q))) {
        p = q;
        return true;
      }
    }
    return !Scalar().empty();
  }
  // A scalar's token, or a string's / compound's whole text (which no number parser accepts).
  bool ValueToken(std::string_view* token) {
    const char* start = p;
    if (p >= end) return false;
    if (*p == '"') return SkipString(token);
    if (*p == '{' || *p == '[') {
      if (!SkipCompound()) return false;
      *token = std::string_view(start, static_cast<size_t>(p - start));
      return true;
    }
    *token = Scalar();
    return !token->empty();
  }
  // `"key" :` with p left at the value. Keys with escapes are left to simdjson.
  bool Key(std::string_view* key) {
    SkipSpace();
    if (p >= end || *p != '"' || !PlainString(key)) return false;
    SkipSpace();
    if (p >= end || *p != ':') return false;
    ++p;
    SkipSpace();
    return p < end;
  }
  // After a member: sets *more and steps past ',' or the closing '}'.
  bool Next(bool* more) {
    SkipSpace();
    if (p >= end) return false;
    if (*p == ',') {
      ++p;
      *more = true;
      return true;
    }
    if (*p == '}') {
      ++p;
      *more = false;
      return true;
    }
    return false;
  }
  // At '{': past it; *empty when it closes right away.
  bool OpenObject(bool* empty) {
    if (p >= end || *p != '{') return false;
    ++p;
    SkipSpace();
    *empty = p < end && *p == '}';
    if (*empty) ++p;
    return true;
  }
};

const char* FastEventParser::SkipSeparator(const char* p, const char* limit) {
  const char* q = SkipSpaces(p, limit);
  if (q >= limit || *q != ',') return p;
  return SkipSpaces(q + 1, limit);
}

StringId FastEventParser::InternEventName(std::string_view raw) {
  return names_.Find(raw, [this](std::string_view name) -> StringId {
    if (!simdjson::validate_utf8(name.data(), name.size())) return kNoString;
    // Addresses make otherwise equal names unique ("<built-in method numel of Tensor object at
    // 0x7fdc6...>"): drop the hex digits before interning.
    if (name.find("0x") == std::string_view::npos) return trace_->strings.Intern(name);
    scratch_.clear();
    for (size_t i = 0; i < name.size(); ++i) {
      scratch_.push_back(name[i]);
      if (name[i] == '0' && i + 1 < name.size() && name[i + 1] == 'x') {
        scratch_.push_back('x');
        i += 2;
        while (i < name.size() && std::isxdigit(static_cast<unsigned char>(name[i]))) ++i;
        --i;
      }
    }
    return trace_->strings.Intern(scratch_);
  });
}

StringId FastEventParser::InternCat(std::string_view raw) {
  return cats_.Find(raw, [this](std::string_view cat) -> StringId {
    if (!simdjson::validate_utf8(cat.data(), cat.size())) return kNoString;
    return trace_->strings.Intern(cat);
  });
}

StringId FastEventParser::InternShapes(std::string_view raw) {
  raw = raw.substr(0, 512);
  return shapes_.Find(raw, [this](std::string_view shapes) -> StringId {
    if (!simdjson::validate_utf8(shapes.data(), shapes.size())) return kNoString;
    return trace_->strings.Intern(shapes);
  });
}

// What an event's members have said so far that only counts once the event (or its args) ends.
struct FastEventParser::EventState {
  char phase = 0;
  bool has_ts = false;
  bool has_dur = false;
  bool bad_number = false;
  int64_t in_nelems = -1;  // of the args being read
  int dtype_bytes = 0;

  // A collective's size from its element count and dtype, when args had no "bytes".
  void CloseArgs(ParsedEvent* event) {
    event->bytes = ArgsBytes(event->bytes, in_nelems, dtype_bytes);
    in_nelems = -1;
    dtype_bytes = 0;
  }
};

// Reads the value at the cursor as `field` says; kArgs and kEnd are the callers'. False when
// unsure of the value.
[[gnu::always_inline]] inline bool FastEventParser::ReadValue(Field field, Cursor* c, ParsedEvent* event,
                                                              EventState* state) {
  std::string_view text;
  switch (field) {
    case Field::kTs:
    case Field::kDur: {
      int64_t plain = 0;
      std::optional<int64_t> ns;
      if (c->PlainMicros(&plain)) {
        ns = plain;
      } else if (c->ValueToken(&text)) {
        ns = ParseMicrosToNanos(text);
      } else {
        return false;
      }
      if (!ns) {
        state->bad_number = true;
      } else if (field == Field::kTs) {
        event->ts_ns = *ns;
        state->has_ts = true;
      } else {
        event->dur_ns = *ns;
        state->has_dur = true;
      }
      return true;
    }
    case Field::kName:
      if (*c->p != '"' || !c->PlainString(&text)) return false;
      event->name = InternEventName(text);
      return event->name != kNoString;
    case Field::kCat:
      if (*c->p != '"' || !c->PlainString(&text)) return false;
      event->cat = InternCat(text);
      return event->cat != kNoString;
    case Field::kPhase:
      if (*c->p != '"' || !c->PlainString(&text) || text.empty()) return false;
      state->phase = text[0];
      return true;
    case Field::kPid:
    case Field::kTid: {
      int64_t* id = field == Field::kPid ? &event->pid : &event->tid;
      if (*c->p == '"') {
        if (!c->PlainString(&text) || !simdjson::validate_utf8(text.data(), text.size())) return false;
        *id = kStringPidBase + trace_->strings.Intern(text);
        return true;
      }
      if (*c->p == '{' || *c->p == '[') return false;
      if (c->PlainInteger(id)) return true;
      std::optional<int64_t> n = ParseInteger(c->Scalar());
      if (!n) return false;
      *id = *n;
      return true;
    }
    case Field::kCorrelation:
    case Field::kBytes:
    case Field::kInMsgNelems: {
      int64_t plain = 0;
      std::optional<int64_t> n;
      if (c->PlainInteger(&plain)) {
        n = plain;
      } else if (c->ValueToken(&text)) {
        n = ParseInteger(text);
      } else {
        return false;
      }
      if (!n) return true;
      if (field == Field::kCorrelation) event->correlation = *n;
      if (field == Field::kBytes) event->bytes = *n;
      if (field == Field::kInMsgNelems) state->in_nelems = *n;
      return true;
    }
    case Field::kInputDims: {
      if (*c->p != '[') return c->SkipValue();
      const char* start = c->p;
      if (!c->SkipCompound()) return false;
      StringId shapes = InternShapes(std::string_view(start, static_cast<size_t>(c->p - start)));
      if (shapes == kNoString) return false;
      event->shapes = shapes;
      return true;
    }
    case Field::kCollective:
    case Field::kDtype:
      if (*c->p != '"') return c->SkipValue();
      if (!c->PlainString(&text) || !simdjson::validate_utf8(text.data(), text.size())) return false;
      if (field == Field::kCollective) {
        event->collective = trace_->strings.Intern(text);
      } else {
        state->dtype_bytes = DtypeBytes(text);
      }
      return true;
    case Field::kSkip:
    case Field::kArgs:  // args that are not an object are skipped
      return c->SkipValue();
    case Field::kEnd:
    case Field::kFixedPhase:
    case Field::kFixedCat:
      return false;  // not values the walks read
  }
  return false;
}

bool FastEventParser::ParseArgs(Cursor* c, ParsedEvent* event, EventState* state, Layout* layout) {
  bool empty = false;
  if (!c->OpenObject(&empty)) return false;
  for (bool more = !empty; more;) {
    std::string_view key;
    if (!c->Key(&key)) return false;
    Field field = ArgsField(key);
    layout->Add(c->p, field);
    if (!ReadValue(field, c, event, state)) return false;
    layout->last_end = c->p;
    if (!c->Next(&more)) return false;
  }
  state->CloseArgs(event);
  return true;
}

const char* FastEventParser::Parse(const char* begin, const char* limit, ParsedEvent* event, Result* result) {
  if (layouts_on_) {
    *result = ParseByLayout(begin, limit, event);
    if (*result != Result::kUnsure) return end_;
    *event = ParsedEvent{};  // the full walk starts over
  }
  layout_.Start(begin);
  *result = Parse(begin, limit, event, &layout_);
  if (*result == Result::kUnsure) return nullptr;
  if (layouts_on_ && layout_.learnable && !layouts_.Learn(layout_.steps) && ++unlearned_ > kMaxUnlearned) {
    layouts_on_ = false;  // events that do not repeat: every layout walk would be wasted
  }
  return end_;
}

FastEventParser::Result FastEventParser::Judge(const EventState& state, const ParsedEvent& event) {
  switch (JudgeEvent(state.phase, state.has_ts, state.has_dur, state.bad_number, event.dur_ns, &trace_->stats)) {
    case EventVerdict::kKeep:
      return Result::kKept;
    case EventVerdict::kCounted:
      return Result::kCounted;
    case EventVerdict::kNoPhase:
      return Result::kUnsure;  // no phase: malformed (simdjson decides)
  }
  return Result::kUnsure;
}

FastEventParser::Result FastEventParser::ParseByLayout(const char* begin, const char* limit, ParsedEvent* event) {
  Cursor c{begin, limit};
  EventState state;
  uint32_t node = LayoutTrie::kRoot;
  while (true) {
    node = layouts_.MatchChild(node, c.p, limit);
    if (node == LayoutTrie::kNone) return Result::kUnsure;
    c.p += layouts_.gap_size(node);
    Field field = layouts_.field(node);
    if (field == Field::kEnd) {
      state.CloseArgs(event);
      end_ = c.p;
      return Judge(state, *event);
    }
    if (field == Field::kArgs) {
      // The layout has the args' members next. At the limit, the byte there is padding or stale
      // bytes of an earlier read, never this event's.
      if (c.p >= limit || *c.p != '{') return Result::kUnsure;
      state.CloseArgs(event);
      ++c.p;
      continue;
    }
    if (field == Field::kFixedCat) {
      event->cat = layouts_.value(node);
      continue;
    }
    if (field == Field::kFixedPhase) {
      state.phase = static_cast<char>(layouts_.value(node));
    } else if (!ReadValue(field, &c, event, &state)) {
      return Result::kUnsure;
    }
    if ((field == Field::kPhase || field == Field::kFixedPhase) && state.phase != 'X') {
      if (!c.SkipRestOfEvent()) return Result::kUnsure;
      end_ = c.p;
      return Judge(state, *event);
    }
  }
}

FastEventParser::Result FastEventParser::Parse(const char* begin, const char* limit, ParsedEvent* event,
                                               Layout* layout) {
  Cursor c{begin, limit};
  bool empty = false;
  if (!c.OpenObject(&empty)) return Result::kUnsure;
  EventState state;
  for (bool more = !empty; more;) {
    std::string_view key;
    if (!c.Key(&key)) return Result::kUnsure;
    Field field = TopLevelField(key);
    layout->Add(c.p, field);
    if (field == Field::kArgs && *c.p != '{') layout->learnable = false;  // layouts expect an object
    if (field == Field::kArgs && *c.p == '{') {
      layout->last_end = c.p + 1;
      if (!ParseArgs(&c, event, &state, layout)) return Result::kUnsure;
    } else {
      const char* value_start = c.p;
      if (!ReadValue(field, &c, event, &state)) return Result::kUnsure;
      layout->last_end = c.p;
      if (c.p - value_start <= kMaxFixedValue) {
        if (field == Field::kPhase) layout->Fix(c.p, Field::kFixedPhase, static_cast<unsigned char>(state.phase));
        if (field == Field::kCat) layout->Fix(c.p, Field::kFixedCat, event->cat);
      }
      // Only complete events are kept: the rest of a flow, instant, counter or metadata event
      // is skipped unread (they are 40% of the events in GPU traces; Kineto writes "ph" first).
      if (field == Field::kPhase && state.phase != 'X') {
        if (!c.SkipRestOfEvent()) return Result::kUnsure;
        end_ = c.p;
        return Judge(state, *event);
      }
    }
    if (!c.Next(&more)) return Result::kUnsure;
  }
  end_ = c.p;
  layout->Add(end_, Field::kEnd);
  return Judge(state, *event);
}

}  // namespace eroica
