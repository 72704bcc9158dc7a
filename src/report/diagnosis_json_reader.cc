#include "report/diagnosis_json_reader.h"

#include <fmt/core.h>

#include <climits>
#include <optional>

#include "base/file_util.h"
#include "base/json_access.h"
#include "report/diagnosis_json.h"

namespace eroica {
namespace {

// A finding whose scope or category this build does not know is not guessed at: nullopt.
std::optional<Finding> FindingFromJson(const Json& j) {
  std::optional<FindingScope> scope = FindingScopeFromName(JsonStringOr(j, {"scope"}));
  std::optional<FindingCategory> category = FindingCategoryFromName(JsonStringOr(j, {"category"}));
  if (!scope || !category) return std::nullopt;
  Finding f;
  f.scope = *scope;
  f.category = *category;
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
  f.from_baseline = JsonBoolOr(j, {"from_baseline"}, false);
  f.standing = JsonBoolOr(j, {"standing"}, false);
  return f;
}

}  // namespace

StatusOr<Diagnosis> DiagnosisFromJsonText(const std::string& text) {
  std::optional<Json> parsed = ParseJson(text);
  if (!parsed || !parsed->is_object()) return ErrorStatus("not a JSON object");
  const Json& j = *parsed;
  std::string schema = JsonStringOr(j, {"schema"});
  // Only the schema this eroica writes: a later one may give the same field names other meanings.
  if (schema.starts_with("eroica.diagnosis/") && schema != kDiagnosisSchema) {
    return ErrorStatus("diagnosis format {:?} is not one this eroica reads ({}); a newer eroica may read it", schema,
                       kDiagnosisSchema);
  }
  if (schema != kDiagnosisSchema) return ErrorStatus("not an eroica diagnosis (schema {:?})", schema);
  Diagnosis d;
  d.workers = JsonSmallIntOr(j, {"workers"}, 0);
  d.world_size = JsonSmallIntOr(j, {"world_size"}, 0);
  if (const Json* findings = JsonArrayField(j, {"findings"})) {
    for (const Json& f : *findings) {
      std::optional<Finding> finding = f.is_object() ? FindingFromJson(f) : std::nullopt;
      if (finding) {
        d.findings.push_back(std::move(*finding));
      } else {
        d.warnings.push_back(
            fmt::format("finding {} skipped: not an object with a known scope and category", d.findings.size() + 1));
      }
    }
  }
  std::vector<std::string> warnings = JsonStrings(JsonField(j, {"warnings"}));
  d.warnings.insert(d.warnings.begin(), warnings.begin(), warnings.end());
  d.notes = JsonStrings(JsonField(j, {"notes"}));
  d.slowed_by = JsonStringOr(j, {"slowed_by"});
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
