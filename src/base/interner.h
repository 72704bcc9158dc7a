// String interning: events carry small integer ids instead of strings.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace eroica {

using StringId = uint32_t;

class Interner {
 public:
  Interner();
  StringId Intern(std::string_view text);
  std::string_view Get(StringId id) const { return *strings_[id]; }
  size_t size() const { return strings_.size(); }

  static constexpr StringId kEmpty = 0;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // deque keeps addresses stable so the map can key on views into it.
  std::deque<std::string> storage_;
  std::vector<const std::string*> strings_;
  std::unordered_map<std::string_view, StringId, Hash, std::equal_to<>> ids_;
};

}  // namespace eroica
