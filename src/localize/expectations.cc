#include "localize/expectations.h"

#include <fmt/core.h>

#include <cmath>

#include "base/file_util.h"
#include "base/json_access.h"
#include "localize/default_expectations.h"

namespace eroica {
namespace {

bool Applies(const Box& box, bool has_device) { return has_device ? box.gpu_training : box.cpu_training; }

Status ParseRange(const Json* j, Range* range) {
  if (j == nullptr || !j->is_array() || j->size() != 2 || !(*j)[0].is_number() || !(*j)[1].is_number()) {
    return Status::Error("a range must be [low, high]");
  }
  range->low = (*j)[0].get<double>();
  range->high = (*j)[1].get<double>();
  if (!(range->low <= range->high)) return Status::Error("a range's low is above its high");
  return Status::Ok();
}

Status ParseBox(const Json& j, Box* box) {
  if (!j.is_object()) return Status::Error("a box must be an object");
  // An --expect file is written by hand: a field of the wrong type is a mistake to name.
  for (std::string_view key : {"target", "category", "host_kind", "training", "why"}) {
    const Json* v = JsonField(j, {key});
    if (v != nullptr && !v->is_string()) return Status::Error(fmt::format("{} must be a string", key));
  }
  std::string target = JsonStringOr(j, {"target"}, "function");
  if (target != "function" && target != "category") return Status::Error("target must be function or category");
  box->target = target == "function" ? Box::Target::kFunction : Box::Target::kCategory;
  std::string category_name = JsonStringOr(j, {"category"});
  std::optional<Category> category = CategoryFromName(category_name);
  if (!category) return Status::Error("unknown category '" + category_name + "'");
  box->category = *category;
  if (const Json* host_kind = JsonField(j, {"host_kind"})) {
    std::optional<std::string> name = JsonString(host_kind);
    if (name) box->host_kind = HostKindFromName(*name);
    if (!box->host_kind) return Status::Error("unknown host_kind");
  }
  std::string training = JsonStringOr(j, {"training"}, "any");
  box->cpu_training = training != "gpu";
  box->gpu_training = training != "cpu";
  const Json* beta = JsonField(j, {"beta"});
  if (beta == nullptr) return Status::Error("a box needs a beta range");
  EROICA_RETURN_IF_ERROR(ParseRange(beta, &box->beta));
  if (const Json* mu = JsonField(j, {"mu"})) EROICA_RETURN_IF_ERROR(ParseRange(mu, &box->mu.emplace()));
  if (const Json* sigma = JsonField(j, {"sigma"})) EROICA_RETURN_IF_ERROR(ParseRange(sigma, &box->sigma.emplace()));
  box->why = JsonStringOr(j, {"why"});
  return Status::Ok();
}

}  // namespace

double Expectations::Distance(const FunctionPattern& f, bool has_device) const {
  return Distance(f.category, f.host_kind, f.beta, f.mu.value_or(NAN), f.sigma.value_or(NAN), has_device);
}

double Expectations::Distance(Category category, HostKind host_kind, double beta, double mu, double sigma,
                              bool has_device) const {
  double worst = 0;
  for (const Box& box : boxes) {
    if (box.target != Box::Target::kFunction || box.category != category || !Applies(box, has_device)) continue;
    if (box.host_kind && *box.host_kind != host_kind) continue;
    double d = box.beta.Distance(beta);
    if (box.mu && !std::isnan(mu)) d += box.mu->Distance(mu);
    if (box.sigma && !std::isnan(sigma)) d += box.sigma->Distance(sigma);
    worst = std::max(worst, d);
  }
  return worst;
}

double Expectations::CategoryDistance(Category category, double beta, bool has_device) const {
  double worst = 0;
  for (const Box& box : boxes) {
    if (box.target == Box::Target::kCategory && box.category == category && Applies(box, has_device)) {
      worst = std::max(worst, box.beta.Distance(beta));
    }
  }
  return worst;
}

std::optional<double> Expectations::BetaHigh(Box::Target target, Category category, std::optional<HostKind> host_kind,
                                             bool has_device) const {
  std::optional<double> high;
  for (const Box& box : boxes) {
    if (box.target != target || box.category != category || !Applies(box, has_device)) continue;
    if (box.host_kind && host_kind && *box.host_kind != *host_kind) continue;
    high = high ? std::min(*high, box.beta.high) : box.beta.high;
  }
  return high;
}

StatusOr<Expectations> ParseExpectations(std::string_view text, const std::string& source) {
  std::optional<Json> j = ParseJson(text, /*allow_comments=*/true);
  if (!j || !j->is_object()) return ErrorStatus("{}: not valid JSON", source);
  Expectations e;
  if (const Json* boxes = JsonField(*j, {"boxes"})) {
    if (!boxes->is_array()) return ErrorStatus("{}: boxes must be a list", source);
    for (size_t i = 0; i < boxes->size(); ++i) {
      Box box;
      Status status = ParseBox((*boxes)[i], &box);
      if (!status.ok()) return ErrorStatus("{}: box {}: {}", source, i, status.message());
      e.boxes.push_back(std::move(box));
    }
  }
  if (const Json* t = JsonObjectField(*j, {"thresholds"})) {
    auto number = [&](std::string_view key, double* out) {
      if (std::optional<double> v = JsonNumber(JsonField(*t, {key}))) *out = *v;
    };
    number("min_beta", &e.min_beta);
    number("outlier_z", &e.outlier_z);
    number("min_excess_beta", &e.min_excess_beta);
    number("min_scale_beta", &e.min_scale_beta);
    number("global_fraction", &e.global_fraction);
    number("imbalance_ratio", &e.imbalance_ratio);
    number("small_group", &e.small_group);
    number("small_group_min_excess_beta", &e.small_group_min_excess_beta);
    number("fallback_excess_beta", &e.fallback_excess_beta);
    number("point_lead_beta", &e.point_lead_beta);
    number("link_peak_deficit", &e.link_peak_deficit);
    number("slow_worker_ratio", &e.slow_worker_ratio);
  }
  return e;
}

Expectations DefaultExpectations() {
  StatusOr<Expectations> e = ParseExpectations(kDefaultExpectationsJson, "config/expectations.json");
  EROICA_CHECK(e.ok());
  return *e;
}

StatusOr<Expectations> LoadExpectations(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path, 1 << 20);
  if (!text.ok()) return text.status();
  return ParseExpectations(*text, path);
}

}  // namespace eroica
