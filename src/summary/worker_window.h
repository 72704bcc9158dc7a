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

  int64_t length_ns() const { return end_ns - start_ns; }
};

WorkerWindow FindWorkerWindow(const Trace& trace, const BigVector<EventRole>& roles);

}  // namespace eroica
