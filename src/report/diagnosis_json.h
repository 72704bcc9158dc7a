// The "eroica.diagnosis/v1" JSON document (docs/DESIGN.md "Interfaces"); field names are a contract.
#pragma once

#include <nlohmann/json.hpp>

#include "localize/finding.h"

namespace eroica {

nlohmann::json DiagnosisToJson(const Diagnosis& diagnosis);

}  // namespace eroica
