// The "eroica.diagnosis/v1" JSON document (docs/DESIGN.md "Interfaces"); field names are a contract.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "localize/finding.h"

namespace eroica {

// The schema this eroica writes and the only one it reads: a reader must refuse a newer one.
inline constexpr std::string_view kDiagnosisSchema = "eroica.diagnosis/v1";

nlohmann::json DiagnosisToJson(const Diagnosis& diagnosis);

}  // namespace eroica
