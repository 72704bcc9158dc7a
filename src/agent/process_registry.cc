#include "agent/process_registry.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/net_collector.h"
#include "agent/proc_file.h"
#include "agent/proc_parsers.h"
#include "base/file_util.h"
#include "base/json_access.h"

namespace eroica::agent {

bool ParseRegistration(std::string_view json, int64_t fallback_pid, Registration* out) {
  std::optional<Json> doc = ParseJson(json);
  if (!doc || !doc->is_object()) return false;
  Registration registration;
  registration.pid = JsonIntOr(*doc, {"pid"}, fallback_pid);
  registration.rank = JsonIntOr(*doc, {"rank"}, -1);
  registration.gpu = JsonIntOr(*doc, {"gpu"}, -1);
  registration.session_dir = JsonStringOr(*doc, {"session_dir"});
  registration.host = JsonStringOr(*doc, {"host"});
  registration.last_iteration_s = JsonNumber(JsonField(*doc, {"last_iteration_s"}));
  if (registration.pid <= 0) return false;
  *out = std::move(registration);
  return true;
}

ProcessRegistry::ProcessRegistry(const RegistryOptions& options, ErrorLog* log) : options_(options), log_(log) {
  if (options_.clock_ticks_per_s <= 0) options_.clock_ticks_per_s = 100;
  ProcFile stat(options_.root + "/proc/stat");
  if (stat.Read()) {
    int64_t boot_s = ParseBootTimeSeconds(stat.contents());
    if (boot_s > 0) boot_time_ns_ = boot_s * 1'000'000'000;
  }
}

void ProcessRegistry::AddManual(int64_t pid) { manual_pids_.push_back(pid); }

int64_t ProcessRegistry::ProcessStartNs(int64_t pid) const {
  if (boot_time_ns_ < 0) return -1;
  ProcFile file(fmt::format("{}/proc/{}/stat", options_.root, pid));
  ProcStat stat;
  if (!file.Read() || !ParseProcStat(file.contents(), &stat)) return -1;
  return boot_time_ns_ + stat.start_time_ticks * (1'000'000'000 / options_.clock_ticks_per_s);
}

bool ProcessRegistry::IsAlive(const Registration& registration) const {
  std::string stat_path = fmt::format("{}/proc/{}/stat", options_.root, registration.pid);
  if (::access(stat_path.c_str(), R_OK) != 0) return false;
  if (registration.file_mtime_ns == 0) return true;  // manual
  int64_t start_ns = ProcessStartNs(registration.pid);
  // Boot time has 1 s resolution: allow 2 s of slack before calling the pid reused.
  return start_ns < 0 || start_ns <= registration.file_mtime_ns + 2'000'000'000;
}

std::optional<Registration> ProcessRegistry::ReadFile(const std::string& name, int64_t mtime_ns, int64_t size,
                                                      int64_t now_ns) {
  CachedFile& cached = files_[name];
  if (cached.mtime_ns == mtime_ns && cached.size == size && mtime_ns != 0) {
    return cached.registration;
  }
  StatusOr<std::string> text = ReadSmallFile(options_.procs_dir + "/" + name, 64 << 10);
  int64_t fallback_pid = 0;
  if (!ParseInt64(name, &fallback_pid)) fallback_pid = -1;
  Registration registration;
  if (!text.ok() || !ParseRegistration(*text, fallback_pid, &registration)) {
    // A file being written is normal for a moment: retry it at the next scan, and only
    // complain (once) about one that stays broken.
    if (now_ns - mtime_ns < 2'000'000'000) return std::nullopt;
    log_->Report("registration-" + name, text.ok()
                                             ? fmt::format("cannot parse {}/{}; ignoring it", options_.procs_dir, name)
                                             : fmt::format("{}; ignoring it", text.status().message()));
    cached = CachedFile{mtime_ns, size, std::nullopt};
    return std::nullopt;
  }
  registration.file_mtime_ns = mtime_ns;
  cached = CachedFile{mtime_ns, size, registration};
  return registration;
}

void ProcessRegistry::Scan(int64_t now_ns) {
  std::map<int64_t, Registration> candidates;
  if (!options_.procs_dir.empty()) {
    std::map<std::string, CachedFile> listed;
    for (const std::string& name : ListDirectory(options_.procs_dir)) {
      if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
      struct stat info {};
      // lstat: a symlink or FIFO is refused by the reader with a message, never followed.
      if (::lstat((options_.procs_dir + "/" + name).c_str(), &info) != 0) continue;
      int64_t mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
      std::optional<Registration> registration = ReadFile(name, mtime_ns, info.st_size, now_ns);
      if (files_.count(name) > 0) listed.insert(files_.extract(name));
      if (registration) candidates[registration->pid] = *registration;
      if (listed.size() >= options_.max_processes) break;
    }
    files_ = std::move(listed);  // forget files that were removed
  }
  for (int64_t pid : manual_pids_) candidates.try_emplace(pid, Registration{pid});
  std::map<int64_t, Registration> live;
  for (auto& [pid, registration] : candidates) {
    if (IsAlive(registration)) live.emplace(pid, std::move(registration));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [pid, registration] : live_) {
    if (live.count(pid) == 0) departed_[pid] = {registration, now_ns};
  }
  for (auto it = departed_.begin(); it != departed_.end();) {
    bool forget = live.count(it->first) > 0 || it->second.second < now_ns - options_.forget_after_ns;
    it = forget ? departed_.erase(it) : std::next(it);
  }
  live_ = std::move(live);
}

std::vector<Registration> ProcessRegistry::Live() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Registration> result;
  for (const auto& [pid, registration] : live_) result.push_back(registration);
  return result;
}

std::vector<Registration> ProcessRegistry::SeenSince(int64_t since_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Registration> result;
  for (const auto& [pid, registration] : live_) result.push_back(registration);
  for (const auto& [pid, entry] : departed_) {
    if (entry.second >= since_ns) result.push_back(entry.first);
  }
  return result;
}

}  // namespace eroica::agent
