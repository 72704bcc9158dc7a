// Hardware utilisation of one training process, normalised to [0, 1], from a metrics file:
// what the summarizer needs for μ and σ of each function's resource.
//
// Each point covers the interval from the previous sample to ts_unix_ns (counters: the rate
// over that interval; gauges: the reading at ts, which NVML itself averages over its own
// sample period). Per resource:
//   kCpu      the process's threads: Σ min(thread utilisation, 1) / (number of active threads)
//             (a thread's surplus over one core in an interval, from a late reading, is
//             carried into the next intervals, not dropped),
//             where a thread is active when it used ≥ 5 % of a core over the whole file (or
//             the given threads only, when tids is not empty). So 1.0 means every thread that
//             does work was busy; one busy thread of four active ones reads 0.25. Without
//             thread series: the process's CPU time rate, capped at one core.
//   kNetwork  max over the host's interfaces (all but "lo", plus RDMA ports) of
//             max(rx, tx bytes/s) / capacity. Per direction, because links are full duplex:
//             (rx + tx) / speed would call a ring all-reduce at half line rate saturated.
//             Capacity = link speed (RDMA: port rate); where unknown (virtual NICs report
//             -1), the highest per-direction rate any interface reached in the file.
//   kGpuSm    gpu.sm_util_pct / 100 of the process's GPU.
//   kPcie     max(tx, rx) / PCIe capacity (max generation × width) of the process's GPU;
//             unknown capacity: the highest rate in the file.
//   kNvlink   max(tx, rx) / (links × link speed) of the process's GPU; same fallback.
// The process's GPU: its gpu_index in the file's process table; else the only GPU; else, when
// the host's ranks and GPUs are equally many, the i-th lowest rank gets the i-th GPU (the
// torchrun LOCAL_RANK convention); else no GPU series.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/metrics_file.h"
#include "base/resource_kind.h"
#include "base/status.h"

namespace eroica::agent {

struct UtilizationSeries {
  ResourceKind resource;
  std::string label;  // what it was computed from, for humans
  std::vector<int64_t> ts_unix_ns;
  std::vector<float> utilization;  // in [0, 1], same length as ts_unix_ns
};

// The series available for `pid`, in ResourceKind order; resources without data are left out.
// An error when the file knows nothing of the process (no process entry, no series).
StatusOr<std::vector<UtilizationSeries>> UtilizationForProcess(const MetricsFile& file, int64_t pid,
                                                               const std::vector<int64_t>& tids = {});

}  // namespace eroica::agent
