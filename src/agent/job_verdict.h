// The job's latest verdict for the Prometheus page: the newest session folder under a folder of
// sessions that holds a report.json (eroica.diagnosis/v1, written by rank 0's diagnosis), with
// the detector's iteration times from its session.json. Exported as
//   eroica_finding{job,category,scope,rank,function}  seconds lost per iteration
//   eroica_detector_{current,baseline}_iteration_seconds{job}
//   eroica_verdict_findings{job}, eroica_verdict_timestamp_seconds{job}
// so an alert can fire on `eroica_finding{scope="local"} > 0.05`.
//
// Label cardinality is bounded: at most kMaxExportedFindings findings (the most costly; the
// diagnosis orders them), function names cut to kMaxFunctionBytes and rank lists ("0-3, 7") to
// kMaxRankBytes; one job per agent. So the verdict adds at most 14 series.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace eroica::agent {

inline constexpr size_t kMaxExportedFindings = 10;
inline constexpr size_t kMaxFunctionBytes = 80;
inline constexpr size_t kMaxRankBytes = 40;

struct VerdictFinding {
  std::string category;  // eroica.diagnosis/v1 names ("dataloader", "communication", ...)
  std::string scope;     // "local", "global"
  std::string ranks;     // "3", "0-2, 5", cut to kMaxRankBytes
  std::string function;  // cut to kMaxFunctionBytes
  double seconds_per_iteration = 0;
};

struct JobVerdict {
  std::string job;      // session.json's job_id ("" when not given)
  std::string session;  // the session folder's name
  double report_unix_s = 0;
  size_t findings_total = 0;             // before the cap
  std::vector<VerdictFinding> findings;  // most costly first, at most kMaxExportedFindings
  double current_iteration_s = 0;        // the detector's mean when it fired (0: unknown)
  double baseline_iteration_s = 0;       // the best mean it compared with (0: unknown)
};

// Reads SESSION_DIR/report.json (required) and SESSION_DIR/session.json (optional).
StatusOr<JobVerdict> ReadJobVerdict(const std::string& session_dir);

// The folder directly inside `sessions_dir` whose report.json is newest; "" when none.
std::string NewestReportedSession(const std::string& sessions_dir);

// Keeps the newest verdict; Poll() runs on the agent's loop, Latest() on the server thread.
class VerdictWatcher {
 public:
  explicit VerdictWatcher(std::string sessions_dir) : sessions_dir_(std::move(sessions_dir)) {}
  // Re-reads only when the newest report.json changed (another folder, or a new mtime).
  // Returns the read error, if any; the previous verdict is kept then.
  Status Poll();
  std::optional<JobVerdict> Latest();

 private:
  std::string sessions_dir_;
  std::string seen_path_;
  int64_t seen_mtime_ns_ = -1;
  std::mutex mu_;
  std::optional<JobVerdict> latest_;
};

// Appends the verdict's metrics (nothing but the HELP/TYPE lines when there is none yet).
void RenderVerdictMetrics(const std::optional<JobVerdict>& verdict, std::string* out);

// Every metric name RenderVerdictMetrics can write.
std::vector<std::string> VerdictMetricNames();

// Cuts `text` to at most `max_bytes` bytes at a UTF-8 character boundary, ending in "…" when cut.
std::string CutLabel(std::string_view text, size_t max_bytes);

}  // namespace eroica::agent
