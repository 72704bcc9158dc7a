// What changed between two runs of a job: every worker's pattern on one side (the base: last
// week's run, the job's own baseline) against the other (now), per function and per category, in
// time per iteration and per call, with the ranks that changed. This is `eroica diff` and what
// `diagnose --baseline` builds its global findings from (docs/REPORTS.md "eroica.diff/v1").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "summary/pattern.h"

namespace eroica {

// When a difference counts as one (docs/REPORTS.md "How noise is judged"). A worker's change
// must exceed `noise_spreads` robust spreads (1.4826·MAD) of that function's time per iteration
// across the like workers of *either* side, and `min_iteration_share` of the worker's iteration:
// below that share the online detector (1.05 × the best mean) would not call it a slowdown.
struct DiffOptions {
  double noise_spreads = 3.0;
  double min_iteration_share = 0.05;
};

enum class ChangeKind : uint8_t { kGrew, kShrank, kAppeared, kVanished };
std::string_view Name(ChangeKind kind);

// A collective's recorded calls on one side: the mean over its calls of each call's shortest
// duration over the workers, and of their mean duration; -1 where fewer than two workers carry
// such calls (older pattern files, a function that is no collective).
struct CollectiveCalls {
  double shortest_ms = -1;
  double mean_ms = -1;

  bool known() const { return shortest_ms >= 0; }
};

// One function's (or, with an empty `function`, one category's) change on the workers of one
// role. Figures are medians over the affected workers.
struct PatternChange {
  std::string role;      // the workers' role signature ("" when the job has one role)
  std::string function;  // empty: the category's total
  Category category = Category::kHost;
  ChangeKind kind = ChangeKind::kGrew;
  double base_ms_per_iter = 0;  // time it owns the critical path per iteration
  double now_ms_per_iter = 0;
  double delta_ms_per_iter = 0;          // median of the affected workers' own changes (signed)
  double largest_delta_ms_per_iter = 0;  // the affected worker that changed most (signed)
  double base_ms_per_call = 0;           // mean inclusive duration of one call (0 for a category)
  double now_ms_per_call = 0;
  double base_calls_per_iter = 0;
  double now_calls_per_iter = 0;
  double noise_ms_per_iter = 0;  // the bar the change cleared
  // A collective's calls, aligned by order across the role's workers (each worker's first calls
  // of the window, pattern.h `collectives`). Every rank waits at a collective until the last one
  // arrives, so each call's shortest duration over the workers, the last arrival's, is the
  // transfer itself, and the rest of a call is waiting.
  CollectiveCalls base_calls;
  CollectiveCalls now_calls;
  std::vector<int> ranks;  // affected workers (ranks on the "now" side)
  int role_workers = 0;    // workers of this role on the "now" side

  bool grew() const { return kind == ChangeKind::kGrew || kind == ChangeKind::kAppeared; }
};

struct DiffSide {
  int workers = 0;
  int world_size = 0;       // as the patterns declare it (0 when unknown)
  double iteration_ms = 0;  // median over workers of the mean iteration time
  double min_iteration_ms = 0;
  double max_iteration_ms = 0;
  int64_t first_step = -1;  // the profiled iterations (ProfilerStep numbers), -1 when unknown
  int64_t last_step = -1;
};

struct PatternDiff {
  DiffSide base;
  DiffSide now;
  // Grown first, then shrunk; within each, own work before communication (a worker's own slower
  // work makes its peers wait: the waiting is the symptom), then by the largest change.
  std::vector<PatternChange> functions;
  std::vector<PatternChange> categories;
  std::vector<std::string> notes;  // world sizes that differ, roles found on one side only

  bool same() const { return functions.empty() && categories.empty(); }
};

PatternDiff DiffPatterns(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                         const DiffOptions& options = {});

// The first of `changes` (largest first) that grew in `category` on fewer than half of its role's
// ranks, none of them `excluded`: one rank's own change (a change on more is every rank's); null
// where none did.
const PatternChange* GrownOnFewerThanHalf(const std::vector<PatternChange>& changes, Category category,
                                          const std::function<bool(int rank)>& excluded);

}  // namespace eroica
