#include "report/diagnosis_json_reader.h"


#include "base/file_util.h"
#include "base/json_access.h"

namespace eroica {
namespace {

Finding FindingFromJson(const Json& j) {
  Finding f;
  f.scope = JsonStringOr(j, {"scope"});
  f.category = JsonStringOr(j, {"category"});
  for (int64_t w : JsonInts(JsonField(j, {"workers"}), INT32_MIN, INT32_MAX)) {
    f.workers.push_back(static_cast<int>(w));
  }
  f.function = JsonStringOr(j, {"function"});
  f.impact_s_per_iter = JsonNumberOr(j, {"impact_s_per_iter"}, 0);
  f.beta = JsonNumberOr(j, {"beta"}, 0);
  f.peer_beta = JsonNumberOr(j, {"peer_beta"}, 0);
  f.expectation_distance = JsonNumberOr(j, {"expectation_distance"}, 0);
  f.differential_distance = JsonNumberOr(j, {"differential_distance"}, 0);
  f.evidence = JsonStringOr(j, {"evidence"});
  f.location = JsonStringOr(j, {"location"});
  f.action = JsonStringOr(j, {"action"});
  return f;
}

}  // namespace

StatusOr<Diagnosis> DiagnosisFromJsonText(const std::string& text) {
  std::optional<Json> parsed = ParseJson(text);
  if (!parsed || !parsed->is_object()) return ErrorStatus("not a JSON object");
  const Json& j = *parsed;
  std::string schema = JsonStringOr(j, {"schema"});
  if (!schema.starts_with("eroica.diagnosis/")) return ErrorStatus("not an eroica diagnosis (schema \"{}\")", schema);
  Diagnosis d;
  d.workers = JsonSmallIntOr(j, {"workers"}, 0);
  d.world_size = JsonSmallIntOr(j, {"world_size"}, 0);
  if (const Json* findings = JsonArrayField(j, {"findings"})) {
    for (const Json& f : *findings) {
      if (f.is_object()) d.findings.push_back(FindingFromJson(f));
    }
  }
  d.warnings = JsonStrings(JsonField(j, {"warnings"}));
  d.notes = JsonStrings(JsonField(j, {"notes"}));
  return d;
}

StatusOr<Diagnosis> ReadDiagnosisFile(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path, 64 << 20);
  if (!text.ok()) return text.status();
  StatusOr<Diagnosis> d = DiagnosisFromJsonText(*text);
  if (!d.ok()) return ErrorStatus("{}: {}", path, d.status().message());
  return d;
}

}  // namespace eroica
