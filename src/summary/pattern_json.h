// Patterns as JSON (`eroica show --format json`), schema "eroica.pattern/v1".
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "summary/pattern.h"

namespace eroica {

inline constexpr std::string_view kPatternJsonSchema = "eroica.pattern/v1";

nlohmann::json PatternToJson(const WorkerPattern& worker);

}  // namespace eroica
