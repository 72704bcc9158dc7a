#include "base/json_access.h"

#include <cmath>

namespace eroica {

std::optional<Json> ParseJson(std::string_view text, bool allow_comments) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false, allow_comments);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

const Json* JsonField(const Json& j, JsonKeys keys) {
  if (!j.is_object()) return nullptr;
  for (std::string_view key : keys) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

const Json* JsonArrayField(const Json& j, JsonKeys keys) {
  const Json* v = JsonField(j, keys);
  return v != nullptr && v->is_array() ? v : nullptr;
}

const Json* JsonObjectField(const Json& j, JsonKeys keys) {
  const Json* v = JsonField(j, keys);
  return v != nullptr && v->is_object() ? v : nullptr;
}

std::optional<int64_t> JsonInt(const Json* v, int64_t min, int64_t max) {
  if (v == nullptr) return std::nullopt;
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    value = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    value = v->get<int64_t>();
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    // ±2^63 are not representable: stay strictly inside.
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) return std::nullopt;
    value = static_cast<int64_t>(d);
  } else {
    return std::nullopt;
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<double> JsonNumber(const Json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<std::string> JsonString(const Json* v) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<bool> JsonBool(const Json* v) {
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

int64_t JsonIntOr(const Json& j, JsonKeys keys, int64_t fallback, int64_t min, int64_t max) {
  return JsonInt(JsonField(j, keys), min, max).value_or(fallback);
}

int JsonSmallIntOr(const Json& j, JsonKeys keys, int fallback) {
  return static_cast<int>(JsonIntOr(j, keys, fallback, INT32_MIN, INT32_MAX));
}

double JsonNumberOr(const Json& j, JsonKeys keys, double fallback) {
  return JsonNumber(JsonField(j, keys)).value_or(fallback);
}

std::string JsonStringOr(const Json& j, JsonKeys keys, std::string fallback) {
  std::optional<std::string> s = JsonString(JsonField(j, keys));
  return s ? std::move(*s) : std::move(fallback);
}

std::string JsonTextOr(const Json& j, JsonKeys keys) {
  const Json* v = JsonField(j, keys);
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number() || v->is_boolean()) return v->dump();
  return "";
}

bool JsonBoolOr(const Json& j, JsonKeys keys, bool fallback) { return JsonBool(JsonField(j, keys)).value_or(fallback); }

std::vector<double> JsonNumbers(const Json* v) {
  std::vector<double> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const Json& x : *v) {
    if (x.is_number()) out.push_back(x.get<double>());
  }
  return out;
}

std::vector<int64_t> JsonInts(const Json* v, int64_t min, int64_t max) {
  std::vector<int64_t> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const Json& x : *v) {
    if (std::optional<int64_t> i = JsonInt(&x, min, max)) out.push_back(*i);
  }
  return out;
}

std::vector<std::string> JsonStrings(const Json* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const Json& x : *v) {
    if (x.is_string()) out.push_back(x.get<std::string>());
  }
  return out;
}

}  // namespace eroica
