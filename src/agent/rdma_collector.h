// RDMA (InfiniBand / RoCE) ports, from /sys/class/infiniband/<dev>/ports/<n>/:
//   rdma.rcv_bytes, rdma.xmit_bytes  counters; counters/port_{rcv,xmit}_data count 4-byte
//                                    words, so values are × 4; instance "mlx5_0/1"; capacity
//                                    from the port's "rate" file ("200 Gb/sec (4X HDR)")
// RDMA traffic bypasses the kernel, so it is missing from the net.* counters of the same NIC.
// Absent hosts (no /sys/class/infiniband) cost one directory listing a rescan.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "agent/error_log.h"
#include "agent/proc_file.h"

namespace eroica::agent {

// "200 Gb/sec (4X HDR)" → 25'000'000'000 bytes/s; 0 when unreadable.
int64_t ParseRdmaRateBytesPerSecond(std::string_view text);

class RdmaCollector : public Collector {
 public:
  RdmaCollector(const std::string& root, int rescan_every_n, ErrorLog* log);

  std::string_view name() const override { return "rdma"; }
  void Sample(int64_t now_ns) override;
  void Emit(MetricSink& sink) override;

 private:
  struct Port {
    std::array<ProcFile, 2> files{ProcFile(""), ProcFile("")};  // rcv, xmit
    std::array<std::optional<int64_t>, 2> bytes;
    std::array<SeriesId, 2> ids{kNoSeries, kNoSeries};
    int64_t capacity_bytes_per_s = 0;
    bool capacity_changed = true;  // register again so the store keeps the new capacity
  };

  void Rescan();

  std::string root_;
  int rescan_every_n_;
  ErrorLog* log_;
  int64_t last_now_ns_ = 0;
  int samples_until_rescan_ = 0;
  std::map<std::string, Port> ports_;  // by "dev/port"
  std::vector<SeriesId> to_release_;
};

}  // namespace eroica::agent
