#include "agent/session_tracker.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "agent/net_collector.h"
#include "base/file_util.h"
#include "base/json_access.h"

namespace eroica::agent {
namespace {

constexpr int64_t kDefaultDurationNs = 20'000'000'000;
constexpr size_t kMaxFinished = 4096;

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

int64_t MtimeNs(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return 0;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

bool IsRealFolder(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

std::optional<std::string> SessionFolderInside(const std::string& shared_dir, const std::string& session_dir) {
  if (shared_dir.empty() || session_dir.empty()) return std::nullopt;
  std::string trimmed = session_dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  size_t slash = trimmed.find_last_of('/');
  std::string name = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  std::string parent = slash == std::string::npos ? "." : trimmed.substr(0, std::max<size_t>(slash, 1));
  if (name.empty() || name == "." || name == ".." || name == "procs") return std::nullopt;
  char shared_real[PATH_MAX], parent_real[PATH_MAX];
  if (::realpath(shared_dir.c_str(), shared_real) == nullptr || ::realpath(parent.c_str(), parent_real) == nullptr ||
      std::string_view(shared_real) != std::string_view(parent_real)) {
    return std::nullopt;
  }
  // Named as the listing of SHARED_DIR names it, so one session is one key.
  std::string inside = shared_dir + "/" + name;
  if (!IsRealFolder(inside)) return std::nullopt;
  return inside;
}

bool ParseCaptureStart(std::string_view json, int64_t file_mtime_ns, CaptureSession* session) {
  std::optional<Json> doc = ParseJson(json);
  if (!doc || !doc->is_object()) return false;
  int64_t start_ns = JsonIntOr(*doc, {"start_unix_ns"}, file_mtime_ns, 0, int64_t{1} << 62);
  int64_t duration_ns = kDefaultDurationNs;
  std::optional<double> duration_s = JsonNumber(JsonField(*doc, {"duration_s"}));
  if (duration_s && std::isfinite(*duration_s) && *duration_s >= 0 && *duration_s < 86400) {
    duration_ns = static_cast<int64_t>(*duration_s * 1e9);
  }
  session->start_unix_ns = start_ns;
  session->end_unix_ns = start_ns + duration_ns;
  return true;
}

SessionTracker::SessionTracker(std::string shared_dir, std::string metrics_file_name, ErrorLog* log)
    : shared_dir_(std::move(shared_dir)), metrics_file_name_(std::move(metrics_file_name)), log_(log) {}

void SessionTracker::Add(const CaptureSession& session) {
  active_[session.dir] = session;
  started_now_.push_back(session);
  ++started_;
}

std::vector<CaptureSession> SessionTracker::TakeStarted() { return std::exchange(started_now_, {}); }

void SessionTracker::Consider(const std::string& dir, int64_t now_ns) {
  if (active_.count(dir) > 0 || finished_.count(dir) > 0) return;
  if (!IsRealFolder(dir)) return;  // a symlink would point the agent's write elsewhere
  std::string start_path = dir + "/capture.start";
  if (!Exists(start_path)) return;
  if (Exists(dir + "/" + metrics_file_name_)) {
    finished_.insert(dir);
    return;
  }
  StatusOr<std::string> text = ReadSmallFile(start_path, 64 << 10);
  CaptureSession session;
  session.dir = dir;
  int64_t mtime_ns = MtimeNs(start_path);
  if (!text.ok() || !ParseCaptureStart(*text, mtime_ns, &session)) {
    if (now_ns - mtime_ns < 2'000'000'000) return;  // may be half-written; look again
    log_->Report("capture-start-" + dir, fmt::format("cannot parse {}; ignoring the session", start_path));
    finished_.insert(dir);
    return;
  }
  log_->Info(fmt::format("capture session {} started", dir));
  Add(session);
}

void SessionTracker::CheckStop(CaptureSession* session, int64_t now_ns) {
  if (session->stopped) return;
  std::string stop_path = session->dir + "/capture.stop";
  if (!Exists(stop_path)) return;
  StatusOr<std::string> text = ReadSmallFile(stop_path, 64 << 10);
  std::optional<Json> doc = text.ok() ? ParseJson(*text) : std::nullopt;
  int64_t stop_ns = doc ? JsonIntOr(*doc, {"stop_unix_ns"}, now_ns, 0, int64_t{1} << 62) : now_ns;
  session->end_unix_ns = std::max(session->start_unix_ns, std::min(session->end_unix_ns, stop_ns));
  session->stopped = true;
}

void SessionTracker::Poll(int64_t now_ns, const std::vector<std::string>& extra_dirs) {
  if (!shared_dir_.empty()) {
    for (const std::string& name : ListDirectory(shared_dir_)) {
      if (name != "procs") Consider(shared_dir_ + "/" + name, now_ns);
    }
  }
  for (const std::string& dir : extra_dirs) {
    if (dir.empty()) continue;
    std::optional<std::string> inside = SessionFolderInside(shared_dir_, dir);
    if (!inside) {
      log_->Report("outside-" + dir, fmt::format("a registration names session folder {}, which is "
                                                 "not a folder inside {}; ignoring it",
                                                 dir, shared_dir_.empty() ? "(no --dir)" : shared_dir_));
      continue;
    }
    Consider(*inside, now_ns);
  }
  for (auto& [dir, session] : active_) CheckStop(&session, now_ns);
  // Forget finished sessions whose folder is gone; cap the rest.
  for (auto it = finished_.begin(); it != finished_.end();) {
    it = Exists(*it) ? std::next(it) : finished_.erase(it);
  }
  while (finished_.size() > kMaxFinished) finished_.erase(finished_.begin());
}

std::vector<CaptureSession> SessionTracker::TakeDue(int64_t now_ns) {
  std::vector<CaptureSession> due;
  for (auto it = active_.begin(); it != active_.end();) {
    if (it->second.window_end_ns() <= now_ns) {
      due.push_back(it->second);
      finished_.insert(it->first);
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

std::vector<CaptureSession> SessionTracker::TakeAll(int64_t now_ns) {
  std::vector<CaptureSession> all;
  for (auto& [dir, session] : active_) {
    CaptureSession cut = session;
    cut.end_unix_ns = std::max(cut.start_unix_ns, std::min(cut.end_unix_ns, now_ns));
    all.push_back(cut);
    finished_.insert(dir);
  }
  active_.clear();
  return all;
}

}  // namespace eroica::agent
