#include "agent/rdma_collector.h"

#include <fmt/format.h>

#include "agent/net_collector.h"
#include "agent/proc_parsers.h"

namespace eroica::agent {

int64_t ParseRdmaRateBytesPerSecond(std::string_view text) {
  int64_t gbits = 0;
  if (!ParseInt64(text, &gbits) || gbits <= 0) return 0;
  // Fractional rates ("2.5 Gb/sec (1X SDR)") keep their integer part; that is close enough
  // for a capacity and such links are long gone.
  return gbits * 125'000'000;
}

RdmaCollector::RdmaCollector(const std::string& root, int rescan_every_n, ErrorLog* log)
    : root_(root), rescan_every_n_(rescan_every_n < 1 ? 1 : rescan_every_n), log_(log) {}

void RdmaCollector::Rescan() {
  std::string base = root_ + "/sys/class/infiniband/";
  std::map<std::string, Port> kept;
  for (const std::string& device : ListDirectory(base)) {
    for (const std::string& port_number : ListDirectory(base + device + "/ports")) {
      std::string key = device;
      key.append("/").append(port_number);
      std::string dir = base;
      dir.append(device).append("/ports/").append(port_number);
      auto it = ports_.find(key);
      Port port;
      if (it != ports_.end()) {
        port = std::move(it->second);
        ports_.erase(it);
      } else {
        port.files[0] = ProcFile(dir + "/counters/port_rcv_data");
        port.files[1] = ProcFile(dir + "/counters/port_xmit_data");
      }
      int64_t capacity = ParseRdmaRateBytesPerSecond(ReadTrimmed(dir + "/rate"));
      if (capacity != port.capacity_bytes_per_s) port.capacity_changed = true;
      port.capacity_bytes_per_s = capacity;
      kept.emplace(key, std::move(port));
      if (kept.size() >= 64) break;
    }
  }
  for (auto& [key, gone] : ports_) {
    for (SeriesId id : gone.ids) to_release_.push_back(id);
  }
  ports_ = std::move(kept);
}

void RdmaCollector::Sample(int64_t now_ns) {
  last_now_ns_ = now_ns;
  if (--samples_until_rescan_ <= 0) {
    Rescan();
    samples_until_rescan_ = rescan_every_n_;
  }
  for (auto& [key, port] : ports_) {
    for (int i = 0; i < 2; ++i) {
      port.bytes[i].reset();
      int64_t words = 0;
      if (port.files[i].Read(256) && ParseInt64(port.files[i].contents(), &words)) {
        port.bytes[i] = words * 4;
      } else {
        log_->Report("rdma-read-" + port.files[i].path(), fmt::format("cannot read {}", port.files[i].path()));
      }
    }
  }
}

void RdmaCollector::Emit(MetricSink& sink) {
  static constexpr const char* kNames[] = {"rdma.rcv_bytes", "rdma.xmit_bytes"};
  for (SeriesId id : to_release_) {
    if (id != kNoSeries) sink.Release(id);
  }
  to_release_.clear();
  for (auto& [key, port] : ports_) {
    for (int i = 0; i < 2; ++i) {
      if (port.ids[i] == kNoSeries || port.capacity_changed) {
        port.ids[i] =
            sink.Register({kNames[i], SeriesKind::kCounter, "bytes", -1, -1, key, "", port.capacity_bytes_per_s});
      }
      if (port.bytes[i]) sink.Record(port.ids[i], last_now_ns_, *port.bytes[i]);
    }
    port.capacity_changed = false;
  }
}

}  // namespace eroica::agent
