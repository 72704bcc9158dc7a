#include "trace/layout_trie.h"

#include <cstring>

namespace eroica {

LayoutTrie::LayoutTrie() { nodes_.emplace_back(); }

uint32_t LayoutTrie::MatchOtherChild(uint32_t node, const char* p, const char* limit) {
  uint32_t hot = nodes_[node].hot_child;
  for (uint32_t child = nodes_[node].first_child; child != kNone; child = nodes_[child].next_sibling) {
    if (child != hot && Matches(nodes_[child], p, limit)) {
      nodes_[node].hot_child = child;  // layouts come in runs
      return child;
    }
  }
  return kNone;
}

uint32_t LayoutTrie::FindOrAddChild(uint32_t node, const Step& step) {
  for (uint32_t child = nodes_[node].first_child; child != kNone; child = nodes_[child].next_sibling) {
    const Node& candidate = nodes_[child];
    if (candidate.field == step.field && candidate.value == step.value && candidate.gap_size == step.gap.size() &&
        std::memcmp(gaps_.data() + candidate.gap_offset, step.gap.data(), step.gap.size()) == 0) {
      return child;
    }
  }
  if (nodes_.size() >= kMaxNodes) return kNone;
  Node added;
  size_t size = step.gap.size();
  std::memcpy(added.head, step.gap.data(), std::min(size, kHead));
  added.gap_size = static_cast<uint16_t>(size);
  added.ignore_low = size >= 16 ? 0 : static_cast<uint16_t>(0xFFFFu << size);
  added.ignore_high = size >= 32 ? 0 : size <= 16 ? 0xFFFF : static_cast<uint16_t>(0xFFFFu << (size - 16));
  added.field = step.field;
  added.value = step.value;
  added.gap_offset = static_cast<uint32_t>(gaps_.size());
  added.next_sibling = nodes_[node].first_child;
  gaps_.append(step.gap);
  nodes_[node].first_child = static_cast<uint32_t>(nodes_.size());
  if (nodes_[node].hot_child == kNone) nodes_[node].hot_child = nodes_[node].first_child;
  nodes_.push_back(added);
  return nodes_[node].first_child;
}

bool LayoutTrie::Learn(const std::vector<Step>& steps) {
  for (const Step& step : steps) {
    if (step.gap.size() > kMaxGap) return false;
  }
  uint32_t node = kRoot;
  for (const Step& step : steps) {
    node = FindOrAddChild(node, step);
    if (node == kNone) return false;
  }
  return true;
}

}  // namespace eroica
