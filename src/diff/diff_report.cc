#include "diff/diff_report.h"

#include <fmt/core.h>

#include "base/json_round.h"
#include "base/rank_ranges.h"

namespace eroica {
namespace {

std::string WhatChanged(const PatternChange& c) {
  std::string what = c.function.empty() ? fmt::format("all {}", CategoryName(c.category))
                                        : fmt::format("{} ({})", c.function, CategoryName(c.category));
  return c.role.empty() ? what : fmt::format("[{}] {}", c.role, what);
}

std::string SideText(const char* label, const DiffSide& side) {
  std::string world = side.world_size > 0 ? fmt::format("world size {}", side.world_size) : "world size not declared";
  return fmt::format("{}: {} workers ({}), iteration {:.1f} ms (median; {:.1f}-{:.1f})", label, side.workers, world,
                     side.iteration_ms, side.min_iteration_ms, side.max_iteration_ms);
}

nlohmann::json ChangeJson(const PatternChange& c) {
  nlohmann::json json = {
      {"role", c.role},
      {"function", c.function},
      {"category", CategoryName(c.category)},
      {"kind", Name(c.kind)},
      {"ranks", c.ranks},
      {"role_workers", c.role_workers},
      {"base_ms_per_iter", RoundForJson(c.base_ms_per_iter, 3)},
      {"now_ms_per_iter", RoundForJson(c.now_ms_per_iter, 3)},
      {"delta_ms_per_iter", RoundForJson(c.delta_ms_per_iter, 3)},
      {"largest_delta_ms_per_iter", RoundForJson(c.largest_delta_ms_per_iter, 3)},
      {"base_ms_per_call", RoundForJson(c.base_ms_per_call, 4)},
      {"now_ms_per_call", RoundForJson(c.now_ms_per_call, 4)},
      {"base_calls_per_iter", RoundForJson(c.base_calls_per_iter, 2)},
      {"now_calls_per_iter", RoundForJson(c.now_calls_per_iter, 2)},
      {"noise_ms_per_iter", RoundForJson(c.noise_ms_per_iter, 3)},
  };
  if (c.base_calls.known() && c.now_calls.known()) {
    json["base_recorded_ms_per_call"] = RoundForJson(c.base_calls.mean_ms, 4);
    json["now_recorded_ms_per_call"] = RoundForJson(c.now_calls.mean_ms, 4);
    json["base_shortest_ms_per_call"] = RoundForJson(c.base_calls.shortest_ms, 4);
    json["now_shortest_ms_per_call"] = RoundForJson(c.now_calls.shortest_ms, 4);
  }
  return json;
}

nlohmann::json SideJson(const DiffSide& side) {
  return {{"workers", side.workers},
          {"world_size", side.world_size},
          {"iteration_ms", RoundForJson(side.iteration_ms, 3)},
          {"min_iteration_ms", RoundForJson(side.min_iteration_ms, 3)},
          {"max_iteration_ms", RoundForJson(side.max_iteration_ms, 3)}};
}

}  // namespace

std::string RanksText(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", RankRanges(ranks));
}

std::string ChangeSentence(const PatternChange& c) {
  std::string text = fmt::format("{} {} on {}{}: {:.1f} -> {:.1f} ms/iter ({:+.1f}", WhatChanged(c), Name(c.kind),
                                 RanksText(c.ranks), static_cast<int>(c.ranks.size()) == c.role_workers ? " (all)" : "",
                                 c.base_ms_per_iter, c.now_ms_per_iter, c.delta_ms_per_iter);
  if (c.ranks.size() > 1 && std::abs(c.largest_delta_ms_per_iter - c.delta_ms_per_iter) > 0.05) {
    text += fmt::format(", largest {:+.1f}", c.largest_delta_ms_per_iter);
  }
  text += fmt::format("; noise bar {:.1f})", c.noise_ms_per_iter);
  if (!c.function.empty() && (c.base_calls_per_iter > 0 || c.now_calls_per_iter > 0)) {
    text += fmt::format("; per call {:.3f} -> {:.3f} ms, calls/iter {:.1f} -> {:.1f}", c.base_ms_per_call,
                        c.now_ms_per_call, c.base_calls_per_iter, c.now_calls_per_iter);
  }
  if (c.base_calls.known() && c.now_calls.known()) {
    text += fmt::format(
        "; its recorded calls {:.3f} -> {:.3f} ms, the shortest of each (the last rank to arrive) "
        "{:.3f} -> {:.3f} ms",
        c.base_calls.mean_ms, c.now_calls.mean_ms, c.base_calls.shortest_ms, c.now_calls.shortest_ms);
  }
  return text;
}

std::string FormatDiffText(const PatternDiff& diff) {
  std::string out =
      fmt::format("eroica diff: {}\n", diff.same() ? "no difference above noise"
                                                   : fmt::format("{} function changes, {} category changes above noise",
                                                                 diff.functions.size(), diff.categories.size()));
  out += SideText("base", diff.base) + "\n" + SideText("now ", diff.now) + "\n";
  out += fmt::format("iteration: {:+.1f} ms ({:+.1f} %)\n", diff.now.iteration_ms - diff.base.iteration_ms,
                     diff.base.iteration_ms > 0 ? 100 * (diff.now.iteration_ms / diff.base.iteration_ms - 1) : 0.0);
  if (!diff.functions.empty()) out += "\nfunctions:\n";
  for (size_t i = 0; i < diff.functions.size(); ++i) {
    out += fmt::format("{}. {}\n", i + 1, ChangeSentence(diff.functions[i]));
  }
  if (!diff.categories.empty()) out += "\ncategories:\n";
  for (const PatternChange& c : diff.categories) out += fmt::format("- {}\n", ChangeSentence(c));
  for (const std::string& note : diff.notes) out += fmt::format("\nnote: {}\n", note);
  return out;
}

nlohmann::json DiffToJson(const PatternDiff& diff) {
  nlohmann::json functions = nlohmann::json::array(), categories = nlohmann::json::array();
  for (const PatternChange& c : diff.functions) functions.push_back(ChangeJson(c));
  for (const PatternChange& c : diff.categories) categories.push_back(ChangeJson(c));
  return {
      {"schema", "eroica.diff/v1"}, {"same", diff.same()},    {"base", SideJson(diff.base)},
      {"now", SideJson(diff.now)},  {"functions", functions}, {"categories", categories},
      {"notes", diff.notes},
  };
}

}  // namespace eroica
