// What an online session folder says about itself, beyond the traces: why and when it was
// captured (session.json, written by rank 0) and who each rank was (rank-<r>.meta.json).
// Both are written by the Python package (python/eroica/capture.py); they are read
// defensively: any key may be missing or of another type, and nothing here is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eroica {

struct RankMeta {
  int rank = -1;
  std::string host;
  std::string torch_version;
  std::string python_version;
  std::vector<int64_t> iteration_ids;     // the profiled iterations
  std::vector<double> iteration_times_s;  // their wall times
  std::string missed;                     // why the rank took no part, when it did not
  std::string error;                      // a profiler or export failure
};

struct SessionInfo {
  bool has_session = false;  // a session.json was found
  std::string session_id;
  std::string job_id;  // EROICA_JOB_ID or the launcher's job name, when given
  std::string reason;  // "degradation", "hang", "forced" ...
  int trigger_rank = -1;
  std::string trigger_host;
  int64_t detected_iteration = -1;
  int64_t target_iteration = -1;  // the first profiled iteration
  int64_t stuck_iteration = -1;   // hangs
  int capture_iterations = 0;
  int world_size = 0;
  double best_mean_s = 0;  // the detector's baseline, when given
  double current_mean_s = 0;
  // The detecting rank's training-thread CPU time per iteration, its best window and now, when
  // that (not the iteration time alone) showed the slowdown (python/eroica/detector.py).
  double best_cpu_s = 0;
  double current_cpu_s = 0;
  // The detecting rank's training-thread page faults per iteration, its best window and now,
  // where they rose with the slowdown (0: not measured, or they did not).
  double best_faults_per_iter = 0;
  double current_faults_per_iter = 0;
  double threshold = 0;
  // The detecting rank's recent iteration times; element i is iteration first_id + i.
  std::vector<double> iteration_times_s;
  int64_t iteration_times_first_id = 0;
  std::vector<RankMeta> ranks;        // by rank
  std::vector<std::string> warnings;  // ranks that missed the session, failed exports

  // The value shared by all ranks' meta files ("1.13.0, 2.1.0" when they differ; "" if none).
  std::string TorchVersions() const;
  std::string PythonVersions() const;
  int HostCount() const;
};

// Reads session.json and (with `with_ranks`) rank-*.meta.json from every folder among `paths`
// (files are looked up in their own folder). Missing or malformed files leave fields at their
// defaults. Without ranks it reads one small file however many ranks the folder holds.
SessionInfo ReadSessionInfo(const std::vector<std::string>& paths, bool with_ranks = true);

// What the detector saw beside the slowdown that no window reading shows: the detecting rank's
// page faults per iteration rose with it (a step that touches fresh memory each time). "" when
// the session says nothing of it, or too few more for their time to matter (session_info.cc).
std::string FreshMemoryNote(const SessionInfo& session);

// The detector's slowdown, ms per iteration, where it started the session (a degradation: its
// window's mean against its best, unprofiled); 0 for other sessions and where it is not given.
double DetectedSlowdownMs(const SessionInfo& session);

// Parses one session.json / meta document; exposed for tests.
void ParseSessionJson(const std::string& text, SessionInfo* info);
RankMeta ParseRankMeta(const std::string& text);

}  // namespace eroica
