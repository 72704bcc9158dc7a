#include "synth/synthesizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_set>

#include "base/file_util.h"
#include "summary/function_name.h"
#include "summary/pattern_file.h"
#include "synth/template_model.h"

namespace eroica {
namespace {

constexpr double kResidualSpread = 0.01;
constexpr double kIterationSpread = 0.01;
constexpr double kCollectiveSpread = 0.02;

// Where the planted time goes: an index into the model's functions.
struct Plan {
  std::vector<int> stragglers;  // sorted ranks
  size_t straggler_function = 0;
  double straggler_seconds = 0;
  bool has_global = false;
  size_t global_function = 0;
  double global_seconds = 0;
  size_t wait_function = SIZE_MAX;  // the communication function the others wait in

  bool IsStraggler(int rank) const { return std::binary_search(stragglers.begin(), stragglers.end(), rank); }
};

// The model's heaviest function of `category`, or a new one named as profilers name it.
size_t FunctionOf(TemplateModel* model, Category category, HostKind kind, const std::string& fallback_name) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < model->functions.size(); ++i) {
    const FunctionModel& f = model->functions[i];
    if (f.category != category || (kind != HostKind::kNone && f.host_kind != kind)) continue;
    if (IsFoldedTail(f.name)) continue;
    if (best == SIZE_MAX || f.seconds > model->functions[best].seconds) best = i;
  }
  if (best != SIZE_MAX) return best;
  FunctionModel added;
  added.name = fallback_name;
  added.category = category;
  added.host_kind = kind;
  added.relative_spread = 0.01;
  added.calls_per_iter = 1;
  model->functions.push_back(added);
  return model->functions.size() - 1;
}

std::string DefaultFunctionName(Category category) {
  switch (category) {
    case Category::kDataloader:
      return "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
    case Category::kCompute:
      return "synthetic_compute_kernel";
    case Category::kMemory:
      return "Memcpy HtoD (Pageable -> Device)";
    case Category::kCommunication:
      return "allreduce";
    case Category::kHost:
      return std::string(kUnattributedPython);
  }
  return "synthetic";
}

StatusOr<Plan> MakePlan(TemplateModel* model, const SynthOptions& options, std::mt19937_64* rng,
                        std::vector<PlantedFault>* planted) {
  Plan plan;
  if (options.stragglers > 0) {
    if (options.straggler_category == Category::kCommunication) {
      return ErrorStatus("a straggler's excess must be its own work, not communication");
    }
    if (options.stragglers * 2 >= options.workers) {
      return ErrorStatus("{} stragglers among {} workers is not a minority", options.stragglers, options.workers);
    }
    std::unordered_set<int> chosen;
    std::uniform_int_distribution<int64_t> pick(0, options.workers - 1);
    while (static_cast<int>(chosen.size()) < options.stragglers) chosen.insert(static_cast<int>(pick(*rng)));
    plan.stragglers.assign(chosen.begin(), chosen.end());
    std::sort(plan.stragglers.begin(), plan.stragglers.end());
    plan.straggler_function =
        FunctionOf(model, options.straggler_category, HostKind::kNone, DefaultFunctionName(options.straggler_category));
    plan.straggler_seconds = options.straggler_excess * model->iteration_s;
    plan.wait_function = FunctionOf(model, Category::kCommunication, HostKind::kNone, "allreduce");
    planted->push_back({false, options.straggler_category, model->functions[plan.straggler_function].name,
                        plan.stragglers, options.straggler_excess});
  }
  if (!options.global_kind.empty()) {
    Category category;
    HostKind kind = HostKind::kNone;
    if (options.global_kind == "python") {
      category = Category::kHost;
      kind = HostKind::kPython;
    } else if (options.global_kind == "dataloader") {
      category = Category::kDataloader;
    } else {
      return ErrorStatus("unknown global fault '{}' (python or dataloader)", options.global_kind);
    }
    plan.has_global = true;
    plan.global_function = FunctionOf(model, category, kind, DefaultFunctionName(category));
    plan.global_seconds = options.global_excess * model->iteration_s;
    planted->push_back({true, category, model->functions[plan.global_function].name, {}, options.global_excess});
  }
  return plan;
}

// Fills `w` (reused across workers: its strings keep their capacity) with one worker.
class WorkerMaker {
 public:
  WorkerMaker(const TemplateModel& model, const Plan& plan, int64_t workers, std::mt19937_64* rng)
      : model_(model), plan_(plan), workers_(workers), rng_(rng), seconds_(model.functions.size()) {}

  void Make(int rank, WorkerPattern* w) {
    bool straggler = plan_.IsStraggler(rank);
    double delay = plan_.stragglers.empty() ? 0 : plan_.straggler_seconds;
    std::array<double, kCategoryCount> category_seconds{};
    double total = 0;
    for (size_t i = 0; i < model_.functions.size(); ++i) {
      const FunctionModel& f = model_.functions[i];
      double s = -1;  // absent
      if (f.presence >= 1 || uniform_(*rng_) < f.presence)
        s = f.seconds * std::max(0.0, 1 + f.relative_spread * normal_(*rng_));
      if (plan_.has_global && i == plan_.global_function) s = std::max(s, 0.0) + plan_.global_seconds;
      if (straggler && i == plan_.straggler_function) s = std::max(s, 0.0) + plan_.straggler_seconds;
      if (!straggler && delay > 0 && i == plan_.wait_function) s = std::max(s, 0.0) + delay;
      seconds_[i] = s;
      if (s > 0) {
        category_seconds[static_cast<size_t>(f.category)] += s;
        total += s;
      }
    }
    for (int c = 0; c < kCategoryCount; ++c) {
      double r = model_.residual_seconds[c] * std::max(0.0, 1 + kResidualSpread * normal_(*rng_));
      category_seconds[c] += r;
      total += r;
    }
    FillHeader(rank, total, w);
    for (int c = 0; c < kCategoryCount; ++c) w->category_beta[c] = category_seconds[c] / total;
    w->iteration_category_beta.resize(static_cast<size_t>(model_.iterations));
    for (auto& betas : w->iteration_category_beta) {
      double sum = 0;
      for (int c = 0; c < kCategoryCount; ++c) {
        betas[c] = static_cast<float>(w->category_beta[c] * std::max(0.0, 1 + kIterationSpread * normal_(*rng_)));
        sum += betas[c];
      }
      for (float& b : betas) b = static_cast<float>(b / sum);
    }
    FillFunctions(total, w);
    w->collectives = model_.collectives;
    for (CollectiveCall& c : w->collectives) {
      c.duration_us = static_cast<float>(c.duration_us * std::max(0.0, 1 + kCollectiveSpread * normal_(*rng_)));
    }
    if (!straggler && delay > 0 && !w->collectives.empty())
      w->collectives[0].duration_us += static_cast<float>(delay * 1e6);
  }

 private:
  void FillHeader(int rank, double iteration_s, WorkerPattern* w) {
    w->rank = rank;
    w->world_size = static_cast<int>(workers_);
    w->host = fmt::format("node-{}", rank / 8);
    w->source = "synth";
    w->has_device = model_.has_device;
    w->device_name = model_.device_name;
    w->group = model_.group;
    w->step_ids = model_.step_ids;
    w->iteration_s = iteration_s;
    w->window_ns = static_cast<int64_t>(iteration_s * model_.iterations * 1e9);
    w->dataloader_ops_per_iter = model_.dataloader_ops_per_iter;
    w->compute_calls_per_iter = model_.compute_calls_per_iter;
    w->warnings.clear();
  }

  void FillFunctions(double total, WorkerPattern* w) {
    size_t count = 0;
    for (size_t i = 0; i < model_.functions.size(); ++i) count += seconds_[i] >= 0 ? 1 : 0;
    w->functions.resize(count);
    size_t k = 0;
    for (size_t i = 0; i < model_.functions.size(); ++i) {
      if (seconds_[i] < 0) continue;
      const FunctionModel& m = model_.functions[i];
      FunctionPattern& f = w->functions[k++];
      f.name.assign(m.name);
      f.category = m.category;
      f.host_kind = m.host_kind;
      f.beta = seconds_[i] / total;
      f.mu = m.mu;
      f.sigma = m.sigma;
      f.calls_per_iter = m.calls_per_iter;
      f.mean_duration_us = m.calls_per_iter > 0 ? seconds_[i] * 1e6 / m.calls_per_iter : 0;
      f.bytes_per_iter = m.bytes_per_iter;
      f.shapes_hash = m.shapes_hash;
    }
    std::sort(w->functions.begin(), w->functions.end(),
              [](const FunctionPattern& a, const FunctionPattern& b) { return a.beta > b.beta; });
  }

  const TemplateModel& model_;
  const Plan& plan_;
  int64_t workers_;
  std::mt19937_64* rng_;
  std::normal_distribution<double> normal_;
  std::uniform_real_distribution<double> uniform_;
  std::vector<double> seconds_;
};

nlohmann::json TruthJson(const SynthOptions& options, const SynthResult& result, const TemplateModel& model) {
  nlohmann::json planted = nlohmann::json::array();
  for (const PlantedFault& p : result.planted) {
    planted.push_back({{"scope", p.global ? "global" : "local"},
                       {"category", CategoryName(p.category)},
                       {"function", p.function},
                       {"workers", p.ranks},
                       {"excess_share", p.excess_share}});
  }
  return {{"schema", "eroica.synth-truth/v1"},
          {"workers", options.workers},
          {"seed", options.seed},
          {"template_workers", model.template_workers},
          {"functions_per_worker", model.functions.size()},
          {"healthy_iteration_s", result.healthy_iteration_s},
          {"planted", planted}};
}

}  // namespace

StatusOr<SynthResult> Synthesize(const std::vector<WorkerPattern>& templates, const SynthOptions& options,
                                 const std::string& output_path, const std::string& truth_path) {
  if (options.workers < 1 || options.workers > (int64_t{1} << 30)) {
    return ErrorStatus("workers must be between 1 and 2^30, not {}", options.workers);
  }
  StatusOr<TemplateModel> built = BuildTemplateModel(templates);
  if (!built.ok()) return built.status();
  TemplateModel model = std::move(*built);
  std::mt19937_64 rng(options.seed);
  SynthResult result;
  result.workers = options.workers;
  result.healthy_iteration_s = model.iteration_s;
  StatusOr<Plan> plan = MakePlan(&model, options, &rng, &result.planted);
  if (!plan.ok()) return plan.status();

  StatusOr<AtomicFileWriter> out = AtomicFileWriter::Create(output_path);
  if (!out.ok()) return out.status();
  PatternWriter writer(options.workers_per_block, options.zstd_level);
  WorkerMaker maker(model, *plan, options.workers, &rng);
  WorkerPattern worker;
  auto write = [&](const std::string& bytes) {
    result.bytes += static_cast<int64_t>(bytes.size());
    return std::fwrite(bytes.data(), 1, bytes.size(), out->stream()) == bytes.size();
  };
  for (int64_t rank = 0; rank < options.workers; ++rank) {
    maker.Make(static_cast<int>(rank), &worker);
    writer.Add(worker);
    if ((rank + 1) % static_cast<int64_t>(options.workers_per_block) == 0 && !write(writer.TakeCompleted())) {
      return ErrorStatus("{}: write failed", output_path);
    }
  }
  if (!write(writer.Finish())) return ErrorStatus("{}: write failed", output_path);
  EROICA_RETURN_IF_ERROR(out->Commit());
  if (!truth_path.empty()) {
    EROICA_RETURN_IF_ERROR(WriteFileAtomically(truth_path, TruthJson(options, result, model).dump(2) + "\n"));
  }
  return result;
}

}  // namespace eroica
