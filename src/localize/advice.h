// One sentence on what to do next, per category and scope.
#pragma once

#include <string>

namespace eroica {

std::string Advice(const std::string& category, const std::string& scope, int rank);

}  // namespace eroica
