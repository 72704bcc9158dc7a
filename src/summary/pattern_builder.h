// Turns the accumulated per-function figures into the compact pattern: β per function, the
// top functions kept by name, the tail folded into one "(other <category>)" per category.
#pragma once

#include <array>
#include <vector>

#include "summary/function_table.h"
#include "summary/pattern.h"

namespace eroica {

// Also fills `category_beta` with Σβ per category over all functions (before folding).
std::vector<FunctionPattern> BuildFunctionPatterns(const std::vector<FunctionStats>& functions, int64_t window_ns,
                                                   int iterations, size_t max_functions,
                                                   std::array<double, kCategoryCount>* category_beta);

}  // namespace eroica
