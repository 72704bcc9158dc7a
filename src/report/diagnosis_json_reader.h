// Reads an "eroica.diagnosis/v1" document (diagnosis_json.h writes it) back into a Diagnosis,
// for commands that take `diagnose --format json` output instead of re-diagnosing.
#pragma once

#include <string>

#include "base/status.h"
#include "localize/finding.h"

namespace eroica {

StatusOr<Diagnosis> DiagnosisFromJsonText(const std::string& text);
StatusOr<Diagnosis> ReadDiagnosisFile(const std::string& path);

}  // namespace eroica
