// Ranges of the training thread that wait for a collective they launched, found by what they do
// rather than by name. On CPU training a collective called from inside an op (a user's autograd
// Function that all-reduces: Megatron's copy-to / reduce-from tensor-parallel region, or any
// custom op) is recorded as the op's range (its forward, its backward node and the engine's range
// around that node), the launch (c10d::*) nested in it, and the backend's range (gloo:*) on the
// backend's thread; the training thread blocks inside the op until the backend is done. Read as
// the op (a backward node is CPU compute, which outranks communication on the critical path), the
// wait for a slower partner is the waiting rank's compute: on an unseen tensor-parallel job a
// throttled rank's TP partner spent 0.2 of its window in CopyToTPBackward, 96 % of it inside
// gloo:all_reduce, and was named the straggler.
//
// Such a range is read as the collective call it makes, as if the collective had been called
// from Python directly: the range is dropped, the backend's range paints the wait, the time the
// thread took to come back after it is a resume point and the time before it a program point
// (program_points.h), and any op the range runs itself still paints as that op. It needs the
// launch recorded: torch.distributed.nn's functions whose launch torch 1.13 does not record (an
// unseen mixture-of-experts job: _AlltoAllSingle over gloo:all_to_all and nothing else) are known
// by name instead (classify.cc); _AlltoAll records its scatters and is taken here too.
#pragma once

#include "base/huge_page_allocator.h"
#include "summary/classify.h"
#include "summary/worker_window.h"
#include "trace/trace.h"

namespace eroica {

// Sets to kIgnore the role of every range of the window's training thread that waited for a
// collective: one whose thread recorded nothing after the range's last collective launch until
// the backend's range for it was half done, and that ran on past that point (a CPU op, or an
// annotation that recorded less work after the wait than the wait took). CPU training only (on GPU training the device
// runs the collectives and the CPU thread does not wait for them).
void DropRangesThatWaitForACollective(const Trace& trace, const WorkerWindow& window, BigVector<EventRole>* roles);

}  // namespace eroica
