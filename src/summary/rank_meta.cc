#include "summary/rank_meta.h"

#include <fmt/core.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/one_line.h"

namespace eroica {

namespace {
// The file holds a few numbers per profiled step; anything larger is not the rank's meta.
constexpr size_t kMaxRankMetaBytes = size_t{1} << 20;
// Host names are at most 255 bytes (a DNS name); a longer value is not one.
constexpr size_t kMaxHostBytes = 255;
}  // namespace

std::optional<Json> ReadRankMeta(const Trace& trace) {
  if (trace.meta.rank < 0 || trace.meta.path.empty()) return std::nullopt;
  std::filesystem::path meta =
      std::filesystem::path(trace.meta.path).parent_path() / fmt::format("rank-{}.meta.json", trace.meta.rank);
  StatusOr<std::string> text = ReadSmallFile(meta.string(), kMaxRankMetaBytes);
  if (!text.ok()) return std::nullopt;
  std::optional<Json> j = ParseJson(*text);
  if (!j || !j->is_object()) return std::nullopt;
  return j;
}

std::string RankMetaHost(const Json& meta) {
  std::string name = JsonStringOr(meta, {"host"});
  return name.size() <= kMaxHostBytes ? OneLine(name, kMaxHostBytes) : "";
}

std::vector<int64_t> RankMetaCompletedSteps(const Json& meta) {
  return JsonInts(JsonField(meta, {"iteration_ids"}), 0);
}

std::string RankMetaMissed(const Json& meta) {
  std::string why = JsonStringOr(meta, {"missed"});
  // Written by a package before it said so: the exit stopped the window, no iteration of it ended.
  const Json* ended = JsonField(meta, {"iteration_ids"});
  if (why.empty() && JsonStringOr(meta, {"stop_reason"}) == "exit" && ended != nullptr && ended->is_array() &&
      ended->empty()) {
    why = "the job ended before an iteration of the window did";
  }
  // A line of the rank's own words, not a file's worth (a planted meta may hold anything).
  constexpr size_t kMaxWhyBytes = 200;
  return OneLine(why, kMaxWhyBytes);
}

}  // namespace eroica
