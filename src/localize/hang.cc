#include "localize/hang.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/file_util.h"

namespace eroica {
namespace {

bool IsLibraryFile(const std::string& file) {
  for (const char* marker : {"/torch/", "/lib/python3", "/eroica/", "<frozen", "threading.py",
                             "/site-packages/", "/dist-packages/"}) {
    if (file.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::string FrameKey(const StackFrame* frame) {
  return frame ? fmt::format("{}:{}", frame->file, frame->line) : "(no frame)";
}

}  // namespace

StatusOr<StackDump> ReadStackDump(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path, 16 << 20);
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return ErrorStatus("{}: not a JSON stack dump", path);
  StackDump dump;
  dump.path = path;
  dump.rank = j.value("rank", -1);
  dump.world_size = j.value("world_size", 0);
  dump.iteration = j.value("iteration", int64_t{-1});
  if (j.contains("waiting_in") && j["waiting_in"].is_string()) dump.waiting_in = j["waiting_in"];
  if (!j.contains("threads") || !j["threads"].is_array()) return ErrorStatus("{}: no threads", path);
  const nlohmann::json* main = nullptr;
  for (const nlohmann::json& t : j["threads"]) {
    if (t.is_object() && t.value("is_main", false)) main = &t;
  }
  if (main == nullptr && !j["threads"].empty()) main = &j["threads"][0];
  if (main != nullptr && main->contains("frames") && (*main)["frames"].is_array()) {
    for (const nlohmann::json& f : (*main)["frames"]) {
      if (!f.is_object()) continue;
      dump.main_frames.push_back({f.value("file", ""), f.value("line", 0), f.value("function", ""),
                                  f.value("code", "")});
    }
  }
  return dump;
}

const StackFrame* InnermostUserFrame(const StackDump& dump) {
  for (auto it = dump.main_frames.rbegin(); it != dump.main_frames.rend(); ++it) {
    if (!IsLibraryFile(it->file)) return &*it;
  }
  return dump.main_frames.empty() ? nullptr : &dump.main_frames.back();
}

std::vector<Finding> FindHang(const std::vector<StackDump>& dumps, int world_size) {
  if (dumps.empty()) return {};
  // Vote on where each rank's main thread is; ranks waiting in a collective are the waiters.
  std::map<std::string, std::vector<const StackDump*>> at;
  for (const StackDump& d : dumps) at[FrameKey(InnermostUserFrame(d)) + "|" + d.waiting_in].push_back(&d);
  const std::vector<const StackDump*>* majority = nullptr;
  for (const auto& [key, ranks] : at) {
    bool waiting = !ranks.front()->waiting_in.empty();
    if (majority == nullptr || ranks.size() > majority->size() ||
        (ranks.size() == majority->size() && waiting)) {
      majority = &ranks;
    }
  }
  std::vector<const StackDump*> suspects;
  for (const auto& [key, ranks] : at) {
    if (&ranks != majority) suspects.insert(suspects.end(), ranks.begin(), ranks.end());
  }
  Finding f;
  f.scope = FindingScope::kLocal;
  f.category = FindingCategory::kHang;
  const StackDump* waiter = majority->front();
  const StackFrame* waiter_frame = InnermostUserFrame(*waiter);
  std::string waiter_text = fmt::format("{} wait{} at {}{}", majority->size() == 1 ? "1 rank" :
                                        fmt::format("{} ranks", majority->size()),
                                        majority->size() == 1 ? "s" : "", FrameKey(waiter_frame),
                                        waiter->waiting_in.empty() ? "" : " in " + waiter->waiting_in);
  if (suspects.empty()) {
    // Every dump agrees: the missing ranks are the suspects.
    std::vector<int> present;
    for (const StackDump& d : dumps) present.push_back(d.rank);
    for (int r = 0; r < world_size; ++r) {
      if (std::find(present.begin(), present.end(), r) == present.end()) f.workers.push_back(r);
    }
    f.function = waiter_frame ? waiter_frame->function : "";
    f.location = FrameKey(waiter_frame);
    f.evidence = f.workers.empty()
                     ? fmt::format("all {} ranks are stuck at the same place: {}", dumps.size(), waiter_text)
                     : fmt::format("{}; ranks {} wrote no stacks (crashed or stuck outside Python?)",
                                   waiter_text, fmt::join(f.workers, ", "));
  } else {
    std::sort(suspects.begin(), suspects.end(),
              [](const StackDump* a, const StackDump* b) { return a->rank < b->rank; });
    for (const StackDump* s : suspects) f.workers.push_back(s->rank);
    const StackFrame* frame = InnermostUserFrame(*suspects.front());
    f.function = frame ? frame->function : "";
    f.location = FrameKey(frame);
    f.evidence = fmt::format("rank {} is at {} ({}){}; {}", suspects.front()->rank, f.location,
                             frame && !frame->code.empty() ? frame->code : f.function,
                             suspects.size() > 1 ? fmt::format(" with {} others", suspects.size() - 1) : "",
                             waiter_text);
  }
  f.action = AdviceFor(FindingCategory::kHang, FindingScope::kLocal, f.workers.empty() ? -1 : f.workers.front());
  f.impact_s_per_iter = 0;
  return {f};
}

}  // namespace eroica
