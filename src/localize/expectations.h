// Expected boxes for behaviour patterns (docs/DESIGN.md "Expectation distance"): what a healthy
// worker looks like, per category, as configuration. The defaults ship in
// config/expectations.json, each with one line on why; `--expect FILE` overrides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "summary/category.h"
#include "summary/pattern.h"

namespace eroica {

struct Range {
  double low = 0;
  double high = 1;
  // L1 distance from x to [low, high]: 0 inside.
  double Distance(double x) const { return x < low ? low - x : (x > high ? x - high : 0); }
};

struct Box {
  enum class Target { kFunction, kCategory };
  Target target = Target::kFunction;
  Category category = Category::kHost;
  std::optional<HostKind> host_kind;  // function boxes may narrow to one kind of host time
  bool cpu_training = true;           // which kind of training run the box applies to
  bool gpu_training = true;
  Range beta;
  std::optional<Range> mu;
  std::optional<Range> sigma;
  std::string why;
};

struct Expectations {
  std::vector<Box> boxes;
  // Localization thresholds (docs/DESIGN.md "Localization").
  double min_beta = 0.01;  // a (f,w) below this is never abnormal
  // Δ outlier: robust z beyond this (the paper's k = 5). The same k spreads of the job's own
  // noise decide a straggler's summed excess (iteration_evidence.h) and a host point's lead on
  // every rank (global_analysis.cc).
  double outlier_z = 5.0;
  double min_excess_beta = 0.03;  // noise floor: β excess over the peers worth reporting
  double min_scale_beta = 0.01;   // floor of the robust spread, in β
  double global_fraction = 0.5;   // "most workers": share of a group over a box for global
  double imbalance_ratio = 1.3;   // work (calls, items, bytes) this much above peers = imbalance
  // Small groups (fewer than `small_group` workers) have no usable spread: an outlier there is
  // a worker above all its peers in every iteration (a fault persists, noise moves around) by
  // at least `small_group_min_excess_beta`; without per-iteration data, by `fallback_excess_beta`.
  double small_group = 8;
  double small_group_min_excess_beta = 0.05;
  double fallback_excess_beta = 0.12;
  // Or, at any group size, a worker above every peer at one host function by this much β:
  // code runs at one program point, noise spreads (function_leads.h has the measurements).
  double point_lead_beta = 0.2;
  // A rank whose link's burst peak (μ + 2σ) is this much below its peers' has a degraded link.
  double link_peak_deficit = 0.35;
  // A worker whose compute ops take this many times its peers' (same work) is slow as a whole,
  // its processor rather than its code, unless its host time is up far beyond that factor.
  double slow_worker_ratio = 1.5;

  // D(f,w) for a function (or, with `category_total`, for a category's Σβ).
  double Distance(const FunctionPattern& f, bool has_device) const;
  // The same from raw fields; NaN μ/σ mean "no hardware samples".
  double Distance(Category category, HostKind host_kind, double beta, double mu, double sigma, bool has_device) const;
  double CategoryDistance(Category category, double beta, bool has_device) const;
  // The box's upper β bound that applies, for messages; nullopt when none applies.
  std::optional<double> BetaHigh(Box::Target target, Category category, std::optional<HostKind> host_kind,
                                 bool has_device) const;
};

StatusOr<Expectations> LoadExpectations(const std::string& path);
// The shipped defaults: config/expectations.json, compiled in.
Expectations DefaultExpectations();
StatusOr<Expectations> ParseExpectations(std::string_view json, const std::string& source);

}  // namespace eroica
