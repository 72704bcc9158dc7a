// The training processes that asked to be watched. Each writes DIR/procs/<pid>.json:
//   {"pid": 1234, "rank": 3, "session_dir": null, "host": "node-7",
//    "last_iteration_s": 0.412,   (optional: the latest iteration time, for Prometheus)
//    "gpu": 3}                    (optional: the CUDA device index it uses)
// Scan() re-reads the folder (files whose mtime and size did not change are not re-parsed)
// and keeps the processes that are alive: /proc/<pid> exists and started before the file was
// last written (else the pid was reused by another process). No process-name guessing.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/error_log.h"

namespace eroica::agent {

struct Registration {
  int64_t pid = -1;
  int64_t rank = -1;
  std::string session_dir = {};  // "" when null
  std::string host = {};
  std::optional<double> last_iteration_s = {};
  int64_t gpu = -1;
  int64_t file_mtime_ns = 0;
};

// Parses one registration file's JSON; `fallback_pid` is used when "pid" is missing.
bool ParseRegistration(std::string_view json, int64_t fallback_pid, Registration* out);

struct RegistryOptions {
  std::string procs_dir;  // DIR/procs; "" when there is none (manual mode)
  std::string root;       // prepended to /proc
  int64_t clock_ticks_per_s = 100;
  int64_t forget_after_ns = 120'000'000'000;  // how long departed processes are remembered
  size_t max_processes = 1024;
};

class ProcessRegistry {
 public:
  ProcessRegistry(const RegistryOptions& options, ErrorLog* log);

  // Processes given by hand (--pid): watched while alive, without a file.
  void AddManual(int64_t pid);
  void Scan(int64_t now_ns);

  // Thread-safe snapshots.
  std::vector<Registration> Live() const;
  // The live ones and those that left at or after since_ns.
  std::vector<Registration> SeenSince(int64_t since_ns) const;

 private:
  struct CachedFile {
    int64_t mtime_ns = 0;
    int64_t size = 0;
    std::optional<Registration> registration;  // empty: the file did not parse
  };

  std::optional<Registration> ReadFile(const std::string& name, int64_t mtime_ns, int64_t size, int64_t now_ns);
  bool IsAlive(const Registration& registration) const;
  int64_t ProcessStartNs(int64_t pid) const;

  RegistryOptions options_;
  ErrorLog* log_;
  int64_t boot_time_ns_ = -1;
  std::vector<int64_t> manual_pids_;
  std::map<std::string, CachedFile> files_;  // by file name

  mutable std::mutex mu_;
  std::map<int64_t, Registration> live_;
  std::map<int64_t, std::pair<Registration, int64_t>> departed_;  // pid → (it, left at)
};

}  // namespace eroica::agent
