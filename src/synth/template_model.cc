#include "synth/template_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/robust_stats.h"

namespace eroica {
namespace {

double Median(std::vector<double> values) { return MedianInPlace(values); }

// Seconds per iteration of a share of the window.
double Seconds(const WorkerPattern& w, double beta) { return beta * w.iteration_s; }

size_t LeastWaiting(const std::vector<WorkerPattern>& workers) {
  size_t best = 0;
  for (size_t i = 1; i < workers.size(); ++i) {
    auto comm = [&](size_t k) {
      return Seconds(workers[k], workers[k].category_beta[static_cast<size_t>(Category::kCommunication)]);
    };
    if (comm(i) < comm(best)) best = i;
  }
  return best;
}

struct Samples {
  const FunctionPattern* first = nullptr;
  std::vector<double> seconds;  // one per template worker, 0 where absent
  std::vector<double> calls;
  int present = 0;
};

}  // namespace

StatusOr<TemplateModel> BuildTemplateModel(const std::vector<WorkerPattern>& templates, const ModelOptions& options) {
  if (templates.empty()) return ErrorStatus("no template patterns");
  for (const WorkerPattern& w : templates) {
    if (w.iteration_s <= 0) return ErrorStatus("template rank {} has no iteration time", w.rank);
  }
  size_t n = templates.size();
  size_t least = LeastWaiting(templates);
  const WorkerPattern& base = templates[least];
  // Functions in first-seen order, so that the model does not depend on a hash order.
  std::vector<std::pair<std::string, Category>> order;
  std::map<std::pair<std::string, Category>, Samples> samples;
  for (size_t k = 0; k < n; ++k) {
    for (const FunctionPattern& f : templates[k].functions) {
      auto key = std::make_pair(f.name, f.category);
      auto [it, inserted] = samples.try_emplace(key);
      if (inserted) {
        order.push_back(key);
        it->second.first = &f;
        it->second.seconds.assign(n, 0.0);
        it->second.calls.assign(n, 0.0);
      }
      it->second.seconds[k] += Seconds(templates[k], f.beta);
      it->second.calls[k] += f.calls_per_iter;
      ++it->second.present;
    }
  }
  TemplateModel model;
  model.template_workers = static_cast<int>(n);
  std::array<std::vector<double>, kCategoryCount> listed_seconds;
  for (auto& v : listed_seconds) v.assign(n, 0.0);
  for (const auto& key : order) {
    const Samples& s = samples[key];
    FunctionModel f;
    f.name = key.first;
    f.category = key.second;
    f.host_kind = s.first->host_kind;
    bool comm = f.category == Category::kCommunication;
    f.seconds = comm ? s.seconds[least] : Median(s.seconds);
    double median = Median(s.seconds);
    std::vector<double> deviations;
    for (double v : s.seconds) deviations.push_back(std::fabs(v - median));
    double spread = median > 0 ? 1.4826 * Median(deviations) / median : options.max_spread;
    f.relative_spread = std::clamp(spread, options.min_spread, options.max_spread);
    f.presence = static_cast<double>(s.present) / static_cast<double>(n);
    f.calls_per_iter = comm ? s.calls[least] : Median(s.calls);
    f.bytes_per_iter = s.first->bytes_per_iter;
    f.shapes_hash = s.first->shapes_hash;
    f.mu = s.first->mu;
    f.sigma = s.first->sigma;
    for (size_t k = 0; k < n; ++k) listed_seconds[static_cast<size_t>(f.category)][k] += s.seconds[k];
    if (f.seconds > 0 || f.calls_per_iter > 0) model.functions.push_back(std::move(f));
  }
  for (int c = 0; c < kCategoryCount; ++c) {
    std::vector<double> residual(n);
    for (size_t k = 0; k < n; ++k) {
      residual[k] = std::max(0.0, Seconds(templates[k], templates[k].category_beta[c]) - listed_seconds[c][k]);
    }
    model.residual_seconds[c] =
        static_cast<Category>(c) == Category::kCommunication ? residual[least] : Median(residual);
  }
  model.iteration_s = 0;
  for (const FunctionModel& f : model.functions) model.iteration_s += f.seconds;
  for (double r : model.residual_seconds) model.iteration_s += r;
  if (model.iteration_s <= 0) return ErrorStatus("the template patterns hold no time");
  model.iterations = std::max(1, base.iterations());
  model.step_ids = base.step_ids;
  model.collectives = base.collectives;
  model.has_device = base.has_device;
  model.device_name = base.device_name;
  model.group = base.group;
  std::vector<double> loader_ops, compute_calls;
  for (const WorkerPattern& w : templates) {
    loader_ops.push_back(w.dataloader_ops_per_iter);
    compute_calls.push_back(w.compute_calls_per_iter);
  }
  model.dataloader_ops_per_iter = Median(loader_ops);
  model.compute_calls_per_iter = Median(compute_calls);
  return model;
}

}  // namespace eroica
