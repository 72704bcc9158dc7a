#include "localize/hang.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "base/file_util.h"
#include "base/json_access.h"
#include "localize/localizer.h"

namespace eroica {
namespace {

bool IsLibraryFile(const std::string& file) {
  for (const char* marker :
       {"/torch/", "/lib/python3", "/eroica/", "<frozen", "threading.py", "/site-packages/", "/dist-packages/"}) {
    if (file.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::string FrameKey(const StackFrame* frame) {
  return frame ? fmt::format("{}:{}", frame->file, frame->line) : "(no frame)";
}

// At most 16 ranks by number; a forged world size must not make a megabyte of evidence.
std::string ListedRanks(const std::vector<int>& ranks) {
  constexpr size_t kListed = 16;
  if (ranks.size() <= kListed) return fmt::format("{}", fmt::join(ranks, ", "));
  return fmt::format("{} and {} more", fmt::join(ranks.begin(), ranks.begin() + kListed, ", "), ranks.size() - kListed);
}

}  // namespace

StatusOr<StackDump> ReadStackDump(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path, 16 << 20);
  if (!text.ok()) return text.status();
  std::optional<Json> j = ParseJson(*text);
  if (!j || !j->is_object()) return ErrorStatus("{}: not a JSON stack dump", path);
  StackDump dump;
  dump.path = path;
  dump.rank = JsonSmallIntOr(*j, {"rank"}, -1);
  // A dump without its rank cannot be compared with the others' (and would make every rank
  // look missing).
  if (dump.rank < 0) return ErrorStatus("{}: no rank (a non-negative integer) in the stack dump", path);
  dump.world_size = JsonSmallIntOr(*j, {"world_size"}, 0);
  dump.iteration = JsonIntOr(*j, {"iteration"}, -1);
  dump.waiting_in = JsonStringOr(*j, {"waiting_in"});
  const Json* threads = JsonArrayField(*j, {"threads"});
  if (threads == nullptr) return ErrorStatus("{}: no threads", path);
  const Json* main = nullptr;
  for (const Json& t : *threads) {
    if (JsonBoolOr(t, {"is_main"}, false)) main = &t;
  }
  if (main == nullptr && !threads->empty()) main = &(*threads)[0];
  if (const Json* frames = main ? JsonArrayField(*main, {"frames"}) : nullptr) {
    for (const Json& f : *frames) {
      if (!f.is_object()) continue;
      dump.main_frames.push_back({JsonStringOr(f, {"file"}), JsonSmallIntOr(f, {"line"}, 0),
                                  JsonStringOr(f, {"function"}), JsonStringOr(f, {"code"})});
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
  world_size = std::min(world_size, kMaxWorldSize);  // the caller warned about a larger one
  // Vote on where each rank's main thread is; ranks waiting in a collective are the waiters.
  std::map<std::string, std::vector<const StackDump*>> at;
  for (const StackDump& d : dumps) at[FrameKey(InnermostUserFrame(d)) + "|" + d.waiting_in].push_back(&d);
  const std::vector<const StackDump*>* majority = nullptr;
  for (const auto& [key, ranks] : at) {
    bool waiting = !ranks.front()->waiting_in.empty();
    if (majority == nullptr || ranks.size() > majority->size() || (ranks.size() == majority->size() && waiting)) {
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
  std::string waiter_text =
      fmt::format("{} wait{} at {}{}", majority->size() == 1 ? "1 rank" : fmt::format("{} ranks", majority->size()),
                  majority->size() == 1 ? "s" : "", FrameKey(waiter_frame),
                  waiter->waiting_in.empty() ? "" : " in " + waiter->waiting_in);
  if (suspects.empty()) {
    // Every dump agrees: the missing ranks are the suspects.
    std::vector<int> present;
    present.reserve(dumps.size());
    for (const StackDump& d : dumps) present.push_back(d.rank);
    for (int r = 0; r < world_size; ++r) {
      if (std::find(present.begin(), present.end(), r) == present.end()) f.workers.push_back(r);
    }
    f.function = waiter_frame ? waiter_frame->function : "";
    f.location = FrameKey(waiter_frame);
    f.evidence = f.workers.empty()
                     ? fmt::format("all {} ranks are stuck at the same place: {}", dumps.size(), waiter_text)
                     : fmt::format("{}; ranks {} wrote no stacks (crashed or stuck outside Python?)", waiter_text,
                                   ListedRanks(f.workers));
  } else {
    std::sort(suspects.begin(), suspects.end(),
              [](const StackDump* a, const StackDump* b) { return a->rank < b->rank; });
    for (const StackDump* s : suspects) f.workers.push_back(s->rank);
    const StackFrame* frame = InnermostUserFrame(*suspects.front());
    f.function = frame ? frame->function : "";
    f.location = FrameKey(frame);
    f.evidence =
        fmt::format("rank {} is at {} ({}){}; {}", suspects.front()->rank, f.location,
                    frame && !frame->code.empty() ? frame->code : f.function,
                    suspects.size() > 1 ? fmt::format(" with {} others", suspects.size() - 1) : "", waiter_text);
  }
  f.action = AdviceFor(FindingCategory::kHang, FindingScope::kLocal, f.workers.empty() ? -1 : f.workers.front());
  f.impact_s_per_iter = 0;
  return {f};
}

}  // namespace eroica
