#include "report/prompt.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "report/code_location.h"
#include "report/run_figures.h"
#include "report/source_excerpt.h"
#include "report/verdict.h"

namespace eroica {
namespace {

// Library paths are shortened: they say which package, never where this machine keeps it.
std::string DisplayPath(const std::string& file) { return IsJobSourcePath(file) ? file : ShortLibraryPath(file); }

std::string InlineCode(std::string_view text) {
  std::string clean(text);
  std::replace(clean.begin(), clean.end(), '`', '\'');
  std::replace(clean.begin(), clean.end(), '\n', ' ');
  return "`" + clean + "`";
}

std::string WaitingIn(const Finding& f, const std::vector<StackDump>& stacks) {
  for (const StackDump& d : stacks) {
    if (std::find(f.workers.begin(), f.workers.end(), d.rank) == f.workers.end() && !d.waiting_in.empty()) {
      return d.waiting_in;
    }
  }
  return "";
}

bool HasPythonFrames(const std::vector<WorkerPattern>& workers) {
  for (const WorkerPattern& w : workers) {
    for (const FunctionPattern& f : w.functions) {
      if (ParseCodeLocation(f.name)) return true;
    }
  }
  return false;
}

std::string Numbers(const Finding& f, const Diagnosis& d, const std::vector<WorkerPattern>& workers) {
  std::string out;
  std::string ranks = f.workers.size() <= 16 ? fmt::format("{}", fmt::join(f.workers, ", "))
                                             : fmt::format("{} ranks, first {}", f.workers.size(), f.workers.front());
  out += fmt::format("- Ranks: {} (of {} diagnosed)\n", ranks.empty() ? "unknown" : ranks, d.workers);
  if (!f.function.empty()) out += fmt::format("- Function: {}\n", InlineCode(f.function));
  if (f.category != FindingCategory::kHang) {
    out += fmt::format("- Impact: {} lost per iteration (median iteration {})\n", FormatDuration(f.impact_s_per_iter),
                       FormatDuration(MedianIterationSeconds(workers)));
    std::string who = f.scope == FindingScope::kLocal && f.workers.size() == 1 ? fmt::format("rank {}", f.workers[0])
                                                                               : "the ranks named";
    out += fmt::format(
        "- Share of the profiled window this function owns the critical path (β): {:.4f} on {} vs {:.4f} "
        "{}\n",
        f.beta, who, f.peer_beta, f.scope == FindingScope::kGlobal ? "expected at most" : "median of its peers");
    out += fmt::format("- Distances: from the expected box D = {:.3f}; from the peers Δ = {:.2f} (robust z-score)\n",
                       f.expectation_distance, f.differential_distance);
  }
  out += fmt::format("- Evidence: {}\n", f.evidence);
  if (!f.action.empty()) out += fmt::format("- eroica's first suggestion: {}\n", f.action);
  return out;
}

std::string Locations(const std::vector<CodeLocation>& locations, const PromptOptions& options) {
  if (locations.empty()) return "";
  std::string out = "\n### Code\n";
  for (const CodeLocation& loc : locations) {
    std::string name = loc.function.empty() ? "" : fmt::format(" in {}", InlineCode(loc.function));
    out +=
        fmt::format("\n{}{} — {}\n", InlineCode(fmt::format("{}:{}", DisplayPath(loc.file), loc.line)), name, loc.why);
    StatusOr<SourceExcerpt> excerpt =
        ReadSourceExcerpt(loc.file, loc.line, options.context_lines, options.source_roots);
    if (excerpt.ok()) {
      out += "\n" + FormatExcerptMarkdown(*excerpt);
    } else if (!loc.code.empty()) {
      out += fmt::format("\nThe line, as the stack captured it: {} (source not quoted: {})\n", InlineCode(loc.code),
                         excerpt.status().message());
    }
  }
  return out;
}

std::string StackSection(const Finding& f, const std::vector<StackDump>& stacks) {
  const StackDump* dump = f.workers.empty() ? nullptr : DumpOfRank(stacks, f.workers.front());
  if (dump == nullptr || dump->main_frames.empty()) return "";
  std::string out = fmt::format("\n### Main-thread stack of rank {} (outermost first)\n\n", dump->rank);
  size_t first = dump->main_frames.size() > 12 ? dump->main_frames.size() - 12 : 0;
  if (first > 0) out += fmt::format("- … {} outer frames left out\n", first);
  for (size_t i = first; i < dump->main_frames.size(); ++i) {
    const StackFrame& frame = dump->main_frames[i];
    out += fmt::format("- {} in {}{}\n", InlineCode(fmt::format("{}:{}", DisplayPath(frame.file), frame.line)),
                       InlineCode(frame.function), frame.code.empty() ? "" : ": " + InlineCode(frame.code));
  }
  return out;
}

std::string RunSection(const Diagnosis& d, const LocalizeInput& input, const SessionInfo& s) {
  std::string out = "\n## The run\n\n";
  int world = d.world_size > 0 ? d.world_size : s.world_size;
  out += fmt::format("- World size: {}; workers diagnosed: {}\n", world > 0 ? std::to_string(world) : "unknown",
                     d.workers);
  std::set<std::string> devices, hosts;
  for (const WorkerPattern& w : input.workers) {
    devices.insert(w.has_device ? (w.device_name.empty() ? "GPU" : w.device_name) : "CPU only (no device kernels)");
    if (!w.host.empty()) hosts.insert(w.host);
  }
  if (!devices.empty()) out += fmt::format("- Devices: {}\n", fmt::join(devices, ", "));
  int host_count = std::max(static_cast<int>(hosts.size()), s.HostCount());
  if (host_count > 0) out += fmt::format("- Hosts: {}\n", host_count);
  if (!s.TorchVersions().empty()) out += fmt::format("- PyTorch: {}\n", s.TorchVersions());
  if (!s.PythonVersions().empty()) out += fmt::format("- Python: {}\n", s.PythonVersions());
  if (!input.workers.empty() && !input.workers.front().step_ids.empty()) {
    const std::vector<int64_t>& ids = input.workers.front().step_ids;
    std::string range = ids.size() == 1 ? fmt::format("{} (1 iteration)", ids.front())
                                        : fmt::format("{}–{} ({} iterations)", ids.front(), ids.back(), ids.size());
    out += fmt::format("- Profiled iterations: {}, median iteration {}\n", range,
                       FormatDuration(MedianIterationSeconds(input.workers)));
  }
  if (s.has_session) {
    out += fmt::format("- Captured online: reason {}", s.reason.empty() ? "unknown" : s.reason);
    if (s.trigger_rank >= 0) out += fmt::format(", detected by rank {}", s.trigger_rank);
    if (s.detected_iteration >= 0) out += fmt::format(" at iteration {}", s.detected_iteration);
    if (s.stuck_iteration >= 0) out += fmt::format(", stuck in iteration {}", s.stuck_iteration);
    if (s.best_mean_s > 0 && s.current_mean_s > 0) {
      out += fmt::format(" (mean iteration {} against a best of {})", FormatDuration(s.current_mean_s),
                         FormatDuration(s.best_mean_s));
    }
    if (s.best_cpu_s > 0 && s.current_cpu_s > 0) {
      out += fmt::format("; its training thread's own CPU time per iteration {} against a best of {}",
                         FormatDuration(s.current_cpu_s), FormatDuration(s.best_cpu_s));
    }
    out += "\n";
    if (std::string note = FreshMemoryNote(s); !note.empty()) out += fmt::format("- Note: {}\n", note);
  }
  if (!input.stacks.empty()) {
    out += fmt::format("- Stack dumps from {} of {} ranks\n", input.stacks.size(), world > 0 ? world : d.workers);
  }
  return out;
}

std::string Warnings(const Diagnosis& d, const SessionInfo& s) {
  std::vector<std::string> all = d.warnings;
  all.insert(all.end(), s.warnings.begin(), s.warnings.end());
  if (all.empty()) return "";
  std::string out = "\n## Data-quality warnings (the numbers above may be incomplete)\n\n";
  for (const std::string& w : all) out += fmt::format("- {}\n", w);
  return out;
}

}  // namespace

std::string RenderPrompt(const Diagnosis& d, const LocalizeInput& input, const SessionInfo& session,
                         const PromptOptions& options) {
  bool hang = !d.healthy() && d.findings.front().category == FindingCategory::kHang;
  std::string out = fmt::format("# {} in a distributed PyTorch training job\n\n", d.healthy() ? "No problem found"
                                                                                  : hang      ? "Fix a hang"
                                                                                              : "Fix a slowdown");
  out +=
      "You are helping an engineer fix the root cause of a problem in a distributed PyTorch training job. "
      "eroica found it by comparing every rank's profile with its peers' and with expectations; the numbers "
      "below are measurements from this run.\n";
  if (d.healthy() && !d.slowed_by.empty()) {
    out += fmt::format(
        "\neroica found no problem in the job on {} workers, but it is slower: {}. Its ranks wait for processors "
        "that work outside the job holds.\n",
        d.workers, d.slowed_by);
  } else if (d.healthy()) {
    out += fmt::format(
        "\neroica found no problem on {} workers: no rank stands out and nothing exceeds its expected "
        "share. If the job still feels slow, the slowdown was probably outside the profiled window.\n",
        d.workers);
  }
  size_t shown = std::min(d.findings.size(), options.max_findings);
  if (shown > 0) out += "\n## Verdict (most impactful first)\n\n";
  for (size_t i = 0; i < shown; ++i) out += fmt::format("{}. {}\n", i + 1, FindingSentence(d.findings[i], d.workers));
  std::string first_where;
  for (size_t i = 0; i < shown; ++i) {
    const Finding& f = d.findings[i];
    out += fmt::format("\n## Finding {}: {} {}\n\n", i + 1, Name(f.scope), Name(f.category));
    out += Numbers(f, d, input.workers);
    std::vector<CodeLocation> locations = FindingLocations(f, input.workers, input.stacks);
    if (i == 0 && !locations.empty())
      first_where = fmt::format("{}:{}", DisplayPath(locations[0].file), locations[0].line);
    if (locations.empty() && f.category != FindingCategory::kHang) {
      out += HasPythonFrames(input.workers)
                 ? "- Code location: no Python frame of the job's own code stands out on the critical path.\n"
                 : "- Code location: the traces carry no Python stacks. Re-profiling with `with_stack=True` "
                   "(EROICA_WITH_STACK=1 for online sessions) would name the Python frames.\n";
    }
    out += Locations(locations, options);
    if (f.category == FindingCategory::kHang) out += StackSection(f, input.stacks);
  }
  out += RunSection(d, input, session);
  out += Warnings(d, session);
  out += "\n## What I need from you\n\n";
  if (d.healthy() && !d.slowed_by.empty()) {
    out +=
        "Nothing to fix in the job's code. Suggest how to find the other processes on that node (top, ps, the "
        "scheduler's placement) and how to keep the job's cores to itself (CPU requests and limits, pinning, "
        "a dedicated node).\n";
    return out;
  }
  if (d.healthy()) {
    out += "Nothing to fix from this data. Suggest how to profile a longer or later window to catch the slowdown.\n";
    return out;
  }
  const Finding& top = d.findings.front();
  out += FindingRequest(top, d, first_where, WaitingIn(top, input.stacks)) + "\n";
  if (shown > 1) out += "\nFix finding 1 first; say whether your change also explains the other findings.\n";
  out +=
      "\nAnswer with: (1) the root cause in two or three sentences, naming the file and line; (2) a minimal patch "
      "as a unified diff against the files quoted above; (3) how to check the fix: ";
  out += hang ? "what run shows that every rank now gets past the iteration where it hung.\n"
              : "what should change in eroica's numbers above (the suspect's β back near its peers', the time lost "
                "per iteration near zero).\n";
  return out;
}

}  // namespace eroica
