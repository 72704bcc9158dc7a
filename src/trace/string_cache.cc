#include "trace/string_cache.h"

#include <algorithm>

namespace eroica {
namespace {

constexpr size_t kStorageBlock = 64 << 10;

}  // namespace

StringId StringCache::Insert(std::string_view text, uint64_t hash, StringId id) {
  if (text.size() > storage_left_ || storage_next_ == nullptr) {
    size_t block = std::max(kStorageBlock, text.size());
    storage_.push_back(std::make_unique<char[]>(block));
    storage_next_ = storage_.back().get();
    storage_left_ = block;
  }
  std::memcpy(storage_next_, text.data(), text.size());
  const char* copy = storage_next_;
  storage_next_ += text.size();
  storage_left_ -= text.size();
  if ((used_ + 1) * 2 > slots_.size()) Grow();
  size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].data != nullptr) i = (i + 1) & mask;
  slots_[i] = {copy, hash, static_cast<uint32_t>(text.size()), id};
  ++used_;
  return id;
}

void StringCache::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.data == nullptr) continue;
    size_t i = slot.hash & mask;
    while (slots_[i].data != nullptr) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

}  // namespace eroica
