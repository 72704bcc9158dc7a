#include "report/session_info.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"

namespace eroica {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json* Find(const json& j, std::initializer_list<const char*> keys) {
  if (!j.is_object()) return nullptr;
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

double NumberOr(const json& j, std::initializer_list<const char*> keys, double fallback) {
  const json* v = Find(j, keys);
  return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

int64_t IntegerOr(const json& j, std::initializer_list<const char*> keys, int64_t fallback) {
  const json* v = Find(j, keys);
  if (v == nullptr || !v->is_number()) return fallback;
  return v->is_number_integer() ? v->get<int64_t>() : static_cast<int64_t>(v->get<double>());
}

std::string StringOr(const json& j, std::initializer_list<const char*> keys) {
  const json* v = Find(j, keys);
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number() || v->is_boolean()) return v->dump();
  return "";
}

std::vector<double> Numbers(const json* v) {
  std::vector<double> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const json& x : *v) {
    if (x.is_number()) out.push_back(x.get<double>());
  }
  return out;
}

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
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  info->has_session = true;
  info->session_id = StringOr(j, {"session_id", "id"});
  info->reason = StringOr(j, {"reason", "trigger"});
  info->trigger_rank = static_cast<int>(IntegerOr(j, {"trigger_rank", "detecting_rank", "rank"}, -1));
  info->trigger_host = StringOr(j, {"trigger_host", "host"});
  info->detected_iteration = IntegerOr(j, {"detected_iteration", "trigger_iteration"}, -1);
  info->target_iteration = IntegerOr(j, {"target_iteration", "start_iteration"}, -1);
  info->stuck_iteration = IntegerOr(j, {"stuck_iteration"}, -1);
  info->capture_iterations = static_cast<int>(IntegerOr(j, {"capture_iters"}, 0));
  if (const json* window = Find(j, {"window"}); window != nullptr && info->capture_iterations == 0) {
    info->capture_iterations = static_cast<int>(IntegerOr(*window, {"iterations"}, 0));
  }
  info->world_size = static_cast<int>(IntegerOr(j, {"world_size"}, 0));
  info->best_mean_s = NumberOr(j, {"best_mean_s", "baseline_mean_s"}, 0);
  info->current_mean_s = NumberOr(j, {"current_mean_s", "mean_iteration_s"}, 0);
  info->threshold = NumberOr(j, {"threshold"}, 0);
  info->iteration_times_s = Numbers(Find(j, {"iteration_times_s", "iteration_times", "times_s"}));
  info->iteration_times_first_id = IntegerOr(j, {"iteration_times_first_id", "first_id"}, 0);
  if (const json* series = Find(j, {"series"}); series != nullptr && info->iteration_times_s.empty()) {
    info->iteration_times_s = Numbers(Find(*series, {"times_s", "iteration_times_s"}));
    info->iteration_times_first_id = IntegerOr(*series, {"first_id"}, 0);
  }
}

RankMeta ParseRankMeta(const std::string& text) {
  RankMeta meta;
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return meta;
  meta.rank = static_cast<int>(IntegerOr(j, {"rank"}, -1));
  meta.host = StringOr(j, {"host", "hostname"});
  meta.torch_version = StringOr(j, {"torch_version"});
  meta.python_version = StringOr(j, {"python_version"});
  if (const json* ids = Find(j, {"iteration_ids"}); ids != nullptr && ids->is_array()) {
    for (const json& id : *ids) {
      if (id.is_number_integer()) meta.iteration_ids.push_back(id.get<int64_t>());
    }
  }
  meta.iteration_times_s = Numbers(Find(j, {"iteration_times_s"}));
  meta.missed = StringOr(j, {"missed"});
  meta.error = StringOr(j, {"error"});
  return meta;
}

SessionInfo ReadSessionInfo(const std::vector<std::string>& paths) {
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
      bool meta = name.starts_with("rank-") && name.ends_with(".meta.json");
      if (!session && !meta) continue;
      StatusOr<std::string> text = ReadSmallFile(entry.path().string(), 4 << 20);
      if (!text.ok()) continue;
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
    if (!rank.missed.empty()) info.warnings.push_back(fmt::format("rank {} missed the session: {}", rank.rank, rank.missed));
    if (!rank.error.empty()) info.warnings.push_back(fmt::format("rank {}: {}", rank.rank, rank.error));
  }
  return info;
}

}  // namespace eroica
