#include "report/session_info.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/file_util.h"
#include "base/json_access.h"

namespace eroica {
namespace {

namespace fs = std::filesystem;

std::string Joined(const std::vector<RankMeta>& ranks, std::string RankMeta::*field) {
  std::set<std::string> values;
  for (const RankMeta& r : ranks) {
    if (!(r.*field).empty()) values.insert(r.*field);
  }
  return fmt::format("{}", fmt::join(values, ", "));
}

}  // namespace

std::string SessionInfo::TorchVersions() const { return Joined(ranks, &RankMeta::torch_version); }
std::string SessionInfo::PythonVersions() const { return Joined(ranks, &RankMeta::python_version); }

int SessionInfo::HostCount() const {
  std::set<std::string> hosts;
  for (const RankMeta& r : ranks) {
    if (!r.host.empty()) hosts.insert(r.host);
  }
  return static_cast<int>(hosts.size());
}

void ParseSessionJson(const std::string& text, SessionInfo* info) {
  std::optional<Json> parsed = ParseJson(text);
  if (!parsed || !parsed->is_object()) return;
  const Json& j = *parsed;
  info->has_session = true;
  info->session_id = JsonTextOr(j, {"session_id", "id"});
  info->job_id = JsonTextOr(j, {"job_id"});
  info->reason = JsonTextOr(j, {"reason", "trigger"});
  info->trigger_rank = JsonSmallIntOr(j, {"trigger_rank", "detecting_rank", "rank"}, -1);
  info->trigger_host = JsonTextOr(j, {"trigger_host", "host"});
  info->detected_iteration = JsonIntOr(j, {"detected_iteration", "trigger_iteration"}, -1);
  info->target_iteration = JsonIntOr(j, {"target_iteration", "start_iteration"}, -1);
  info->stuck_iteration = JsonIntOr(j, {"stuck_iteration"}, -1);
  info->capture_iterations = JsonSmallIntOr(j, {"capture_iters"}, 0);
  if (const Json* window = JsonField(j, {"window"}); window != nullptr && info->capture_iterations == 0) {
    info->capture_iterations = JsonSmallIntOr(*window, {"iterations"}, 0);
  }
  info->world_size = JsonSmallIntOr(j, {"world_size"}, 0);
  info->best_mean_s = JsonNumberOr(j, {"best_mean_s", "baseline_mean_s"}, 0);
  info->current_mean_s = JsonNumberOr(j, {"current_mean_s", "mean_iteration_s"}, 0);
  info->best_cpu_s = JsonNumberOr(j, {"best_cpu_s"}, 0);
  info->current_cpu_s = JsonNumberOr(j, {"current_cpu_s"}, 0);
  info->best_faults_per_iter = JsonNumberOr(j, {"best_faults_per_iter"}, 0);
  info->current_faults_per_iter = JsonNumberOr(j, {"current_faults_per_iter"}, 0);
  info->threshold = JsonNumberOr(j, {"threshold"}, 0);
  info->iteration_times_s = JsonNumbers(JsonField(j, {"iteration_times_s", "iteration_times", "times_s"}));
  info->iteration_times_first_id = JsonIntOr(j, {"iteration_times_first_id", "first_id"}, 0);
  if (const Json* series = JsonField(j, {"series"}); series != nullptr && info->iteration_times_s.empty()) {
    info->iteration_times_s = JsonNumbers(JsonField(*series, {"times_s", "iteration_times_s"}));
    info->iteration_times_first_id = JsonIntOr(*series, {"first_id"}, 0);
  }
}

RankMeta ParseRankMeta(const std::string& text) {
  RankMeta meta;
  std::optional<Json> parsed = ParseJson(text);
  if (!parsed || !parsed->is_object()) return meta;
  const Json& j = *parsed;
  meta.rank = JsonSmallIntOr(j, {"rank"}, -1);
  meta.host = JsonTextOr(j, {"host", "hostname"});
  meta.torch_version = JsonTextOr(j, {"torch_version"});
  meta.python_version = JsonTextOr(j, {"python_version"});
  meta.iteration_ids = JsonInts(JsonField(j, {"iteration_ids"}));
  meta.iteration_times_s = JsonNumbers(JsonField(j, {"iteration_times_s"}));
  meta.missed = JsonTextOr(j, {"missed"});
  meta.error = JsonTextOr(j, {"error"});
  return meta;
}

std::string FreshMemoryNote(const SessionInfo& s) {
  // A minor fault costs at least a microsecond (a trap and a 4 KB page cleared; the text job's
  // 9,300 an iteration cost it 60-80 ms of kernel time on this VM, about 7 µs each). Fewer extra
  // faults than would cost 1 % of the slowed step at that floor say nothing of its time: an
  // unseen audio job's 12 an iteration (against 0) came with its every rank's new Python.
  constexpr double kFaultFloorS = 1e-6, kStepShare = 0.01;
  double extra = s.current_faults_per_iter - s.best_faults_per_iter;
  if (extra <= 0 || s.current_faults_per_iter <= 0) return "";
  if (s.current_mean_s > 0 && extra * kFaultFloorS < kStepShare * s.current_mean_s) return "";
  std::string who = s.trigger_rank >= 0 ? fmt::format("rank {}", s.trigger_rank) : std::string("the detecting rank");
  return fmt::format(
      "as the job slowed, {}'s training thread took {:.0f} page faults an iteration against {:.0f} in its best "
      "window: the step touches fresh memory each time, whose cost shows inside the ops that touch it (a large "
      "temporary mapped and unmapped every step: glibc maps blocks above its mmap threshold; "
      "MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_, or jemalloc or tcmalloc, keep them)",
      who, s.current_faults_per_iter, s.best_faults_per_iter);
}

double DetectedSlowdownMs(const SessionInfo& s) {
  if (s.reason != "degradation" || s.best_mean_s <= 0 || s.current_mean_s <= s.best_mean_s) return 0;
  return (s.current_mean_s - s.best_mean_s) * 1e3;
}

SessionInfo ReadSessionInfo(const std::vector<std::string>& paths, bool with_ranks) {
  SessionInfo info;
  std::set<fs::path> folders;
  for (const std::string& p : paths) {
    std::error_code error;
    folders.insert(fs::is_directory(p, error) ? fs::path(p) : fs::path(p).parent_path());
  }
  for (const fs::path& folder : folders) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(folder.empty() ? "." : folder, error)) {
      std::string name = entry.path().filename().string();
      bool session = name == "session.json";
      bool meta = with_ranks && name.starts_with("rank-") && name.ends_with(".meta.json");
      if (!session && !meta) continue;
      StatusOr<std::string> text = ReadSmallFile(entry.path().string(), 4 << 20);
      if (!text.ok()) {
        info.warnings.push_back(text.status().message());
        continue;
      }
      if (session) {
        ParseSessionJson(*text, &info);
        continue;
      }
      RankMeta rank = ParseRankMeta(*text);
      if (rank.rank < 0) continue;
      info.ranks.push_back(std::move(rank));
    }
  }
  std::sort(info.ranks.begin(), info.ranks.end(), [](const RankMeta& a, const RankMeta& b) { return a.rank < b.rank; });
  for (const RankMeta& rank : info.ranks) {
    if (!rank.missed.empty())
      info.warnings.push_back(fmt::format("rank {} missed the session: {}", rank.rank, rank.missed));
    if (!rank.error.empty()) info.warnings.push_back(fmt::format("rank {}: {}", rank.rank, rank.error));
  }
  return info;
}

}  // namespace eroica
