// One piece of a job's Python, however the trace names it. A host point is named after the ops
// around its gap, and the same code can sit between different ops from step to step: a loop run
// after the optimizer, before the next batch's collate, followed `aten::zeros` in 3 steps of 5
// and `aten::empty` in the others (the step's last op moved), so it held points of 0.6, 0.2 and
// 0.2 calls a step, each below a point's bar and none in every step, though every step ran it at
// one line. Points whose stack samples put most of their time at one line of the job's code are
// that line's point here. Which line a point is at is decided for the group, by the ranks whose
// samples tell (the line most of them name), and then holds on every rank: a rank whose samples
// missed the point, or split it, still counts it at that line, as its peers do.
#pragma once

#include <cstdint>
#include <vector>

#include "localize/groups.h"

namespace eroica {

struct LinePoint {
  uint64_t key = 0;                        // the line's or the lone point's
  const FunctionEntry* largest = nullptr;  // its largest point: its name and its line
  double beta = 0;                         // of all its points
  double calls_per_iter = 0;               // of all its points
  double usual = 0;                        // what their usual calls explain (UsualCallShare), summed
  int points = 0;                          // how many program points it joins
  bool by_line = false;                    // keyed by a line (else by its one point's name)
};

// Whether `f` is a point of the job's code: host time at a Python program point or GC. Folded
// tails and unattributed Python are many places at once, and a resumption after a collective is
// where the scheduler's queueing lands: none is a point.
bool IsCodePoint(const WorkerGroup& group, const FunctionEntry& f);

// Each member's host points by line (IsCodePoint).
std::vector<std::vector<LinePoint>> LinePoints(const WorkerGroup& group);

}  // namespace eroica
