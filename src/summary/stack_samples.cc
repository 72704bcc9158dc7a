#include "summary/stack_samples.h"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include "base/json_access.h"
#include "summary/loader_work.h"
#include "summary/trace_clock.h"

namespace eroica {

namespace {

// A DataLoader's workers, with room; more are ignored.
constexpr size_t kMaxLoaderWorkers = 256;
constexpr size_t kMaxOtherThreads = 8;  // as many as the sampler keeps (stack_sampler.py)

// A "cpu" reading's figure, or `absent` when it is missing or out of [0, max] (a core count, or
// cores' worth of time per second, below a million; a share of the window at most 1).
float CpuFigure(const Json& cpu, const char* key, double max, float absent) {
  std::optional<double> v = JsonNumber(JsonField(cpu, {key}));
  return v && std::isfinite(*v) && *v >= 0 && *v <= max ? static_cast<float>(*v) : absent;
}

// The training process's reading ("cpu", python/eroica/cpu_share.py), or none.
std::optional<CpuShare> ProcessCpu(const Json& doc) {
  const Json* cpu = JsonField(doc, {"cpu"});
  if (cpu == nullptr || !cpu->is_object()) return std::nullopt;
  CpuShare share;
  constexpr double kMax = 1e6;
  share.cpus = CpuFigure(*cpu, "cpus", kMax, 0);
  share.host_busy = std::min(1.0f, CpuFigure(*cpu, "host_busy", kMax, 0));
  share.process_cpu = CpuFigure(*cpu, "process_cpu", kMax, 0);
  share.run_delay = CpuFigure(*cpu, "run_delay", kMax, 0);
  // Figures that may be absent: negative when not read (never "zero").
  share.throttled = CpuFigure(*cpu, "throttled", 1, -1);
  share.main_cpu = CpuFigure(*cpu, "main_cpu", kMax, -1);
  share.main_run_delay = CpuFigure(*cpu, "main_run_delay", kMax, -1);
  if (share.cpus <= 0) return std::nullopt;
  return share;
}

// The loader workers' readings summed into the training process's, as they are read.
struct LoaderWorkersCpu {
  size_t read = 0, sampled = 0;
  double making = 0, asleep = 0;

  // One worker: its batch-making (main) thread's figures where they were read (files before
  // those were written count all its threads, the sampler's own queueing among them), and how
  // long that thread made batches and slept making them.
  void Add(const CpuShare& worker, const StackSamples& samples, CpuShare* training) {
    double cpu = worker.main_cpu >= 0 ? worker.main_cpu : worker.process_cpu;
    double queued = worker.main_run_delay >= 0 ? worker.main_run_delay : worker.run_delay;
    training->loader_cpu += static_cast<float>(cpu);
    training->loader_run_delay += static_cast<float>(queued);
    ++read;
    if (std::optional<double> share = BatchMakingShare(samples)) {
      ++sampled;
      making += *share;
      asleep += std::max(0.0, *share - cpu - queued);
    }
  }

  // Known only where every worker read was sampled: a sum short of one would say "ready" or
  // "not asleep" for want of its samples.
  void Finish(CpuShare* training) const {
    if (read == 0 || sampled != read) return;
    training->loader_making = static_cast<float>(making);
    training->loader_asleep = static_cast<float>(asleep);
  }
};

// One sampled thread's frames, stacks and samples (the file's top level, or one of its
// loader_workers), its unix times moved by `offset` onto the trace's clock.
Status ParseSampleSet(const Json& doc, int64_t offset, const std::string& path, StackSamples* out) {
  // A rate outside 0.01 Hz - 1 GHz is no sampler's (its period would not fit the clock): unknown.
  double hz = JsonNumberOr(doc, {"hz"}, 0.0);
  out->hz = hz >= 0.01 && hz <= 1e9 ? hz : 0.0;
  out->library_prefixes = JsonStrings(JsonField(doc, {"library_prefixes"}));
  const Json* frames = JsonArrayField(doc, {"frames"});
  const Json* stacks = JsonArrayField(doc, {"stacks"});
  const Json* samples = JsonArrayField(doc, {"samples"});
  if (frames == nullptr || stacks == nullptr || samples == nullptr) {
    return ErrorStatus("{}: damaged stack samples: frames, stacks and samples must be lists", path);
  }
  for (const Json& f : *frames) {
    std::optional<std::string> file = f.is_array() && f.size() == 3 ? JsonString(&f[0]) : std::nullopt;
    std::optional<int64_t> line = f.is_array() && f.size() == 3 ? JsonInt(&f[1], 0, INT32_MAX) : std::nullopt;
    std::optional<std::string> function = f.is_array() && f.size() == 3 ? JsonString(&f[2]) : std::nullopt;
    if (!file || !line || !function)
      return ErrorStatus("{}: damaged stack samples: a frame is not [file, line, function]", path);
    out->frames.push_back({*file, static_cast<int>(*line), *function});
  }
  for (const Json& s : *stacks) {
    std::vector<uint32_t> stack;
    for (int64_t frame : JsonInts(&s, 0, UINT32_MAX)) {
      if (static_cast<uint64_t>(frame) >= out->frames.size()) {
        return ErrorStatus("{}: a stack names frame {} of {}", path, frame, out->frames.size());
      }
      stack.push_back(static_cast<uint32_t>(frame));
    }
    out->stacks.push_back(std::move(stack));
  }
  constexpr int64_t kMaxUnixNs = int64_t{1} << 62;  // bounded: subtracting the offset cannot overflow
  for (const Json& s : *samples) {
    // [unix_ns, stack], or with the sampler's own queueing since the sample before as a third;
    // numbers after those are a later sampler's and are skipped.
    bool shaped = s.is_array() && s.size() >= 2;
    std::optional<int64_t> at = shaped ? JsonInt(&s[0], 0, kMaxUnixNs) : std::nullopt;
    std::optional<int64_t> stack = shaped ? JsonInt(&s[1], 0, UINT32_MAX) : std::nullopt;
    std::optional<int64_t> queued =
        shaped && s.size() >= 3 ? JsonInt(&s[2], 0, kMaxUnixNs) : std::optional<int64_t>(-1);
    if (!at || !stack || !queued) {
      return ErrorStatus("{}: damaged stack samples: a sample is not [unix_ns, stack] or [unix_ns, stack, queued_ns]",
                         path);
    }
    if (static_cast<uint64_t>(*stack) >= out->stacks.size()) {
      return ErrorStatus("{}: a sample names stack {} of {}", path, *stack, out->stacks.size());
    }
    out->samples.push_back({*at - offset, static_cast<uint32_t>(*stack), *queued});
  }
  std::stable_sort(out->samples.begin(), out->samples.end(),
                   [](const StackSample& a, const StackSample& b) { return a.ts_ns < b.ts_ns; });
  return Status::Ok();
}

}  // namespace

StatusOr<StackSamples> ParseStackSamples(std::string_view text, const Trace& trace, const std::string& path) {
  std::optional<Json> parsed = ParseJson(text);
  // v2 samples may keep the sampler's own wait for a CPU; v1 (samplers before it) do not.
  std::string schema = parsed && parsed->is_object() ? JsonStringOr(*parsed, {"schema"}) : std::string();
  if (schema != "eroica.stack_samples/v1" && schema != "eroica.stack_samples/v2") {
    return ErrorStatus("{}: not an eroica.stack_samples/v1 or v2 file", path);
  }
  const Json& doc = *parsed;
  std::optional<int64_t> offset = UnixClockOffset(trace, &doc);
  if (!offset) return ErrorStatus("{}: stack samples not used: nothing anchors the trace's clock", path);
  StackSamples out;
  if (Status status = ParseSampleSet(doc, *offset, path, &out); !status.ok()) return status;
  out.cpu = ProcessCpu(doc);
  // The DataLoader's worker processes, on the same host's clock as the training thread.
  if (const Json* workers = JsonArrayField(doc, {"loader_workers"})) {
    size_t seen = 0;
    LoaderWorkersCpu loader;
    for (const Json& worker : *workers) {
      if (++seen > kMaxLoaderWorkers) break;
      StackSamples samples;
      if (!worker.is_object()) return ErrorStatus("{}: damaged stack samples: a loader worker is not an object", path);
      if (Status status = ParseSampleSet(worker, *offset, path + " (a loader worker)", &samples); !status.ok()) {
        return status;
      }
      if (std::optional<CpuShare> cpu = ProcessCpu(worker); cpu && out.cpu) loader.Add(*cpu, samples, &*out.cpu);
      if (!samples.samples.empty()) out.loader_workers.push_back(std::move(samples));
    }
    if (out.cpu) loader.Finish(&*out.cpu);
  }
  // The process's other Python threads, sampled beside the training thread.
  if (const Json* threads = JsonArrayField(doc, {"other_threads"})) {
    size_t seen = 0;
    for (const Json& thread : *threads) {
      if (++seen > kMaxOtherThreads) break;
      StackSamples samples;
      if (!thread.is_object())
        return ErrorStatus("{}: damaged stack samples: an entry of other_threads is not an object", path);
      if (Status status = ParseSampleSet(thread, *offset, path + " (another thread)", &samples); !status.ok()) {
        return status;
      }
      samples.cpu_ns = JsonIntOr(thread, {"cpu_ns"}, -1, 0, int64_t{1} << 62);
      if (!samples.samples.empty()) out.other_threads.push_back(std::move(samples));
    }
  }
  return out;
}

std::string StackSamplesPathFor(const Trace& trace) {
  if (trace.meta.rank < 0) return "";
  std::filesystem::path folder = std::filesystem::path(trace.meta.path).parent_path();
  return (folder / fmt::format("rank-{}.stacks.json", trace.meta.rank)).string();
}

bool LooksLikeStackSamplesFile(std::string_view name) { return name.ends_with(".stacks.json"); }

}  // namespace eroica
