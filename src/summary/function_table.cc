#include "summary/function_table.h"

namespace eroica {

uint32_t FunctionTable::Intern(Category category, HostKind host_kind, const std::string& name) {
  std::string key;
  key.reserve(name.size() + 2);
  key.push_back(static_cast<char>('0' + static_cast<int>(category)));
  key.push_back(static_cast<char>('0' + static_cast<int>(host_kind)));
  key += name;
  auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<uint32_t>(functions_.size()));
  if (inserted) {
    FunctionStats stats;
    stats.name = name;
    stats.category = category;
    stats.host_kind = host_kind;
    functions_.push_back(std::move(stats));
  }
  return it->second;
}

}  // namespace eroica
