// Classifies JSON text 64 bytes at a time: which brackets lie outside strings. The splitter uses
// it to find where the events of traceEvents end without a byte-at-a-time walk. This is
// simdjson's stage-1 idea cut down to what framing needs: quote and backslash bitmasks, escaped
// quotes removed, a prefix XOR for "inside a string", brackets outside strings.
#pragma once

#include <cstdint>

namespace eroica {

struct BracketMasks {
  uint64_t open = 0;   // bit i: byte i is '{' or '[' outside any string
  uint64_t close = 0;  // bit i: byte i is '}' or ']' outside any string
};

class BlockScanner {
 public:
  // `block` must have 64 readable bytes. Blocks are fed in order; the scanner carries whether
  // the previous one ended inside a string or after an unpaired backslash.
  BracketMasks Next(const char* block);

 private:
  uint64_t in_string_ = 0;  // all ones when the previous block ended inside a string
  uint64_t escaped_ = 0;    // 1 when the previous block ended with an unpaired backslash
};

// From `p` outside strings, `depth` levels deep in objects and arrays: the byte after the bracket
// that closes the outermost, or nullptr where a backslash or `end` comes first (the caller then
// takes BlockScanner's walk, which handles escapes). Whether a bracket lies inside a string is the
// parity of the quotes before it, so a value with few brackets (the rest of a flow event, an
// args array) costs a few compares per 32 bytes. Loads run up to 31 bytes past `end`.
const char* SkipBracketsWithoutEscapes(const char* p, const char* end, int depth);

}  // namespace eroica
