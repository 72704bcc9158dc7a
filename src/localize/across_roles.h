// One cause paid by every role. Role groups are compared only within themselves (groups.h), so
// code every rank runs (a collection, a hot loop, a checkpoint on all) is found once per group:
// a 2-stage pipeline whose every rank built reference cycles and collected them read `global host
// ranks 2,3: eroica::gc` and `global host ranks 0,1: eroica::gc`, two lines for one problem.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "localize/finding.h"

namespace eroica {

// Merges the global findings of one category and function (made by different role groups) into
// the first of them: every rank it names, the largest impact and β (the roles pay it side by
// side, each step is held by the slowest), each other group's evidence after its own.
void MergeGlobalFindingsAcrossRoles(std::vector<Finding>* findings);

// What findings made apart must share to be one cause: their category and function, or, where
// the function is only the op that grew most (ranks late alike: one rank's longest op is aten::mm,
// its partner's aten::addmm), their category.
enum class SameCause : uint8_t { kCategoryAndFunction, kCategory };

// The same for findings of `scope` made apart for one cause (the ranks of a waited-for half,
// waited_half.h; ranks late alike): into the first, its evidence led by `lead`.
void MergeFindingsOfOneCause(std::vector<Finding>* findings, FindingScope scope, std::string_view lead,
                             SameCause same = SameCause::kCategoryAndFunction);

}  // namespace eroica
