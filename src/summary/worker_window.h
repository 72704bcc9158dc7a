// Which iterations a trace covers and the window a pattern describes: whole ProfilerStep
// iterations on the CPU side, extended to the end of the GPU work they launched (linked by
// correlation id, since GPU work often lags the CPU by milliseconds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/huge_page_allocator.h"
#include "summary/classify.h"
#include "trace/trace.h"

namespace eroica {

struct WorkerWindow {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t main_pid = 0;                 // the training process (its CPU threads)
  int64_t main_tid = -1;                // its thread that runs the steps; -1 when no step marks it
  std::vector<int64_t> step_ids;        // ProfilerStep#N numbers, in time order
  std::vector<int64_t> step_starts_ns;  // where each step begins; the last runs to end_ns
  std::string warning;                  // set when there are no step markers
  // On CPU training: the training thread's last collective launch whose backend range was never
  // recorded (UnrecordedCollective), and where its wait for it ended; -1 when there is none.
  int64_t unrecorded_launch_ns = -1;
  int64_t unrecorded_wait_end_ns = -1;

  int64_t length_ns() const { return end_ns - start_ns; }
};

WorkerWindow FindWorkerWindow(const Trace& trace, const BigVector<EventRole>& roles);

// On CPU training the backend's thread (gloo) records each collective's range when it completes;
// the training thread records only its launch (c10d::*), then waits for the result in its step.
// When the profiler stops while that thread has yet to record the window's last collective, the
// training thread's wait for it reads as Python between its ops. So a launch in the last step
// after which no backend range starts, in a trace whose backend records ranges, is that wait up
// to the training thread's next op (or the window's end). edge18's healthy 8-rank transformer
// (seed 904): rank 6's last all-reduce had no gloo range; its 87 ms wait was named Python, a
// false alarm. 1 of 1,025 rank traces of the 17-series lacked it.
void FindUnrecordedCollective(const Trace& trace, const BigVector<EventRole>& roles, WorkerWindow* window);

}  // namespace eroica
