#include "cli/diagnose_inputs.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/file_util.h"
#include "base/json_access.h"
#include "cli/hardware_samples.h"
#include "summary/pattern_file.h"
#include "summary/summarize_files.h"

namespace eroica {
namespace {

namespace fs = std::filesystem;

enum class InputKind { kTrace, kPattern, kStacks, kSessionMeta, kSkip };

InputKind Classify(const fs::path& path) {
  std::string name = path.filename().string();
  if (name.starts_with("stacks-") && name.ends_with(".json")) return InputKind::kStacks;
  if (name == "session.json" || name.ends_with(".meta.json")) return InputKind::kSessionMeta;
  // raw-traces.json: where each rank's raw trace stayed (python/eroica/central.py), no input.
  if (name == "report.json" || name.starts_with("report.") || name == "raw-traces.json" || name.ends_with(".tmp") ||
      name.find(".tmp.") != std::string::npos) {
    return InputKind::kSkip;  // a writer's temporary (ours: NAME.tmp.PID.N)
  }
  if (LooksLikePatternFile(path.string())) return InputKind::kPattern;
  if (LooksLikeTraceFile(name)) return InputKind::kTrace;
  return InputKind::kSkip;
}

void ReadSessionMeta(const std::string& path, LocalizeInput* input) {
  StatusOr<std::string> text = ReadSmallFile(path, 1 << 20);
  if (!text.ok()) {
    input->input_errors.push_back(text.status().message());
    return;
  }
  std::optional<Json> j = ParseJson(*text);
  if (j) input->declared_world_size = std::max(input->declared_world_size, JsonSmallIntOr(*j, {"world_size"}, 0));
}

}  // namespace

StatusOr<LocalizeInput> CollectDiagnoseInputs(const std::vector<std::string>& paths, int threads, bool keep_patterns) {
  std::vector<fs::path> files;
  std::vector<std::string> not_read;
  for (const std::string& p : paths) {
    std::error_code error;
    if (fs::is_directory(p, error)) {
      for (const auto& entry : fs::directory_iterator(p, error)) {
        if (entry.is_regular_file(error) && !entry.is_symlink(error)) {
          files.push_back(entry.path());
        } else if (!entry.is_directory(error) && Classify(entry.path()) != InputKind::kSkip) {
          // Named like an input but a FIFO, device, socket or symlink: never opened.
          not_read.push_back(fmt::format("{}: not a regular file; not read", entry.path().string()));
        }
      }
    } else if (fs::exists(p, error)) {
      files.push_back(p);
    } else {
      return ErrorStatus("{}: no such file or folder", p);
    }
  }
  std::sort(files.begin(), files.end());
  LocalizeInput input;
  input.input_errors = std::move(not_read);
  std::vector<std::string> traces;
  for (const fs::path& file : files) {
    switch (Classify(file)) {
      case InputKind::kTrace:
        traces.push_back(file.string());
        break;
      case InputKind::kPattern: {
        Status status =
            ForEachPattern(file.string(), [&](WorkerPattern&& w) { input.AddWorker(std::move(w), keep_patterns); });
        if (!status.ok()) input.input_errors.push_back(status.message());
        break;
      }
      case InputKind::kStacks: {
        StatusOr<StackDump> dump = ReadStackDump(file.string());
        if (dump.ok()) {
          input.stacks.push_back(std::move(*dump));
        } else {
          input.input_errors.push_back(dump.status().message());
        }
        break;
      }
      case InputKind::kSessionMeta:
        ReadSessionMeta(file.string(), &input);
        break;
      case InputKind::kSkip:
        break;
    }
  }
  // The node agent's samples in each trace's folder give the functions their μ and σ.
  std::map<std::string, HardwareSamples> samples;
  for (const std::string& trace : traces) {
    std::string folder = fs::path(trace).parent_path().string();
    if (!samples.contains(folder)) samples.emplace(folder, HardwareSamples::FromFolder(folder, &input.input_errors));
  }
  SamplesProvider provider = [&samples](const Trace& trace, std::string* note) {
    auto it = samples.find(fs::path(trace.meta.path).parent_path().string());
    return it == samples.end() ? std::vector<ResourceSamples>{} : it->second.ForTrace(trace, note);
  };
  FileSummaries summaries = SummarizeFiles(traces, threads, {}, provider);
  for (std::string& note : summaries.notes) input.input_errors.push_back(std::move(note));
  for (WorkerPattern& w : summaries.patterns) input.AddWorker(std::move(w), keep_patterns);
  for (std::string& e : summaries.errors) input.input_errors.push_back(std::move(e));
  if (input.table.empty() && input.stacks.empty()) {
    std::string why =
        input.input_errors.empty() ? "no traces, pattern files or stack dumps found" : input.input_errors.front();
    std::string where = paths.size() == 1 ? paths[0] : fmt::format("{} paths", paths.size());
    return ErrorStatus("{}: nothing to diagnose: {}", where, why);
  }
  std::sort(input.workers.begin(), input.workers.end(),
            [](const WorkerPattern& a, const WorkerPattern& b) { return a.rank < b.rank; });
  return input;
}

}  // namespace eroica
