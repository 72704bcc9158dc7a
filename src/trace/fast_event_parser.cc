#include "trace/fast_event_parser.h"

#include <simdjson.h>

#include <cctype>
#include <cstring>
#include <limits>

#include "trace/event_verdict.h"
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
           (((bytes >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >> 32;
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
  __m128i digits = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                 _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
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

// The first '"', '{', '[', '}' or ']' in [p, end), or end. Loads may run 15 bytes past end.
inline const char* FindStructural(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open = _mm_set1_epi8('{');   // '[' | 0x20
  const __m128i close = _mm_set1_epi8('}');  // ']' | 0x20
  const __m128i fold = _mm_set1_epi8(0x20);
  for (; p < end; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i folded = _mm_or_si128(v, fold);
    __m128i hits = _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)));
    auto mask = static_cast<unsigned>(_mm_movemask_epi8(hits));
    if (mask != 0) {
      const char* hit = p + __builtin_ctz(mask);
      return hit < end ? hit : end;
    }
  }
  return end;
#else
  while (p < end && *p != '"' && *p != '{' && *p != '[' && *p != '}' && *p != ']') ++p;
  return p;
#endif
}

constexpr int64_t kMaxPlainMicros = std::numeric_limits<int64_t>::max() / 1000 - 1;

// The first '"' or '\\' in [p, end), or end. Loads may run up to 15 bytes past `end`.
inline const char* FindQuoteOrBackslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; p < end; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    auto mask = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
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

bool IsKey(std::string_view key, std::string_view name) { return key == name; }

}  // namespace

int DtypeBytes(std::string_view dtype) {
  if (dtype == "Float" || dtype == "Int" || dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "BFloat16" || dtype == "Half" || dtype == "Short") return 2;
  if (dtype == "Double" || dtype == "Long" || dtype == "ComplexFloat") return 8;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype.starts_with("Float8")) return 1;
  return 0;
}

// A position inside one element. Every method fails (returns false) rather than guess.
struct FastEventParser::Cursor {
  const char* p;
  const char* end;

  void SkipSpace() { p = SkipSpaces(p, end); }

  // Decimal digits without sign, fraction or exponent, then a delimiter: pids, tids, ids.
  // False (cursor unmoved) for anything else, which the exact parsers then take.
  bool PlainInteger(int64_t* out) {
    uint64_t value = 0;
    const char* q = Digits(p, end, &value);
    if (q == nullptr || q == p || (q < end && !IsDelimiter(*q))) return false;
    *out = static_cast<int64_t>(value);
    p = q;
    return true;
  }
  // Microseconds as Kineto writes them ("1669783687464181", "4458676522690.655") into
  // nanoseconds, with ParseMicrosToNanos's rounding. False (cursor unmoved) for anything else.
  bool PlainMicros(int64_t* ns) {
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
  bool PlainString(std::string_view* out) {
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
  // From inside an object or array `depth` levels deep: past the bracket that closes it.
  bool SkipToDepthZero(int depth) {
    while (p < end) {
      p = FindStructural(p, end);
      if (p >= end) return false;
      char ch = *p;
      if (ch == '"') {
        if (!SkipString()) return false;
        continue;
      }
      if (ch == '{' || ch == '[') {
        ++depth;
      } else if (--depth <= 0) {
        ++p;
        return depth == 0;
      }
      ++p;
    }
    return false;
  }
  bool SkipValue() {
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

bool FastEventParser::ParseArgs(Cursor* c, TraceEvent* event) {
  bool empty = false;
  if (!c->OpenObject(&empty)) return false;
  int64_t in_nelems = -1;
  int dtype_bytes = 0;
  for (bool more = !empty; more;) {
    std::string_view key, token;
    if (!c->Key(&key)) return false;
    bool integer = IsKey(key, "correlation") || IsKey(key, "External id") || IsKey(key, "bytes") ||
                   IsKey(key, "In msg nelems");
    if (integer) {
      int64_t plain = 0;
      std::optional<int64_t> n;
      if (c->PlainInteger(&plain)) {
        n = plain;
      } else if (c->ValueToken(&token)) {
        n = ParseInteger(token);
      } else {
        return false;
      }
      if (n) {
        if (key[0] == 'c') event->correlation = *n;
        if (key[0] == 'E') event->external_id = *n;
        if (key[0] == 'b') event->bytes = *n;
        if (key[0] == 'I') in_nelems = *n;
      }
    } else if (IsKey(key, "Input Dims") && *c->p == '[') {
      const char* start = c->p;
      if (!c->SkipCompound()) return false;
      StringId shapes = InternShapes(std::string_view(start, static_cast<size_t>(c->p - start)));
      if (shapes == kNoString) return false;
      event->shapes = shapes;
    } else if ((IsKey(key, "Collective name") || IsKey(key, "dtype")) && *c->p == '"') {
      std::string_view text;
      if (!c->PlainString(&text) || !simdjson::validate_utf8(text.data(), text.size())) return false;
      if (key[0] == 'C') {
        event->collective = trace_->strings.Intern(text);
      } else {
        dtype_bytes = DtypeBytes(text);
      }
    } else if (!c->SkipValue()) {
      return false;
    }
    if (!c->Next(&more)) return false;
  }
  if (event->bytes < 0 && in_nelems >= 0 && dtype_bytes > 0) event->bytes = in_nelems * dtype_bytes;
  return true;
}

const char* FastEventParser::Parse(const char* begin, const char* limit, TraceEvent* event, Result* result) {
  *result = Parse(begin, limit, event);
  return *result == Result::kUnsure ? nullptr : end_;
}

FastEventParser::Result FastEventParser::Parse(const char* begin, const char* limit, TraceEvent* event) {
  Cursor c{begin, limit};
  bool empty = false;
  if (!c.OpenObject(&empty)) return Result::kUnsure;
  char phase = 0;
  bool has_ts = false, has_dur = false, bad_number = false;
  for (bool more = !empty; more;) {
    std::string_view key, text;
    if (!c.Key(&key)) return Result::kUnsure;
    char first = key.empty() ? 0 : key[0];
    if ((first == 't' && IsKey(key, "ts")) || (first == 'd' && IsKey(key, "dur"))) {
      int64_t plain = 0;
      std::optional<int64_t> ns;
      if (c.PlainMicros(&plain)) {
        ns = plain;
      } else if (c.ValueToken(&text)) {
        ns = ParseMicrosToNanos(text);
      } else {
        return Result::kUnsure;
      }
      if (!ns) {
        bad_number = true;
      } else if (first == 't') {
        event->ts_ns = *ns;
        has_ts = true;
      } else {
        event->dur_ns = *ns;
        has_dur = true;
      }
    } else if (first == 'n' && IsKey(key, "name")) {
      if (*c.p != '"' || !c.PlainString(&text)) return Result::kUnsure;
      event->name = InternEventName(text);
      if (event->name == kNoString) return Result::kUnsure;
    } else if (first == 'c' && IsKey(key, "cat")) {
      if (*c.p != '"' || !c.PlainString(&text)) return Result::kUnsure;
      event->cat = InternCat(text);
      if (event->cat == kNoString) return Result::kUnsure;
    } else if (first == 'p' && IsKey(key, "ph")) {
      if (*c.p != '"' || !c.PlainString(&text) || text.empty()) return Result::kUnsure;
      phase = text[0];
      // Only complete events are kept: the rest of a flow, instant, counter or metadata event
      // is skipped unread (they are 40% of the events in GPU traces; Kineto writes "ph" first).
      if (phase != 'X') {
        if (!c.SkipToDepthZero(1)) return Result::kUnsure;
        break;
      }
    } else if ((first == 'p' && IsKey(key, "pid")) || (first == 't' && IsKey(key, "tid"))) {
      int64_t* id = first == 'p' ? &event->pid : &event->tid;
      if (*c.p == '"') {
        if (!c.PlainString(&text) || !simdjson::validate_utf8(text.data(), text.size())) return Result::kUnsure;
        *id = kStringPidBase + trace_->strings.Intern(text);
      } else {
        if (*c.p == '{' || *c.p == '[') return Result::kUnsure;
        if (!c.PlainInteger(id)) {
          std::optional<int64_t> n = ParseInteger(c.Scalar());
          if (!n) return Result::kUnsure;
          *id = *n;
        }
      }
    } else if (first == 'a' && IsKey(key, "args") && *c.p == '{') {
      if (!ParseArgs(&c, event)) return Result::kUnsure;
    } else if (!c.SkipValue()) {
      return Result::kUnsure;
    }
    if (!c.Next(&more)) return Result::kUnsure;
  }
  end_ = c.p;

  switch (JudgeEvent(phase, has_ts, has_dur, bad_number, event->dur_ns, &trace_->stats)) {
    case EventVerdict::kKeep:
      return Result::kKept;
    case EventVerdict::kCounted:
      return Result::kCounted;
    case EventVerdict::kNoPhase:
      return Result::kUnsure;  // no phase: malformed (simdjson decides)
  }
  return Result::kUnsure;
}

}  // namespace eroica
