// Network interfaces, from /sys/class/net/<if>/ (every interface but "lo"):
//   net.rx_bytes, net.tx_bytes      counters, capacity = link speed in bytes/s (0: unknown)
//   net.rx_packets, net.tx_packets  counters, read every packets_every_n samples only (the
//                                   bytes carry the utilisation; packets are for context)
//   net.speed_mbps                  gauge, recorded at each rescan (-1: unknown), so a link
//                                   that renegotiates or flaps shows up
// The interface list and speeds are re-read every rescan_every_n samples (about once a
// second); at most max_interfaces are followed.
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

struct NetCollectorOptions {
  std::string root;  // prepended to "/sys/class/net"
  int rescan_every_n = 100;
  size_t max_interfaces = 64;
  int packets_every_n = 1;
};

// Lists the entries of a directory (names only, sorted; "." and ".." skipped).
std::vector<std::string> ListDirectory(const std::string& path);

class NetCollector : public Collector {
 public:
  NetCollector(const NetCollectorOptions& options, ErrorLog* log);

  std::string_view name() const override { return "net"; }
  void Sample(int64_t now_ns) override;
  void Emit(MetricSink& sink) override;

 private:
  static constexpr int kCounters = 4;  // rx_bytes, tx_bytes, rx_packets, tx_packets
  struct Interface {
    std::string name;
    std::vector<ProcFile> files;  // one per counter
    std::array<std::optional<int64_t>, kCounters> values;
    std::array<SeriesId, kCounters> ids;
    int64_t speed_mbps = -1;
    bool speed_fresh = false;  // read at this sample's rescan: record it
    bool capacity_changed = true;
    SeriesId speed_id = kNoSeries;
  };

  void Rescan();

  NetCollectorOptions options_;
  ErrorLog* log_;
  int64_t last_now_ns_ = 0;
  int samples_until_rescan_ = 0;
  uint64_t sample_index_ = 0;
  std::map<std::string, Interface> interfaces_;
  std::vector<SeriesId> to_release_;
};

}  // namespace eroica::agent
