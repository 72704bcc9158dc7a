// Diagnosis against the job's own past (`diagnose --baseline`): comparing workers with each
// other cannot see a job that got slower everywhere at once; comparing each with the baseline
// can. A change on (almost) every worker of a role that explains the slowdown becomes a global
// finding of the category of what grew; local findings from peers keep their priority when they
// explain the slowdown, and a baseline change on their ranks is added to their evidence.
#pragma once

#include <optional>
#include <string_view>
#include <unordered_set>

#include "diff/neighbour_growth.h"
#include "diff/pattern_diff.h"
#include "localize/finding.h"

namespace eroica {

struct BaselineOptions {
  // "Almost all": at most this share of a role's workers may lack the change (⌊n·share⌋; all
  // of them in groups under 10).
  double missing_share = 0.1;
  // A local finding explains the slowdown when it costs at least this share of it.
  double explains_share = 0.5;
  // The slowdown must exceed this share of the baseline's iteration (the detector's 1.05).
  double min_slowdown_share = 0.05;
  // The detector's own measure of the slowdown, ms per iteration (its window's mean against its
  // best, unprofiled, over tens of iterations), where it started the session; 0 otherwise. Two
  // profiled windows of 5 iterations can differ by the profiler's cost alone: an audio job's
  // baseline window ran 126 ms a step where the job ran 94-100, and its session's, started by the
  // detector at 94 -> 106 ms, ran 126 ms too.
  double detected_slowdown_ms = 0;
  // A node whose processes outside the job grew past it since the baseline (neighbour_growth.h):
  // said in a note, and every rank's slower ops or collectives are its symptom, not a cause.
  std::optional<NeighbourGrowth> neighbour;
  // Whether a global finding of the window's own analysis stands for the whole slowdown
  // (UnexplainedSlowdownMs); where not, it explains its impact, as a cause these rules measured.
  bool window_globals_stand_for_it = true;
};

void ApplyBaseline(const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options = {});

// What the nodes' readings say of the window the rules below read: whether its cores were busy
// (kBusyCoresShare of the window, median over the ranks read: ops slower on every rank may be
// another consumer's doing), and the ranks a CPU quota held back (cpu.stat's throttled share at
// the localizer's bar, HeldBackByQuota: such a rank's slower ops are its quota's, not the node's).
struct CoresNow {
  bool busy = false;
  std::unordered_set<int> held_by_quota;
};
CoresNow ReadCoresNow(const std::vector<WorkerPattern>& now);

// The slowdown against the baseline (ms per iteration: the profiled windows' difference where it
// exceeds min_slowdown_share of the baseline's iteration, or the detector's, the larger) that the
// findings leave, where that is a slowdown by the same rule, else 0: where the rules below
// (new_code_lines.h, busy_loader_workers.h, own_loader_growth.h) look for a cause the pattern
// diff's bars missed, each by its own measure, held to what is left. A hang stands for all of it,
// so does a neighbour that came to hold a node (`neighbour`), and so does a global finding of the window's own analysis
// (a share of this window's step, not a growth) unless `window_globals_stand_for_it` is off. Every other finding
// explains its impact, whatever its share: a rank's own cost measured against its peers is what that rank cost, not
// what the rest of the job lost meanwhile. An unseen 5-rank GAN whose rank 0 ran per-sample
// statistics in Python (86 ms a step) while every rank's loader workers took 16.5 ms more of CPU
// a step on the 2 shared cores went 190 -> 290 ms a step; the statistics stood for all of it
// where a finding explaining half the slowdown stood for the whole (stop 60's rule). A rank its
// own CPU quota held back already explained its impact only: a 4-rank denoiser's quota, 40 ms of
// a 67 ms slowdown, had stood for the cores every rank's loader workers took. On busy shared cores
// (`cores.busy`) a global compute or memory finding of the baseline's explains nothing: every
// rank's ops run slower there when something else takes the cores; nor does a rank named by its
// ops' speed (local compute or imbalance, no CPU quota holding it back), which the same
// contention moves between ranks. Such a rank's finding stays, after what the rules find.
double UnexplainedSlowdownMs(const PatternDiff& diff, const Diagnosis& diagnosis, const BaselineOptions& options,
                             const CoresNow& cores);

// The baseline's profiled iterations for an evidence: " (iterations A-B)", "" where unknown.
std::string StepsText(const DiffSide& side);

// How `slowdown_ms` (UnexplainedSlowdownMs) was measured, for a finding's evidence: "(iteration A
// ms at the baseline, B ms now)", and the detector's figure where it was the larger.
std::string SlowdownSource(const PatternDiff& diff, const BaselineOptions& options, double slowdown_ms);

// The words every new-code finding's evidence holds (FindNewCodeOnEveryRank): such a finding of
// compute says which code ran, so it is no symptom for FoldSlowerOpsInto.
inline constexpr std::string_view kNewCodeEvidence = "code their baseline's samples never reached";

// Moves the baseline's global compute and memory findings into `cause`'s evidence (the ops that
// ran slower beside it) and out of the diagnosis, and says beside each rank named by its ops' speed
// that the cores were taken; a rule that found what took the cores calls it.
void FoldSlowerOpsInto(Diagnosis* diagnosis, Finding* cause, const CoresNow& cores);

// On busy shared cores (`cores.busy`), a window's finding of one rank's own processes that took
// cores every rank runs on (Finding::cores_taken_s_per_iter: its loader workers, its other
// threads) slows every rank's ops alike: the baseline's finding that every rank's ops got slower
// (SlowerOpsSinceTheBaseline) is their symptom where it costs no more than they took, and goes
// into the finding that took the most, as its evidence. An unseen 4-rank mixture of experts whose
// rank 3's loader worker took 0.36 of the 2 cores (97 % busy) while rank 2 had twice the batch
// listed `global compute` (every rank's matrix products 9.7 -> 13.9 ms a call, 53.6 ms a step)
// between the loader (79.1 ms) and rank 2's imbalance (28.1 ms).
void FoldSlowerOpsIntoTakenCores(const std::vector<WorkerPattern>& now, Diagnosis* diagnosis);

// Moves every "every rank's ops got slower" finding (SlowerOpsSinceTheBaseline) that costs no more
// than `taken_s` per iteration into `cause`'s evidence, as the symptom of the cores its processes
// took; `cause` may be one of the diagnosis's findings (never such a one itself).
void FoldSlowerOpsCostingNoMoreThan(Diagnosis* diagnosis, Finding* cause, double taken_s);

// Adds a finding a rule for an unexplained slowdown made (UnexplainedSlowdownMs), most costly
// first: behind the findings that cost more, ahead of standing costs and, on busy cores, of what
// may be their symptom (slower ops; a rank named by its ops' speed). A 5-rank forecaster whose rank
// 3 got a 35 % quota (its window 0.31 throttled, peers 0) was named for it at 94 ms a step, second
// to the job's evaluation pass, new code at 26 ms.
void InsertUnexplainedCause(Diagnosis* diagnosis, Finding cause, const CoresNow& cores);

// A worker's time in `category` (its share of the window's critical path), ms per iteration.
inline double CategoryMsPerIter(const WorkerPattern& w, Category category) {
  return w.category_beta[static_cast<size_t>(category)] * w.iteration_s * 1e3;
}

// The job's step, ms, for bars in shares of a step: the faster of the two profiled windows. A
// profiler only adds time, and most to the job's first window, which is its baseline's: an audio
// job's ran 420 ms a step where the job ran 200-260 (6 ranks, 2 loader workers a rank, 2 cores),
// 126 where it ran 94-100 (3 ranks).
double StepMs(const PatternDiff& diff);

// A rank's pattern at the baseline and now.
struct RankPair {
  const WorkerPattern* base;
  const WorkerPattern* now;
};

// Every rank of `now` that the baseline also has, in `now`'s order.
std::vector<RankPair> PairsByRank(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now);

// Whether `n` of `workers` is almost all of them (BaselineOptions::missing_share), and at least 2.
bool AlmostAll(size_t n, size_t workers, const BaselineOptions& options);

}  // namespace eroica
