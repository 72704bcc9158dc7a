// Maps the raw strings of a trace (event names, cats) to interned ids. Names repeat on every
// event and kernel names run to hundreds of bytes, so the cache hashes only the length and the
// first and last 16 bytes; a hit costs one memcmp, never a full hash.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "base/interner.h"

namespace eroica {

class StringCache {
 public:
  static constexpr StringId kNoString = 0xFFFFFFFF;

  StringCache() : slots_(kInitialSlots) {}

  // The id of `text`, calling `intern(text)` the first time it is seen. An `intern` that
  // answers kNoString (text it refuses) is asked again next time.
  template <typename Intern>
  StringId Find(std::string_view text, Intern&& intern) {
    uint64_t hash = Hash(text);
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.data == nullptr) {
        StringId id = intern(text);
        return id == kNoString ? id : Insert(text, hash, id);
      }
      if (slot.hash == hash && slot.size == text.size() && std::memcmp(slot.data, text.data(), text.size()) == 0) {
        return slot.id;
      }
    }
  }

 private:
  static constexpr size_t kInitialSlots = 1024;

  struct Slot {
    const char* data = nullptr;
    uint64_t hash = 0;
    uint32_t size = 0;
    StringId id = 0;
  };

  static uint64_t Load64(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static uint64_t Mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
  }
  static uint64_t Hash(std::string_view text) {
    size_t n = text.size();
    const char* p = text.data();
    uint64_t h = Mix(0x2545F4914F6CDD1Dull, n);
    if (n >= 16) {
      h = Mix(h, Load64(p));
      h = Mix(h, Load64(p + 8));
      h = Mix(h, Load64(p + n - 16));
      h = Mix(h, Load64(p + n - 8));
    } else {
      char tail[16] = {};
      std::memcpy(tail, p, n);
      h = Mix(h, Load64(tail));
      h = Mix(h, Load64(tail + 8));
    }
    return h | 1;  // never 0, so an empty slot is told by data alone
  }

  StringId Insert(std::string_view text, uint64_t hash, StringId id);
  void Grow();

  std::vector<Slot> slots_;
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> storage_;  // the cached strings' bytes
  char* storage_next_ = nullptr;
  size_t storage_left_ = 0;
};

}  // namespace eroica
