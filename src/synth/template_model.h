// What a healthy worker of a real job looks like, drawn from that job's patterns: each
// function's time per iteration and how much it varies between workers. Times, not shares:
// shares move when the iteration gets longer, times of unaffected functions do not.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "summary/pattern.h"

namespace eroica {

struct FunctionModel {
  std::string name;
  Category category = Category::kHost;
  HostKind host_kind = HostKind::kNone;
  double seconds = 0;          // per iteration
  double relative_spread = 0;  // the worker-to-worker noise, as a fraction of `seconds`
  double presence = 1;         // the share of template workers that have the function
  double calls_per_iter = 0;
  int64_t bytes_per_iter = 0;
  uint32_t shapes_hash = 0;
  std::optional<double> mu, sigma;
};

struct TemplateModel {
  std::vector<FunctionModel> functions;
  // Category time that no listed function holds (the pruned tail), per iteration.
  std::array<double, kCategoryCount> residual_seconds{};
  double iteration_s = 0;  // the sum of all the above: a healthy worker's iteration
  int iterations = 1;
  std::vector<int64_t> step_ids;
  std::vector<CollectiveCall> collectives;
  bool has_device = false;
  std::string device_name;
  std::string group;
  double dataloader_ops_per_iter = 0;
  double compute_calls_per_iter = 0;
  int template_workers = 0;
};

// Own work (everything but communication) is the median over the template workers; exposed
// communication is what the least-waiting worker pays, since the rest of it is waiting for a
// straggler the template job may have had. Noise: each function's robust relative spread
// across the template workers (MAD / median), clamped to [min_spread, max_spread].
struct ModelOptions {
  double min_spread = 0.005;
  double max_spread = 0.05;
};
StatusOr<TemplateModel> BuildTemplateModel(const std::vector<WorkerPattern>& templates,
                                           const ModelOptions& options = {});

}  // namespace eroica
