// Whose code is a straggler's extra work? A rank that runs code its peers never run (an evaluation
// pass, a metric or a log written on one rank) calls more ops, often the very ops training calls,
// so neither its calls' counts nor their sizes tell that code from more data. Its stack samples do:
// such code sits under a line of the job's own code that the rank's samples hold for much of its
// window and its peers' never reach, while more data or a slower processor stretches the lines
// every rank runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/interner.h"
#include "localize/expectations.h"
#include "localize/groups.h"

namespace eroica {

struct OwnCodeLine {
  StringId location = Interner::kEmpty;  // "path/file.py:57(function)"
  double share = 0;                      // of the suspect's sampled window
  uint32_t depth = 0;                    // the job's frames outside it (CodeFrame::depth)
  size_t peers_without = 0;              // peers whose samples never reached the line
  size_t peers_sampled = 0;              // peers with stack samples at all
  double most_a_peer_held = 0;           // the largest share of a peer's window at the line
};

// Whether a window without a line says its worker never ran it, where another worker's samples
// put `line_periods` sampling periods there (share x WorkerPattern::code_line_periods) out of
// `sampled_periods`, and the window without it spans `other_periods`. Had both run the line alike,
// each of its periods fell in the sampled window with chance sampled/(sampled + other), all of
// them by chance at most kChanceLineMissed: one sample, or two (a rank descheduled inside its
// data loading on a busy machine), never tells. False where either count is unknown (0).
inline constexpr double kChanceLineMissed = 0.01;
bool MissingLineMeansNeverRan(double line_periods, double sampled_periods, double other_periods);
// The logarithm of that chance (0 where either count is unknown). Windows sampled apart (ranks'
// samplers) miss a line independently: their chances multiply, their logarithms add.
double LogChanceLineMissed(double line_periods, double sampled_periods, double other_periods);

// Whether member `suspect`'s extra time can be code of its own at all: such code adds op calls
// (an evaluation's forward, a loop logging each parameter's norm: its compute calls stand out of
// the ranks' counts, ComputeCalls) or Python between the ops (a save, a hook walking tensors: its
// host time grew by at least as much as its ops'). Neither, its extra time is in the ops every
// rank calls, as often, run longer: the same work done slower, and a line its peers' samples
// missed is one they passed in less than a sampling period. A healthy 4-rank ViT on 2 cores
// whose rank 1's ops ran 20 ms a step longer (on a CPU 0.07 of the window longer, the node 96 %
// busy) had 3 % of its window under the patch embedding's line, which its peers' samples missed.
bool ExtraWorkCanBeCode(const WorkerGroup& group, size_t suspect, const Expectations& e);

// The line of member `suspect`'s training thread that holds at least half of its own-work
// `excess` (shares of an iteration) and that a majority of its sampled peers never ran (not on
// their lists of lines, which were not full: WorkerPattern::code_lines, with too many of the
// suspect's samples there for chance: MissingLineMeansNeverRan), and at which no sampled peer spent
// as much of its window (where one did, the line is every rank's and those without it passed it
// quicker: an unseen 4-rank ViT on cores 99.9 % busy, ranks 0 and 1 waited for in alternate steps,
// had 0.16 and 0.20 of their windows at the gradient clipping's line, ranks 2 and 3 too little to
// list, and rank 0 was named `local host` there); of several, the deepest, nearest the work. None without samples on
// the suspect and on at least one peer. The line must also hold more of its window than its training thread was queued
// for a CPU beyond its peers' median, by `floor`: a line every rank passes quickly can still hold a rank's samples
// while the scheduler keeps it there, no longer than it queued it. A healthy 4-rank CNN's rank 3
// had 0.09 of its window at `optimizer.zero_grad()`, which its peers passed unsampled, and had
// queued +0.09; a 6-rank CNN's rank 1 saving a checkpoint with fsync had 0.23 under the save,
// queued +0.14; a 3-rank MLP's rank 1 running an evaluation every step 0.24, queued +0.08.
// That floor is e.min_excess_beta. None where its extra work cannot be code (ExtraWorkCanBeCode).
std::optional<OwnCodeLine> LineOnlyItRuns(const WorkerGroup& group, size_t suspect, double excess,
                                          const Expectations& e);

}  // namespace eroica
