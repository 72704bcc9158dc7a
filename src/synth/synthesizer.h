// The synth module's facade: a pattern bundle for N synthetic workers made from a real job's
// patterns, with known faults planted, and the truth written beside it (`eroica synth`). It is
// what diagnose is measured on at scales no real trace set reaches, and the check that the
// fast answer is also the right one.
//
// Each worker is the template job's healthy worker (template_model.h) with its own noise.
// Planted faults follow a synchronous job's arithmetic: a straggler's extra own work of d
// seconds makes every iteration d longer, and every other worker spends those d seconds
// waiting in its first collective; a global fault adds the same time to every worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "summary/category.h"
#include "summary/pattern.h"

namespace eroica {

struct SynthOptions {
  int64_t workers = 1000;
  uint64_t seed = 1;
  // Local faults: `stragglers` workers chosen at random whose function of
  // `straggler_category` takes `straggler_excess` of the healthy iteration more.
  int stragglers = 3;
  Category straggler_category = Category::kDataloader;
  double straggler_excess = 0.15;
  // Optional global fault on every worker: "" (none), "python" (unattributed Python on the
  // critical path) or "dataloader" (input pipeline), adding `global_excess` of the iteration.
  std::string global_kind;
  double global_excess = 0.08;
  size_t workers_per_block = 4096;
  int zstd_level = 3;
};

struct PlantedFault {
  bool global = false;  // local: `ranks` are the culprits
  Category category = Category::kHost;
  std::string function;
  std::vector<int> ranks;   // local: the culprits; global: empty (every worker)
  double excess_share = 0;  // of the healthy iteration
};

struct SynthResult {
  int64_t workers = 0;
  int64_t bytes = 0;
  double healthy_iteration_s = 0;
  std::vector<PlantedFault> planted;
};

// Writes the bundle to `output_path` (block by block, so memory stays small at any N) and the
// truth as JSON ("eroica.synth-truth/v1") to `truth_path` when it is not empty.
StatusOr<SynthResult> Synthesize(const std::vector<WorkerPattern>& templates, const SynthOptions& options,
                                 const std::string& output_path, const std::string& truth_path);

}  // namespace eroica
