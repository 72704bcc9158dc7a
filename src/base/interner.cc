#include "base/interner.h"

namespace eroica {

Interner::Interner() { Intern(""); }

StringId Interner::Intern(std::string_view text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  storage_.emplace_back(text);
  const std::string* stored = &storage_.back();
  auto id = static_cast<StringId>(strings_.size());
  strings_.push_back(stored);
  ids_.emplace(std::string_view(*stored), id);
  return id;
}

}  // namespace eroica
