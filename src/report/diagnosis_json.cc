#include "report/diagnosis_json.h"

#include <cmath>

namespace eroica {
namespace {

double Round(double value, int digits) {
  if (!std::isfinite(value)) return 0;
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

}  // namespace

nlohmann::json DiagnosisToJson(const Diagnosis& d) {
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : d.findings) {
    findings.push_back({
        {"scope", Name(f.scope)},
        {"category", Name(f.category)},
        {"workers", f.workers},
        {"function", f.function},
        {"impact_s_per_iter", Round(f.impact_s_per_iter, 6)},
        {"beta", Round(f.beta, 4)},
        {"peer_beta", Round(f.peer_beta, 4)},
        {"expectation_distance", Round(f.expectation_distance, 4)},
        {"differential_distance", Round(f.differential_distance, 2)},
        {"evidence", f.evidence},
        {"location", f.location},
        {"action", f.action},
    });
  }
  return {
      {"schema", kDiagnosisSchema}, {"workers", d.workers},   {"world_size", d.world_size}, {"healthy", d.healthy()},
      {"findings", findings},       {"warnings", d.warnings}, {"notes", d.notes},
  };
}

}  // namespace eroica
