// The one way to read JSON that eroica did not write itself (hang stacks, --expect files,
// session.json, rank meta files, registrations' siblings, diagnosis documents): parsing never
// throws, and every accessor returns the fallback for a missing field, a null or a value of
// another type, so a wrong-typed field is a skipped field, never an abort. Integers outside
// the asked range are treated as missing (no UB on float→int conversion).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace eroica {

using Json = nlohmann::json;
// Field names tried in order (aliases of one field); the first present and non-null wins.
using JsonKeys = std::initializer_list<std::string_view>;

// A parsed document, or nullopt when TEXT is not JSON. allow_comments: // and /* */ allowed.
std::optional<Json> ParseJson(std::string_view text, bool allow_comments = false);

// The field of an object, or null when J is not an object or has none of KEYS.
const Json* JsonField(const Json& j, JsonKeys keys);
const Json* JsonArrayField(const Json& j, JsonKeys keys);   // only when an array
const Json* JsonObjectField(const Json& j, JsonKeys keys);  // only when an object

// Values: an integer (or an integral float) within [min, max]; any number; a string; a bool.
std::optional<int64_t> JsonInt(const Json* v, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
std::optional<double> JsonNumber(const Json* v);
std::optional<std::string> JsonString(const Json* v);
std::optional<bool> JsonBool(const Json* v);

int64_t JsonIntOr(const Json& j, JsonKeys keys, int64_t fallback, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
// An int-sized integer field (fallback outside int's range).
int JsonSmallIntOr(const Json& j, JsonKeys keys, int fallback);
double JsonNumberOr(const Json& j, JsonKeys keys, double fallback);
std::string JsonStringOr(const Json& j, JsonKeys keys, std::string fallback = "");
// A string, or a number or bool as its JSON text (for display fields that may be either).
std::string JsonTextOr(const Json& j, JsonKeys keys);
bool JsonBoolOr(const Json& j, JsonKeys keys, bool fallback);

// The elements of the right type of an array (others skipped); empty when V is no array.
std::vector<double> JsonNumbers(const Json* v);
std::vector<int64_t> JsonInts(const Json* v, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
std::vector<std::string> JsonStrings(const Json* v);

}  // namespace eroica
