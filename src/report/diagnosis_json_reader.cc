#include "report/diagnosis_json_reader.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <optional>

#include "base/file_util.h"
#include "report/diagnosis_json.h"

namespace eroica {
namespace {

using nlohmann::json;

template <typename T>
T Get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& s : *it) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

// A finding whose scope or category this build does not know is not guessed at: nullopt.
std::optional<Finding> FindingFromJson(const json& j) {
  std::optional<FindingScope> scope = FindingScopeFromName(Get<std::string>(j, "scope", ""));
  std::optional<FindingCategory> category = FindingCategoryFromName(Get<std::string>(j, "category", ""));
  if (!scope || !category) return std::nullopt;
  Finding f;
  f.scope = *scope;
  f.category = *category;
  if (auto it = j.find("workers"); it != j.end() && it->is_array()) {
    for (const json& w : *it) {
      if (w.is_number_integer()) f.workers.push_back(w.get<int>());
    }
  }
  f.function = Get<std::string>(j, "function", "");
  f.impact_s_per_iter = Get<double>(j, "impact_s_per_iter", 0);
  f.beta = Get<double>(j, "beta", 0);
  f.peer_beta = Get<double>(j, "peer_beta", 0);
  f.expectation_distance = Get<double>(j, "expectation_distance", 0);
  f.differential_distance = Get<double>(j, "differential_distance", 0);
  f.evidence = Get<std::string>(j, "evidence", "");
  f.location = Get<std::string>(j, "location", "");
  f.action = Get<std::string>(j, "action", "");
  return f;
}

}  // namespace

StatusOr<Diagnosis> DiagnosisFromJsonText(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return ErrorStatus("not a JSON object");
  std::string schema = Get<std::string>(j, "schema", "");
  // Only the schema this eroica writes: a later one may give the same field names other meanings.
  if (schema.starts_with("eroica.diagnosis/") && schema != kDiagnosisSchema) {
    return ErrorStatus("diagnosis format {:?} is not one this eroica reads ({}); a newer eroica may read it",
                       schema, kDiagnosisSchema);
  }
  if (schema != kDiagnosisSchema) return ErrorStatus("not an eroica diagnosis (schema {:?})", schema);
  Diagnosis d;
  d.workers = Get<int>(j, "workers", 0);
  d.world_size = Get<int>(j, "world_size", 0);
  if (auto it = j.find("findings"); it != j.end() && it->is_array()) {
    for (const json& f : *it) {
      std::optional<Finding> finding = f.is_object() ? FindingFromJson(f) : std::nullopt;
      if (finding) {
        d.findings.push_back(std::move(*finding));
      } else {
        d.warnings.push_back(fmt::format("finding {} skipped: not an object with a known scope and category",
                                         d.findings.size() + 1));
      }
    }
  }
  std::vector<std::string> warnings = Strings(j, "warnings");
  d.warnings.insert(d.warnings.begin(), warnings.begin(), warnings.end());
  d.notes = Strings(j, "notes");
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
