// The layouts of the events a trace has shown so far, learned as it is read. A profiler writes
// every event of a kind with the same keys, in the same order, with the same whitespace: only
// the values change. The bytes between two values (`", "cat": "` or `,\n    "ts": `) therefore
// repeat, and one comparison of those bytes against a learned layout stands for the whole walk
// over separators, whitespace, key and colon, and for deciding what the key means.
//
// The trie's nodes are the members of events in file order: each holds the bytes before one
// value and what that value is (its Field); a path from the root is one event layout. Layouts
// are learned from events the full parser read, so a matched path means the bytes around the
// values are exactly ones the full parser accepted at the same place in an event.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event_field.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace eroica {

class LayoutTrie {
 public:
  static constexpr uint32_t kRoot = 0;
  static constexpr uint32_t kNone = 0xFFFFFFFF;
  // Bytes before one value that a layout may hold; longer gaps are not learned.
  static constexpr size_t kMaxGap = 192;
  // A trace whose events do not repeat must not grow the trie without bound.
  static constexpr size_t kMaxNodes = 1 << 14;

  struct Step {
    std::string_view gap;  // the bytes before the value (for kEnd: up to the event's end)
    Field field;
    uint32_t value = 0;  // for kFixedPhase / kFixedCat: what the value reads as
  };

  LayoutTrie();

  // The child of `node` whose gap is the bytes at p (p + gap <= limit), the one matched last
  // time first; kNone when none is. Loads may run 15 bytes past `limit`.
  uint32_t MatchChild(uint32_t node, const char* p, const char* limit) {
    Node& parent = nodes_[node];
    uint32_t hot = parent.hot_child;
    if (hot != kNone && Matches(nodes_[hot], p, limit)) return hot;
    return MatchOtherChild(node, p, limit);
  }
  Field field(uint32_t node) const { return nodes_[node].field; }
  uint32_t value(uint32_t node) const { return nodes_[node].value; }
  size_t gap_size(uint32_t node) const { return nodes_[node].gap_size; }

  // Adds the layout of one event (its members in order, the last a kEnd or a phase that ended
  // it). False when the trie is full or a gap is too long.
  bool Learn(const std::vector<Step>& steps);
  size_t size() const { return nodes_.size(); }

 private:
  static constexpr size_t kHead = 32;  // gap bytes kept in the node itself

  struct alignas(64) Node {
    char head[kHead] = {};  // the gap's first bytes, zero padded
    uint16_t gap_size = 0;
    uint16_t ignore_low = 0;   // bits of the first 16-byte comparison past the gap
    uint16_t ignore_high = 0;  // ... and of the second
    Field field = Field::kSkip;
    uint32_t gap_offset = 0;  // the whole gap in gaps_, for gaps longer than the head
    uint32_t hot_child = kNone;
    uint32_t first_child = kNone;
    uint32_t next_sibling = kNone;
    uint32_t value = 0;
  };

  bool Matches(const Node& node, const char* p, const char* limit) const {
    if (p > limit || static_cast<size_t>(limit - p) < node.gap_size) return false;
#if defined(__SSE2__)
    __m128i low = _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                                 _mm_load_si128(reinterpret_cast<const __m128i*>(node.head)));
    if ((static_cast<unsigned>(_mm_movemask_epi8(low)) | node.ignore_low) != 0xFFFF) return false;
    if (node.gap_size <= 16) return true;  // no load past the gap's 16-byte block
    __m128i high = _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)),
                                  _mm_load_si128(reinterpret_cast<const __m128i*>(node.head + 16)));
    if ((static_cast<unsigned>(_mm_movemask_epi8(high)) | node.ignore_high) != 0xFFFF) return false;
#else
    if (std::memcmp(p, node.head, std::min<size_t>(node.gap_size, kHead)) != 0) return false;
#endif
    return node.gap_size <= kHead ||
           std::memcmp(p + kHead, gaps_.data() + node.gap_offset + kHead, node.gap_size - kHead) == 0;
  }
  uint32_t MatchOtherChild(uint32_t node, const char* p, const char* limit);
  uint32_t FindOrAddChild(uint32_t node, const Step& step);

  std::vector<Node> nodes_;
  std::string gaps_;  // every node's whole gap
};

}  // namespace eroica
