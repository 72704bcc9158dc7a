#include "report/diagnosis_json.h"

#include "base/json_round.h"

namespace eroica {
namespace {}  // namespace

nlohmann::json DiagnosisToJson(const Diagnosis& d) {
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : d.findings) {
    findings.push_back({
        {"scope", Name(f.scope)},
        {"category", Name(f.category)},
        {"workers", f.workers},
        {"function", f.function},
        {"impact_s_per_iter", RoundForJson(f.impact_s_per_iter, 6)},
        {"beta", RoundForJson(f.beta, 4)},
        {"peer_beta", RoundForJson(f.peer_beta, 4)},
        {"expectation_distance", RoundForJson(f.expectation_distance, 4)},
        {"differential_distance", RoundForJson(f.differential_distance, 2)},
        {"evidence", f.evidence},
        {"location", f.location},
        {"action", f.action},
        {"from_baseline", f.from_baseline},
        {"standing", f.standing},
    });
  }
  return {
      {"schema", kDiagnosisSchema}, {"workers", d.workers},   {"world_size", d.world_size}, {"healthy", d.healthy()},
      {"findings", findings},       {"warnings", d.warnings}, {"notes", d.notes},           {"slowed_by", d.slowed_by},
  };
}

}  // namespace eroica
