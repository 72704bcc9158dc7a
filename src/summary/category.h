// What kind of resource a function stands for (docs/DESIGN.md "Categories"). A finding's category is
// one of these or a localization-only one (imbalance, hang).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace eroica {

enum class Category : uint8_t { kCompute, kMemory, kCommunication, kDataloader, kHost };
inline constexpr int kCategoryCount = 5;

// Recognised sub-kinds of host time, where the trace shows them.
enum class HostKind : uint8_t { kNone, kPython, kGc, kOptimizer, kSync, kLaunch, kFramework };
inline constexpr int kHostKindCount = 7;

std::string_view CategoryName(Category category);
std::optional<Category> CategoryFromName(std::string_view name);
std::string_view HostKindName(HostKind kind);
std::optional<HostKind> HostKindFromName(std::string_view name);

}  // namespace eroica
