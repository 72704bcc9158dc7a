// The kinds a finding has: its scope and its category, with one table of what each category
// means to every report (its name in eroica.diagnosis/v1, the verdict's phrase, the advice, the
// AI prompt's request). A new category is one enumerator plus one case in finding_kind.cc; the
// switch there is compiled with -Werror=switch, so a category without its entry does not build.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "summary/category.h"

namespace eroica {

enum class FindingScope : uint8_t { kLocal, kGlobal };

// The resource categories first, in the order and with the values of `Category`, then the ones
// only localization finds.
enum class FindingCategory : uint8_t {
  kCompute,
  kMemory,
  kCommunication,
  kDataloader,
  kHost,
  kImbalance,  // a worker given more work than its peers (not a slower resource)
  kHang,       // a worker stuck while its peers wait
};
inline constexpr int kFindingCategoryCount = 7;
static_assert(static_cast<int>(FindingCategory::kHost) == static_cast<int>(Category::kHost) &&
                  static_cast<int>(FindingCategory::kHost) + 1 == kCategoryCount,
              "the resource categories lead FindingCategory with Category's values");

// The words and requests of one category. Templates are fmt format strings over the arguments
// of `AdviceFor` and `RequestFor` (finding_kind.cc), which every template may use or skip.
struct FindingCategoryInfo {
  std::string_view name;          // its spelling in eroica.diagnosis/v1 and the text report
  std::string_view phrase;        // "Rank 3 loses 5 ms per iteration in <phrase>"
  std::string_view local_advice;  // {0}: the rank
  std::string_view global_advice;
  std::string_view local_request;    // {0} rank, {1} cost, {2} where to start, {3} function,
  std::string_view global_request;   // {4} the function in parentheses, {5} where the others wait
  std::optional<Category> resource;  // the resource it stands for, when it is one
};

const FindingCategoryInfo& InfoOf(FindingCategory category);
std::string_view Name(FindingCategory category);
std::string_view Name(FindingScope scope);
std::optional<FindingCategory> FindingCategoryFromName(std::string_view name);
std::optional<FindingScope> FindingScopeFromName(std::string_view name);
FindingCategory FindingCategoryOf(Category resource);

// One sentence on what to do next.
std::string AdviceFor(FindingCategory category, FindingScope scope, int rank);

// The AI prompt's request for a finding (see FindingCategoryInfo for the arguments).
struct RequestArguments {
  int rank = -1;
  std::string cost;   // "5.20 ms"
  std::string start;  // "`train.py:57`"
  std::string function;
  std::string waiting_at;  // a hang: where the others wait ("the collective the other ranks wait in (`x`)")
};
std::string RequestFor(FindingCategory category, FindingScope scope, const RequestArguments& args);

}  // namespace eroica
