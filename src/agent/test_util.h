// Helpers shared by the agent's tests (not part of the library).
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "agent/sample_store.h"

namespace eroica::agent::testing {

// Writes a file in place (same inode, as the kernel's files behave), creating its folders.
inline void WriteInPlace(const std::string& path, const std::string& contents) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

// A /proc/<pid>/stat line with the fields the agent reads set.
inline std::string StatLine(int64_t pid, const std::string& comm, int64_t utime, int64_t stime,
                            int64_t start_time = 1000, int64_t rss_pages = 0) {
  // Fields 3..24: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss.
  return std::to_string(pid) + " (" + comm + ") R 1 1 1 0 -1 0 0 0 0 0 " + std::to_string(utime) + " " +
         std::to_string(stime) + " 0 0 20 0 1 0 " + std::to_string(start_time) + " 0 " + std::to_string(rss_pages) +
         " 0 0 0\n";
}

// Runs collectors into a store, the way a Sampler tick does.
inline void Tick(SampleStore* store, std::vector<Collector*> collectors, int64_t now_ns) {
  for (Collector* collector : collectors) collector->Sample(now_ns);
  SampleStore::Writer writer(store);
  for (Collector* collector : collectors) collector->Emit(writer);
}

// The samples of one series in a snapshot, or nullptr.
inline const MetricsSeries* FindSeries(const std::vector<MetricsSeries>& all, const std::string& name, int64_t pid = -1,
                                       int64_t tid = -1, const std::string& instance = "") {
  for (const MetricsSeries& series : all) {
    if (series.info.name == name && series.info.pid == pid && series.info.tid == tid &&
        series.info.instance == instance) {
      return &series;
    }
  }
  return nullptr;
}

}  // namespace eroica::agent::testing
