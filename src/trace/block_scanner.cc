#include "trace/block_scanner.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace eroica {
namespace {

struct RawMasks {
  uint64_t quote;
  uint64_t backslash;
  uint64_t open;
  uint64_t close;
};

[[maybe_unused]] RawMasks ClassifyScalar(const char* block) {
  RawMasks m{0, 0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    uint64_t bit = uint64_t{1} << i;
    char c = block[i];
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if (c == '{' || c == '[') m.open |= bit;
    if (c == '}' || c == ']') m.close |= bit;
  }
  return m;
}

#if defined(__x86_64__)
// '{' 0x7B and '[' 0x5B differ only in bit 0x20, as do '}' 0x7D and ']' 0x5D: one OR folds each
// pair onto one compare.
RawMasks ClassifySse2(const char* block) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i fold = _mm_set1_epi8(0x20);
  RawMasks m{0, 0, 0, 0};
  for (int lane = 0; lane < 4; ++lane) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * lane));
    __m128i folded = _mm_or_si128(v, fold);
    int shift = 16 * lane;
    m.quote |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)))) << shift;
    m.backslash |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash))))
                   << shift;
    m.open |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open)))) << shift;
    m.close |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close)))) << shift;
  }
  return m;
}

__attribute__((target("avx2"))) RawMasks ClassifyAvx2(const char* block) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m256i fold = _mm256_set1_epi8(0x20);
  RawMasks m{0, 0, 0, 0};
  for (int lane = 0; lane < 2; ++lane) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32 * lane));
    __m256i folded = _mm256_or_si256(v, fold);
    int shift = 32 * lane;
    m.quote |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)))) << shift;
    m.backslash |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash))))
                   << shift;
    m.open |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, open))))
              << shift;
    m.close |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, close))))
               << shift;
  }
  return m;
}
#endif

using Classifier = RawMasks (*)(const char*);

Classifier PickClassifier() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? ClassifyAvx2 : ClassifySse2;
#else
  return ClassifyScalar;
#endif
}

// Bit i set when byte i is the character after an escaping backslash. Escapes are rare in
// traces, so they take a plain loop.
uint64_t EscapedBits(uint64_t backslash, uint64_t* carry) {
  if (backslash == 0 && *carry == 0) return 0;
  uint64_t escaped = 0;
  bool pending = *carry != 0;
  for (int i = 0; i < 64; ++i) {
    uint64_t bit = uint64_t{1} << i;
    if (pending) {
      escaped |= bit;
      pending = false;
    } else if (backslash & bit) {
      pending = true;
    }
  }
  *carry = pending ? 1 : 0;
  return escaped;
}

// Bit i = XOR of bits 0..i: 1 from an opening quote up to (not including) its closing quote.
uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// One chunk's bytes of each kind, bit i for byte i.
struct ChunkMasks {
  uint32_t quote;
  uint32_t backslash;
  uint32_t bracket;  // '{' '[' '}' ']'
  uint32_t open;     // '{' '['
};

template <int kWidth, class Classify>
[[gnu::always_inline]] inline const char* SkipWithoutEscapes(const char* p, const char* end, int depth,
                                                             Classify classify) {
  uint32_t quotes = 0;  // quotes passed in earlier chunks (only the parity counts)
  for (const char* chunk = p; chunk < end; chunk += kWidth) {
    ChunkMasks m = classify(chunk);
    if (end - chunk < kWidth) {
      uint32_t inside = (uint32_t{1} << (end - chunk)) - 1;
      m = {m.quote & inside, m.backslash & inside, m.bracket & inside, m.open & inside};
    }
    for (uint32_t brackets = m.bracket; brackets != 0; brackets &= brackets - 1) {
      int at = __builtin_ctz(brackets);
      uint32_t before = (uint32_t{1} << at) - 1;
      if ((m.backslash & before) != 0) return nullptr;
      if (((quotes + static_cast<uint32_t>(__builtin_popcount(m.quote & before))) & 1) != 0) continue;
      if (m.open >> at & 1) {
        ++depth;
      } else if (--depth <= 0) {
        return depth == 0 ? chunk + at + 1 : nullptr;
      }
    }
    if (m.backslash != 0) return nullptr;
    quotes += static_cast<uint32_t>(__builtin_popcount(m.quote));
  }
  return nullptr;
}

[[maybe_unused]] const char* SkipScalar(const char* p, const char* end, int depth) {
  return SkipWithoutEscapes<32>(p, end, depth, [](const char* chunk) {
    ChunkMasks m{0, 0, 0, 0};
    for (int i = 0; i < 32; ++i) {
      uint32_t bit = uint32_t{1} << i;
      char c = chunk[i];
      if (c == '"') m.quote |= bit;
      if (c == '\\') m.backslash |= bit;
      if (c == '{' || c == '[' || c == '}' || c == ']') m.bracket |= bit;
      if (c == '{' || c == '[') m.open |= bit;
    }
    return m;
  });
}

#if defined(__x86_64__)
const char* SkipSse2(const char* p, const char* end, int depth) {
  return SkipWithoutEscapes<16>(p, end, depth, [](const char* chunk) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(chunk));
    __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i open = _mm_cmpeq_epi8(folded, _mm_set1_epi8('{'));
    __m128i close = _mm_cmpeq_epi8(folded, _mm_set1_epi8('}'));
    return ChunkMasks{
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')))),
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))),
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(open, close))),
        static_cast<uint32_t>(_mm_movemask_epi8(open)),
    };
  });
}

__attribute__((target("avx2,popcnt,bmi"))) const char* SkipAvx2(const char* p, const char* end, int depth) {
  return SkipWithoutEscapes<32>(
      p, end, depth, [](const char* chunk) __attribute__((target("avx2"))) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk));
        __m256i folded = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        __m256i open = _mm256_cmpeq_epi8(folded, _mm256_set1_epi8('{'));
        __m256i close = _mm256_cmpeq_epi8(folded, _mm256_set1_epi8('}'));
        return ChunkMasks{
            static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('"')))),
            static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('\\')))),
            static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(open, close))),
            static_cast<uint32_t>(_mm256_movemask_epi8(open)),
        };
      });
}
#endif

using Skipper = const char* (*)(const char*, const char*, int);

Skipper PickSkipper() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? SkipAvx2 : SkipSse2;
#else
  return SkipScalar;
#endif
}

}  // namespace

const char* SkipBracketsWithoutEscapes(const char* p, const char* end, int depth) {
  static const Skipper skip = PickSkipper();
  return skip(p, end, depth);
}

BracketMasks BlockScanner::Next(const char* block) {
  static const Classifier classify = PickClassifier();
  RawMasks raw = classify(block);
  uint64_t escaped = EscapedBits(raw.backslash, &escaped_);
  uint64_t quotes = raw.quote & ~escaped;
  uint64_t in_string = PrefixXor(quotes) ^ in_string_;
  in_string_ = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
  uint64_t structural = ~(in_string | escaped);
  return {raw.open & structural, raw.close & structural};
}

}  // namespace eroica
