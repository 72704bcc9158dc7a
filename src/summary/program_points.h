// Unattributed Python named by where it runs. Time on the critical path that no recorded op
// covers is Python (or the interpreter, or the scheduler) between two ops of the training
// thread; its name is that program point: "(python between A and B)", A and B the outermost
// ops that end just before it and start just after it.
//
// Why not one bucket: code runs at one program point every iteration (a hot loop owns one
// point, on every rank), while preemption and wake-up delays on a busy host land at many.
// One bucket adds healthy noise from forty gaps into one β that looks like a hot loop.
//
// The window's edges cut the last step's trailing Python and the first step's leading Python:
// such a gap takes the point the other steps' same gap has (program_points.cc
// JoinPointsCutByTheWindow), so a cost of every step is a point reached every step.
//
// On CPU training a gap that begins where a collective on the critical path ends is the training
// thread coming back from waiting on it (the backend's thread finishes the collective and wakes
// it): "(resuming after allreduce, before B)" (function_name.h IsResumePoint). Healthy ranks
// take under a millisecond there; a rank queued for a CPU at that moment took 8-30 ms per step on
// 2 shared cores, which is the scheduler's, not the code's.
#pragma once

#include <cstdint>

#include "base/huge_page_allocator.h"
#include "summary/classify.h"
#include "summary/critical_path.h"
#include "summary/function_table.h"
#include "summary/worker_window.h"
#include "trace/trace.h"

namespace eroica {

// Renames the spans of `unattributed` in `critical_path` (sorted, disjoint) after their program
// point and counts each gap as one call of it. `functions` maps events to table entries; the
// landmarks are the CPU ops of the window's training thread (all threads of the training
// process when no step marks one). Spans with no op on either side keep `unattributed`.
// `has_device`: GPU training, where a collective is the device's and never wakes the thread.
void NameProgramPoints(const Trace& trace, const BigVector<EventRole>& roles, const BigVector<uint32_t>& functions,
                       const WorkerWindow& window, uint32_t unattributed, bool has_device, CriticalPath* critical_path,
                       FunctionTable* table);

}  // namespace eroica
