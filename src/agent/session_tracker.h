// Capture sessions: a folder SESSION_DIR holding capture.start, JSON written by the Python side
//   {"start_unix_ns": 1718000000000000000, "duration_s": 20}
// ends when duration_s has passed or when capture.stop appears (optionally
// {"stop_unix_ns": ...}; else the moment the agent sees it). Its metrics file is due once the
// agent holds samples up to end + 1 s. Sessions are found as DIR/<id>/capture.start and in
// the session_dir that registrations name; a folder that already has this host's metrics file
// is done. The agent promises each session it starts its file (agent.cc's PromiseMetrics), so
// that whoever diagnoses it waits for an agent only where one took samples.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/error_log.h"

namespace eroica::agent {

struct CaptureSession {
  std::string dir;
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  bool stopped = false;  // capture.stop seen (end is final)

  int64_t window_start_ns() const { return start_unix_ns - 1'000'000'000; }
  int64_t window_end_ns() const { return end_unix_ns + 1'000'000'000; }
};

// SESSION_DIR when it names a real folder (not a symlink) directly inside SHARED_DIR, as the
// canonical SHARED_DIR/<name>; else nullopt. A registration can only name a session there.
std::optional<std::string> SessionFolderInside(const std::string& shared_dir, const std::string& session_dir);

// Reads capture.start; missing fields: start = the file's mtime, duration = 20 s.
bool ParseCaptureStart(std::string_view json, int64_t file_mtime_ns, CaptureSession* session);

class SessionTracker {
 public:
  // metrics_file_name: "metrics-<host>.eroica-metrics".
  SessionTracker(std::string shared_dir, std::string metrics_file_name, ErrorLog* log);

  // Looks for new sessions and for capture.stop in the active ones. extra_dirs (the folders
  // registrations name) are considered only when inside the shared folder.
  void Poll(int64_t now_ns, const std::vector<std::string>& extra_dirs);
  // Adds a session by hand (eroica agent --session DIR --duration S).
  void Add(const CaptureSession& session);

  // Removes and returns the sessions started since the last call (found by Poll or added).
  std::vector<CaptureSession> TakeStarted();
  // Removes and returns the sessions whose window is complete at now_ns.
  std::vector<CaptureSession> TakeDue(int64_t now_ns);
  // Removes and returns every active session, cut at now_ns (shutdown).
  std::vector<CaptureSession> TakeAll(int64_t now_ns);

  size_t active() const { return active_.size(); }
  uint64_t started() const { return started_; }

 private:
  void Consider(const std::string& dir, int64_t now_ns);
  void CheckStop(CaptureSession* session, int64_t now_ns);

  std::string shared_dir_;
  std::string metrics_file_name_;
  ErrorLog* log_;
  std::map<std::string, CaptureSession> active_;
  std::vector<CaptureSession> started_now_;  // since TakeStarted
  std::set<std::string> finished_;           // written (or given up); bounded, see Poll()
  uint64_t started_ = 0;
};

}  // namespace eroica::agent
