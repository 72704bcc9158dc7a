#include "report/code_location.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "report/source_excerpt.h"
#include "report/verdict.h"

namespace eroica {
namespace {

std::optional<int> ParseLine(std::string_view digits) {
  int value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size() || value <= 0) return std::nullopt;
  return value;
}

bool IsUserFile(const std::string& file) {
  return IsJobSourcePath(file) && file.find("/eroica/") == std::string::npos &&
         file.find("/torch/") == std::string::npos;
}

std::vector<CodeLocation> HangLocations(const Finding& f, const std::vector<StackDump>& stacks) {
  std::vector<CodeLocation> out;
  const StackDump* dump = f.workers.empty() ? nullptr : DumpOfRank(stacks, f.workers.front());
  if (dump != nullptr) {
    bool innermost = true;
    for (auto it = dump->main_frames.rbegin(); it != dump->main_frames.rend(); ++it) {
      if (!IsUserFile(it->file)) continue;
      out.push_back({it->file, it->line, it->function, it->code,
                     innermost ? fmt::format("where rank {} is stuck", dump->rank)
                               : fmt::format("a caller on rank {}'s stack", dump->rank)});
      innermost = false;
    }
  }
  // Where the others wait: the innermost user frame of a rank that is not a suspect.
  std::unordered_set<int> suspects(f.workers.begin(), f.workers.end());
  for (const StackDump& other : stacks) {
    if (suspects.count(other.rank) > 0) continue;
    const StackFrame* frame = InnermostUserFrame(other);
    if (frame == nullptr || !IsUserFile(frame->file)) break;
    std::string waiting = other.waiting_in.empty() ? "" : fmt::format(" (waiting in {})", other.waiting_in);
    out.push_back({frame->file, frame->line, frame->function, frame->code,
                   fmt::format("where the other ranks are, e.g. rank {}{}", other.rank, waiting)});
    break;
  }
  return out;
}

// Python frames (with_stack traces) that own more of the suspect's critical path than the
// peers' median, largest excess first; for a global finding, the largest median β.
std::vector<CodeLocation> PythonFrameLocations(const Finding& f, const std::vector<WorkerPattern>& workers) {
  std::unordered_set<int> suspects(f.workers.begin(), f.workers.end());
  bool local = f.scope == FindingScope::kLocal;
  std::unordered_map<std::string, std::vector<double>> peer_betas;
  std::unordered_map<std::string, double> suspect_beta;
  double iteration_s = 0;
  int peers = 0;
  for (const WorkerPattern& w : workers) {
    bool suspect = local && suspects.count(w.rank) > 0;
    if (suspect && suspect_beta.empty()) iteration_s = w.iteration_s;
    peers += !suspect;
    for (const FunctionPattern& fn : w.functions) {
      if (!ParseCodeLocation(fn.name)) continue;
      if (suspect) {
        suspect_beta.emplace(fn.name, fn.beta);
      } else {
        peer_betas[fn.name].push_back(fn.beta);
      }
    }
  }
  std::vector<std::pair<double, std::string>> ranked;
  auto median_of = [&](const std::string& name) {
    std::vector<double> v = peer_betas[name];
    v.resize(std::max<size_t>(v.size(), static_cast<size_t>(peers)), 0.0);  // absent = 0
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  if (local) {
    for (const auto& [name, beta] : suspect_beta) ranked.push_back({beta - median_of(name), name});
  } else {
    for (const auto& [name, betas] : peer_betas) ranked.push_back({median_of(name), name});
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<CodeLocation> out;
  for (const auto& [score, name] : ranked) {
    if (score <= 0.001) break;
    std::optional<CodeLocation> loc = ParseCodeLocation(name);
    if (!IsUserFile(loc->file)) continue;
    loc->why = local ? fmt::format(
                           "Python frame that owns {} more of rank {}'s critical path per iteration than its "
                           "peers'",
                           FormatDuration(score * iteration_s), f.workers.front())
                     : fmt::format("Python frame on every rank's critical path (median β {:.3f})", score);
    out.push_back(std::move(*loc));
  }
  return out;
}

}  // namespace

std::optional<CodeLocation> ParseCodeLocation(std::string_view text) {
  // Kineto: "path/file.py(123): func"
  if (size_t open = text.find(".py("); open != std::string_view::npos) {
    size_t close = text.find("): ", open);
    if (close != std::string_view::npos) {
      if (std::optional<int> line = ParseLine(text.substr(open + 4, close - open - 4))) {
        return CodeLocation{std::string(text.substr(0, open + 3)), *line, std::string(text.substr(close + 3)), "", ""};
      }
    }
  }
  // "path/file.py:123" or "path/file.py:123(func)"
  size_t colon = text.rfind(".py:");
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(colon + 4);
  size_t paren = rest.find('(');
  std::optional<int> line = ParseLine(rest.substr(0, paren));
  if (!line) return std::nullopt;
  std::string function;
  if (paren != std::string_view::npos && rest.ends_with(")"))
    function = rest.substr(paren + 1, rest.size() - paren - 2);
  return CodeLocation{std::string(text.substr(0, colon + 3)), *line, function, "", ""};
}

const StackDump* DumpOfRank(const std::vector<StackDump>& stacks, int rank) {
  for (const StackDump& d : stacks) {
    if (d.rank == rank) return &d;
  }
  return nullptr;
}

std::vector<CodeLocation> FindingLocations(const Finding& f, const std::vector<WorkerPattern>& workers,
                                           const std::vector<StackDump>& stacks, size_t max_locations) {
  std::vector<CodeLocation> out;
  if (f.category == FindingCategory::kHang) out = HangLocations(f, stacks);
  auto add = [&](std::optional<CodeLocation> loc, const std::string& why) {
    if (!loc) return;
    for (const CodeLocation& known : out) {
      if (known.file == loc->file && known.line == loc->line) return;
    }
    loc->why = why;
    out.push_back(std::move(*loc));
  };
  add(ParseCodeLocation(f.location), "the location the finding names");
  add(ParseCodeLocation(f.function), "the finding's function");
  if (f.category != FindingCategory::kHang) {
    for (CodeLocation& loc : PythonFrameLocations(f, workers)) add(loc, loc.why);
  }
  if (out.size() > max_locations) out.resize(max_locations);
  return out;
}

}  // namespace eroica
