#include "agent/net_collector.h"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>

#include "agent/proc_parsers.h"

namespace eroica::agent {
namespace {

constexpr const char* kCounterFiles[] = {"rx_bytes", "tx_bytes", "rx_packets", "tx_packets"};
constexpr const char* kSeriesNames[] = {"net.rx_bytes", "net.tx_bytes", "net.rx_packets", "net.tx_packets"};

}  // namespace

std::vector<std::string> ListDirectory(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

NetCollector::NetCollector(const NetCollectorOptions& options, ErrorLog* log) : options_(options), log_(log) {
  options_.rescan_every_n = std::max(options_.rescan_every_n, 1);
  options_.packets_every_n = std::max(options_.packets_every_n, 1);
}

void NetCollector::Rescan() {
  std::string base = options_.root + "/sys/class/net/";
  std::map<std::string, Interface> kept;
  for (const std::string& name : ListDirectory(base)) {
    if (name == "lo") continue;
    if (kept.size() >= options_.max_interfaces) {
      log_->Report("net-cap", fmt::format("more than {} network interfaces; following the "
                                          "first {}",
                                          options_.max_interfaces, options_.max_interfaces));
      break;
    }
    auto it = interfaces_.find(name);
    Interface interface;
    if (it != interfaces_.end()) {
      interface = std::move(it->second);
      interfaces_.erase(it);
    } else {
      interface.name = name;
      for (const char* file : kCounterFiles) {
        interface.files.emplace_back(base + name + "/statistics/" + file);
      }
      interface.ids.fill(kNoSeries);
    }
    int64_t speed_mbps = -1;  // unreadable (EINVAL when the link is down) or -1: unknown
    if (!ParseInt64(ReadTrimmed(base + name + "/speed"), &speed_mbps)) speed_mbps = -1;
    if (speed_mbps != interface.speed_mbps) interface.capacity_changed = true;
    interface.speed_mbps = speed_mbps;
    interface.speed_fresh = true;
    kept.emplace(name, std::move(interface));
  }
  for (auto& [name, gone] : interfaces_) {
    for (SeriesId id : gone.ids) to_release_.push_back(id);
    to_release_.push_back(gone.speed_id);
  }
  interfaces_ = std::move(kept);
}

void NetCollector::Sample(int64_t now_ns) {
  last_now_ns_ = now_ns;
  if (--samples_until_rescan_ <= 0) {
    Rescan();
    samples_until_rescan_ = options_.rescan_every_n;
  }
  bool packets_turn = sample_index_++ % static_cast<uint64_t>(options_.packets_every_n) == 0;
  for (auto& [name, interface] : interfaces_) {
    for (int i = 0; i < kCounters; ++i) {
      interface.values[i].reset();
      if (i >= 2 && !packets_turn) continue;
      int64_t value = 0;
      ProcFile& file = interface.files[i];
      if (file.Read(256) && ParseInt64(file.contents(), &value)) {
        interface.values[i] = value;
      } else {
        log_->Report("net-read-" + file.path(), fmt::format("cannot read {}", file.path()));
      }
    }
  }
}

void NetCollector::Emit(MetricSink& sink) {
  for (SeriesId id : to_release_) {
    if (id != kNoSeries) sink.Release(id);
  }
  to_release_.clear();
  for (auto& [name, interface] : interfaces_) {
    int64_t capacity = interface.speed_mbps > 0 ? interface.speed_mbps * 125'000 : 0;
    for (int i = 0; i < kCounters; ++i) {
      if (interface.ids[i] == kNoSeries || (interface.capacity_changed && i < 2)) {
        std::string unit = i < 2 ? "bytes" : "packets";
        interface.ids[i] =
            sink.Register({kSeriesNames[i], SeriesKind::kCounter, unit, -1, -1, name, "", i < 2 ? capacity : 0});
      }
      if (interface.values[i]) sink.Record(interface.ids[i], last_now_ns_, *interface.values[i]);
    }
    interface.capacity_changed = false;
    if (interface.speed_fresh) {
      if (interface.speed_id == kNoSeries) {
        interface.speed_id = sink.Register({"net.speed_mbps", SeriesKind::kGauge, "Mbit/s", -1, -1, name});
      }
      sink.Record(interface.speed_id, last_now_ns_, interface.speed_mbps);
      interface.speed_fresh = false;
    }
  }
}

}  // namespace eroica::agent
