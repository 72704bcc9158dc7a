// Patterns as JSON (`eroica show --format json`), schema "eroica.pattern/v1".
#pragma once

#include <nlohmann/json.hpp>

#include "summary/pattern.h"

namespace eroica {

nlohmann::json PatternToJson(const WorkerPattern& worker);

}  // namespace eroica
