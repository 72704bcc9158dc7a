#include "summary/category.h"

#include <array>

namespace eroica {
namespace {

constexpr std::array<std::string_view, kCategoryCount> kCategoryNames = {"compute", "memory", "communication",
                                                                         "dataloader", "host"};
constexpr std::array<std::string_view, kHostKindCount> kHostKindNames = {"",     "python", "gc",       "optimizer",
                                                                         "sync", "launch", "framework"};

static_assert(static_cast<int>(Category::kHost) + 1 == kCategoryCount, "kCategoryCount counts every Category");
static_assert(static_cast<int>(HostKind::kFramework) + 1 == kHostKindCount, "kHostKindCount counts every HostKind");

}  // namespace

std::string_view CategoryName(Category category) { return kCategoryNames[static_cast<size_t>(category)]; }

std::optional<Category> CategoryFromName(std::string_view name) {
  for (size_t i = 0; i < kCategoryNames.size(); ++i) {
    if (kCategoryNames[i] == name) return static_cast<Category>(i);
  }
  return std::nullopt;
}

std::string_view HostKindName(HostKind kind) { return kHostKindNames[static_cast<size_t>(kind)]; }

std::optional<HostKind> HostKindFromName(std::string_view name) {
  for (size_t i = 0; i < kHostKindNames.size(); ++i) {
    if (kHostKindNames[i] == name) return static_cast<HostKind>(i);
  }
  return std::nullopt;
}

}  // namespace eroica
