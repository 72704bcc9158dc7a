#include "summary/summarizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <unordered_map>

#include "base/huge_page_allocator.h"
#include "summary/classify.h"
#include "summary/function_name.h"
#include "summary/function_table.h"
#include "summary/pattern_builder.h"
#include "summary/program_points.h"
#include "summary/ranges_that_wait.h"
#include "summary/stack_attribution.h"
#include "summary/worker_window.h"
#include "trace/reader.h"

namespace eroica {
namespace {

// Critical-path layers, highest priority first (DESIGN.md: compute > memory > communication >
// host). Host-side layers only count while nothing above them is active.
enum Layer : int {
  kLayerDeviceCompute,
  kLayerDeviceMemory,
  kLayerDeviceComm,
  kLayerDataloader,
  kLayerGc,
  kLayerCpuCompute,  // CPU training: aten ops on the training threads
  kLayerCpuComm,
  kLayerSync,
  kLayerOptimizer,
  kLayerPython,
  kLayerHostOther,
  kLayerCount,
};

struct RoleMapping {
  Category category;
  HostKind host_kind;
  Layer layer;
};

RoleMapping MapRole(EventRole role, bool has_device) {
  switch (role) {
    case EventRole::kDeviceCompute:
      return {Category::kCompute, HostKind::kNone, kLayerDeviceCompute};
    case EventRole::kDeviceMemory:
      return {Category::kMemory, HostKind::kNone, kLayerDeviceMemory};
    case EventRole::kDeviceComm:
      return {Category::kCommunication, HostKind::kNone, kLayerDeviceComm};
    case EventRole::kDataloader:
      return {Category::kDataloader, HostKind::kNone, kLayerDataloader};
    case EventRole::kGc:
      return {Category::kHost, HostKind::kGc, kLayerGc};
    case EventRole::kCpuComm:
      return {Category::kCommunication, HostKind::kNone, kLayerCpuComm};
    case EventRole::kSync:
      return {Category::kHost, HostKind::kSync, kLayerSync};
    case EventRole::kOptimizer:
      return {Category::kHost, HostKind::kOptimizer, kLayerOptimizer};
    case EventRole::kPython:
      return {Category::kHost, HostKind::kPython, kLayerPython};
    case EventRole::kLaunch:
      return {Category::kHost, HostKind::kLaunch, kLayerHostOther};
    case EventRole::kCpuOp:
      // On CPU training the aten ops are the compute; on GPU training they are launch work.
      if (has_device) return {Category::kHost, HostKind::kFramework, kLayerHostOther};
      return {Category::kCompute, HostKind::kNone, kLayerCpuCompute};
    default:
      return {Category::kHost, HostKind::kNone, kLayerHostOther};
  }
}

// Roles and function ids are computed once per distinct name: a name almost always comes with
// one cat, so a table indexed by the name's id answers nearly every event without hashing;
// the rare second cat (or a collective's size bucket) goes through a map.
struct NameEntry {
  StringId cat = 0;
  bool classified = false;
  EventRole role = EventRole::kIgnore;
  uint32_t function = UINT32_MAX;  // for non-collective roles
};

BigVector<EventRole> ClassifyAll(const Trace& trace, std::vector<NameEntry>* by_name) {
  by_name->assign(trace.strings.size(), NameEntry{});
  std::unordered_map<uint64_t, EventRole> others;
  BigVector<EventRole> roles(trace.events.size());
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    NameEntry& entry = (*by_name)[e.name];
    if (entry.classified && entry.cat == e.cat) {
      roles[i] = entry.role;
      continue;
    }
    if (!entry.classified) {
      entry = {e.cat, true, ClassifyEvent(trace.Str(e.cat), trace.Str(e.name)), UINT32_MAX};
      roles[i] = entry.role;
      continue;
    }
    uint64_t key = (uint64_t{e.cat} << 32) | e.name;
    auto it = others.find(key);
    if (it == others.end()) it = others.emplace(key, ClassifyEvent(trace.Str(e.cat), trace.Str(e.name))).first;
    roles[i] = it->second;
  }
  return roles;
}

// Per-event function ids, computed once per distinct (role, name, collective, size bucket).
BigVector<uint32_t> AssignFunctions(const Trace& trace, const BigVector<EventRole>& roles, bool has_device,
                                    std::vector<NameEntry>* by_name, FunctionTable* table) {
  std::unordered_map<std::string, uint32_t> cache;
  BigVector<uint32_t> functions(trace.events.size(), 0);
  std::string key;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    EventRole role = roles[i];
    if (role == EventRole::kIgnore || role == EventRole::kStepMarker) continue;
    const TraceEvent& e = trace.events[i];
    bool comm = role == EventRole::kDeviceComm || role == EventRole::kCpuComm;
    NameEntry& entry = (*by_name)[e.name];
    bool usual = !comm && entry.role == role;  // the name's usual role: cache by name id
    if (usual && entry.function != UINT32_MAX) {
      functions[i] = entry.function;
      continue;
    }
    key.assign(reinterpret_cast<const char*>(&e.name), sizeof(e.name));
    key.push_back(static_cast<char>(role));
    if (comm) {
      StringId collective = trace.Collective(e);
      key.append(reinterpret_cast<const char*>(&collective), sizeof(collective));
      key += SizeBucket(trace.Bytes(e));
    }
    auto it = cache.find(key);
    if (it == cache.end()) {
      RoleMapping mapping = MapRole(role, has_device);
      std::string name = FunctionName(role, trace.Str(e.name), trace.Str(trace.Collective(e)), trace.Bytes(e));
      it = cache.emplace(key, table->Intern(mapping.category, mapping.host_kind, name)).first;
    }
    functions[i] = it->second;
    if (usual) entry.function = it->second;
  }
  return functions;
}

uint32_t HashShapes(std::string_view shapes) { return static_cast<uint32_t>(std::hash<std::string_view>{}(shapes)); }

constexpr size_t kMaxCollectiveCalls = 64;

// The events that paint the critical path: what PaintCriticalPath's layers would hold. CPU-side
// layers only take the training process's events.
bool PaintsPath(const TraceEvent& e, EventRole role, const WorkerWindow& window) {
  if (role == EventRole::kIgnore || role == EventRole::kStepMarker) return false;
  if (!IsDeviceRole(role) && e.pid != window.main_pid) return false;
  return e.end_ns() > window.start_ns && e.ts_ns < window.end_ns;
}

// Where a collective ends for the critical path. On CPU training the backend's thread (gloo) runs
// it and records its range; the step moves on only once it is done (DDP waits for its
// all-reduces before the optimizer step), so a range that runs past the next step's start was
// done by then, and the rest is that thread recording its end late, descheduled on a busy node:
// one all-reduce of a healthy run ran 26 ms into the next step, over a 9 ms loop there that was
// then painted as waiting. The training thread's own collective ops it records itself.
// A launch whose backend range was never recorded lasts until the training thread resumed
// (worker_window.h FindUnrecordedCollective).
int64_t PaintedEnd(const TraceEvent& e, EventRole role, const WorkerWindow& window, bool has_device) {
  if (has_device || role != EventRole::kCpuComm || window.main_tid < 0) return e.end_ns();
  if (e.tid == window.main_tid) {
    bool unrecorded = e.ts_ns == window.unrecorded_launch_ns && e.pid == window.main_pid;
    return unrecorded ? std::max(e.end_ns(), window.unrecorded_wait_end_ns) : e.end_ns();
  }
  auto next_step = std::upper_bound(window.step_starts_ns.begin(), window.step_starts_ns.end(), e.ts_ns);
  if (next_step == window.step_starts_ns.end() || next_step == window.step_starts_ns.begin()) return e.end_ns();
  return std::min(e.end_ns(), *next_step);
}

// Each function's calls, time, bytes and shapes from the events that start in the window.
void CountCalls(const Trace& trace, const BigVector<EventRole>& roles, const BigVector<uint32_t>& functions,
                const WorkerWindow& window, bool has_device, FunctionTable* table) {
  std::vector<int64_t> shape_hashes(trace.strings.size(), -1);  // by string id, -1: not hashed yet
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (!PaintsPath(e, roles[i], window) || e.ts_ns < window.start_ns) continue;
    FunctionStats& stats = (*table)[functions[i]];
    ++stats.calls;
    int64_t duration_ns = PaintedEnd(e, roles[i], window, has_device) - e.ts_ns;
    stats.total_duration_ns += duration_ns;
    stats.durations.Add(duration_ns);
    if (e.extra == 0) continue;
    if (int64_t bytes = trace.Bytes(e); bytes > 0) stats.bytes += bytes;
    if (StringId shapes = trace.Shapes(e); shapes != 0) {
      int64_t& hash = shape_hashes[shapes];  // shapes repeat: each string is hashed once
      if (hash < 0) hash = HashShapes(trace.Str(shapes));
      stats.shapes_hash += static_cast<uint32_t>(hash);
    }
  }
}

// The painting events by time slice of the window: each event's index under every slice its
// span meets, in file order within a slice. 4 bytes per event (and per extra slice a long span
// meets) instead of holding every span at once.
struct SliceIndex {
  TimeSlices slices;
  std::vector<size_t> offsets;      // slice k's entries are [offsets[k], offsets[k + 1])
  GrowableArray<uint32_t> entries;  // event indices; released slice by slice as they are painted
};

SliceIndex IndexBySlice(const Trace& trace, const BigVector<EventRole>& roles, const WorkerWindow& window,
                        bool has_device, size_t spans_per_slice) {
  SliceIndex index;
  index.slices = TimeSlices::About(window.start_ns, window.end_ns, trace.events.size() / spans_per_slice);
  auto slices_of = [&](const TraceEvent& e, EventRole role) {
    int64_t from = std::max(e.ts_ns, window.start_ns);
    int64_t to = std::min(PaintedEnd(e, role, window, has_device), window.end_ns);
    return std::pair{index.slices.Of(from), index.slices.Of(to - 1)};
  };
  std::vector<size_t> counts;
  while (true) {  // long spans meet many slices: fewer, wider slices when they would double the index
    counts.assign(index.slices.count(), 0);
    size_t painting = 0, total = 0;
    for (size_t i = 0; i < trace.events.size(); ++i) {
      if (!PaintsPath(trace.events[i], roles[i], window)) continue;
      auto [first, last] = slices_of(trace.events[i], roles[i]);
      for (size_t k = first; k <= last; ++k) ++counts[k];
      ++painting;
      total += last - first + 1;
    }
    if (index.slices.count() == 1 || total <= 2 * painting) break;
    ++index.slices.shift;
  }
  index.offsets.assign(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) index.offsets[k + 1] = index.offsets[k] + counts[k];
  index.entries.resize(index.offsets.back());
  std::vector<size_t> fill(index.offsets.begin(), index.offsets.end() - 1);
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (!PaintsPath(trace.events[i], roles[i], window)) continue;
    auto [first, last] = slices_of(trace.events[i], roles[i]);
    for (size_t k = first; k <= last; ++k) index.entries[fill[k]++] = static_cast<uint32_t>(i);
  }
  return index;
}

CriticalPath PaintPath(const Trace& trace, const BigVector<EventRole>& roles, const BigVector<uint32_t>& functions,
                       const WorkerWindow& window, bool has_device, uint32_t unattributed,
                       const SummarizeOptions& options) {
  auto layer_of = [&](size_t i) { return MapRole(roles[i], has_device).layer; };
  // Each layer is sized before it is filled: grown by doubling instead, its copies and fresh
  // pages cost about 3% of reading and summarizing a trace.
  auto fill = [&](std::vector<SpanList>* layers, auto for_each_event) {
    std::array<size_t, kLayerCount> sizes{};
    for_each_event([&](size_t i) { ++sizes[layer_of(i)]; });
    for (size_t l = 0; l < kLayerCount; ++l) (*layers)[l].reserve(sizes[l]);
    for_each_event([&](size_t i) {
      const TraceEvent& e = trace.events[i];
      (*layers)[layer_of(i)].push_back({e.ts_ns, PaintedEnd(e, roles[i], window, has_device), functions[i]});
    });
  };
  // The index holds 32-bit event numbers: a trace of more events (170 GB of them) is one slice.
  if (trace.events.size() <= options.one_slice_events || trace.events.size() > UINT32_MAX) {
    auto all = [&](size_t /*k*/, int64_t /*lo*/, int64_t /*hi*/, std::vector<SpanList>* layers) {
      fill(layers, [&](auto visit) {
        for (size_t i = 0; i < trace.events.size(); ++i) {
          if (PaintsPath(trace.events[i], roles[i], window)) visit(i);
        }
      });
    };
    return PaintCriticalPathBySlices(kLayerCount, TimeSlices::About(window.start_ns, window.end_ns, 1), unattributed,
                                     all);
  }
  SliceIndex index = IndexBySlice(trace, roles, window, has_device, std::max<size_t>(options.spans_per_slice, 1));
  auto gather = [&](size_t k, int64_t /*lo*/, int64_t /*hi*/, std::vector<SpanList>* layers) {
    fill(layers, [&](auto visit) {
      for (size_t j = index.offsets[k]; j < index.offsets[k + 1]; ++j) visit(index.entries[j]);
    });
    index.entries.ReleaseFront(index.offsets[k + 1]);  // the path grows as the index shrinks
  };
  return PaintCriticalPathBySlices(kLayerCount, index.slices, unattributed, gather);
}

// The data loader's items per iteration, as its ops count them: the calls of its most frequent op
// (an op every item runs; more items, more calls). Not all its ops: ops only one rank's loader
// code runs are no more items (a 4-rank forecaster whose rank 1's dataset read a shared step
// counter per window, 3 more ops an item, counted 188 ops a step against its peers' 123 and was
// named as given more work; its most frequent op ran 160 times a step on every rank).
double DataloaderOpsPerIteration(const Trace& trace, const BigVector<EventRole>& roles, const WorkerWindow& window,
                                 int iterations) {
  std::vector<const TraceEvent*> loaders;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (roles[i] == EventRole::kDataloader && trace.events[i].pid == window.main_pid) {
      loaders.push_back(&trace.events[i]);
    }
  }
  if (loaders.empty()) return 0;
  std::sort(loaders.begin(), loaders.end(),
            [](const TraceEvent* a, const TraceEvent* b) { return a->ts_ns < b->ts_ns; });
  std::unordered_map<StringId, int64_t> calls;
  int64_t most = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (roles[i] != EventRole::kCpuOp || e.pid != window.main_pid) continue;
    if (e.ts_ns < window.start_ns || e.ts_ns >= window.end_ns) continue;
    auto it = std::upper_bound(loaders.begin(), loaders.end(), e.ts_ns,
                               [](int64_t ts, const TraceEvent* l) { return ts < l->ts_ns; });
    if (it == loaders.begin()) continue;
    const TraceEvent* loader = *std::prev(it);
    if (loader->tid == e.tid && e.end_ns() <= loader->end_ns()) most = std::max(most, ++calls[e.name]);
  }
  return static_cast<double>(most) / std::max(iterations, 1);
}

// Σβ per category within each iteration, splitting spans at step boundaries.
std::vector<std::array<float, kCategoryCount>> IterationCategoryBetas(const CriticalPath& path,
                                                                      const WorkerWindow& window,
                                                                      const FunctionTable& table) {
  const std::vector<int64_t>& starts = window.step_starts_ns;
  std::vector<std::array<double, kCategoryCount>> owned(starts.size());
  for (const Span& span : path) {
    int64_t cursor = span.start_ns;
    auto it = std::upper_bound(starts.begin(), starts.end(), cursor);
    size_t step = it == starts.begin() ? 0 : static_cast<size_t>(it - starts.begin() - 1);
    while (cursor < span.end_ns && step < starts.size()) {
      int64_t step_end = step + 1 < starts.size() ? starts[step + 1] : window.end_ns;
      int64_t until = std::min(span.end_ns, step_end);
      owned[step][static_cast<size_t>(table.all()[span.function].category)] += static_cast<double>(until - cursor);
      cursor = until;
      ++step;
    }
  }
  std::vector<std::array<float, kCategoryCount>> betas(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t step_end = i + 1 < starts.size() ? starts[i + 1] : window.end_ns;
    double length = static_cast<double>(std::max<int64_t>(1, step_end - starts[i]));
    for (int c = 0; c < kCategoryCount; ++c) betas[i][c] = static_cast<float>(owned[i][c] / length);
  }
  return betas;
}

// The transfers, in issue order: device collectives on GPU training; on CPU training the
// backend's own ranges (gloo:*), which run on its thread and last until every rank joined.
std::vector<CollectiveCall> CollectiveSequence(const Trace& trace, const BigVector<EventRole>& roles,
                                               const BigVector<uint32_t>& functions, const WorkerWindow& window,
                                               bool has_device, const FunctionTable& table) {
  std::vector<const TraceEvent*> calls;
  std::vector<uint32_t> names;
  std::vector<EventRole> call_roles;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    bool transfer = has_device ? roles[i] == EventRole::kDeviceComm
                               : roles[i] == EventRole::kCpuComm && trace.Str(e.name).starts_with("gloo:");
    if (!transfer || e.ts_ns < window.start_ns || e.ts_ns >= window.end_ns) continue;
    calls.push_back(&e);
    names.push_back(functions[i]);
    call_roles.push_back(roles[i]);
  }
  std::vector<size_t> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return calls[a]->ts_ns < calls[b]->ts_ns; });
  std::vector<CollectiveCall> out;
  for (size_t k = 0; k < std::min(order.size(), kMaxCollectiveCalls); ++k) {
    const TraceEvent& e = *calls[order[k]];
    int64_t end = PaintedEnd(e, call_roles[order[k]], window, has_device);
    const std::vector<int64_t>& starts = window.step_starts_ns;
    auto step = std::upper_bound(starts.begin(), starts.end(), e.ts_ns);
    int32_t iteration = step == starts.begin() ? -1 : static_cast<int32_t>(step - starts.begin() - 1);
    out.push_back(
        {table.all()[names[order[k]]].name, static_cast<float>(static_cast<double>(end - e.ts_ns) / 1e3), iteration});
  }
  return out;
}

// The rank's role when the process groups say it: its position in a pipeline-parallel group
// (ranks at different stages run different layers and must not be compared). "" otherwise.
std::string RoleFromProcessGroups(const TraceMetadata& meta) {
  for (const ProcessGroup& pg : meta.process_groups) {
    std::string desc;
    for (char c : pg.description) desc.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    bool pipeline =
        desc.find("pipeline") != std::string::npos || desc.starts_with("pp") || desc.find("_pp") != std::string::npos;
    auto it = std::find(pg.ranks.begin(), pg.ranks.end(), meta.rank);
    if (pipeline && it != pg.ranks.end()) return fmt::format("pipeline stage {}", it - pg.ranks.begin());
  }
  return "";
}

// The kept functions' hottest user frames, from the window's stack samples.
void AttachHotFrames(const StackSamples& samples, const CriticalPath& path, const FunctionTable& table,
                     std::vector<FunctionPattern>* functions) {
  if (samples.empty()) return;
  std::unordered_map<std::string_view, std::vector<HotFrame>*> by_name;
  std::unordered_map<uint32_t, std::vector<HotFrame>> hot = AttributeStackSamples(samples, path, table);
  for (auto& [function, frames] : hot) by_name.emplace(table.all()[function].name, &frames);
  for (FunctionPattern& f : *functions) {
    auto it = by_name.find(f.name);
    if (it != by_name.end()) f.hot_frames = std::move(*it->second);
  }
}

// The path's spans in `category`, merged where they touch (stack_attribution.h TimeSpans).
TimeSpans SpansOf(const CriticalPath& path, const FunctionTable& table, Category category) {
  TimeSpans spans;
  for (Span span : path) {
    if (table.all()[span.function].category != category) continue;
    if (!spans.empty() && spans.back().second == span.start_ns) {
      spans.back().second = span.end_ns;
    } else {
      spans.emplace_back(span.start_ns, span.end_ns);
    }
  }
  return spans;
}

}  // namespace

StatusOr<Summary> Summarize(const Trace& trace, const SummarizeOptions& options) {
  std::vector<NameEntry> by_name;
  BigVector<EventRole> roles = ClassifyAll(trace, &by_name);
  bool has_device = std::any_of(roles.begin(), roles.end(), IsDeviceRole);
  WorkerWindow window = FindWorkerWindow(trace, roles);
  if (window.length_ns() <= 0) {
    return ErrorStatus("{}: no timed events to summarize", trace.meta.path);
  }
  if (!has_device) {
    DropRangesThatWaitForACollective(trace, window, &roles);
    FindUnrecordedCollective(trace, roles, &window);
  }
  FunctionTable table;
  uint32_t unattributed = table.Intern(Category::kHost, HostKind::kPython, std::string(kUnattributedPython));
  BigVector<uint32_t> functions = AssignFunctions(trace, roles, has_device, &by_name, &table);
  CountCalls(trace, roles, functions, window, has_device, &table);

  Summary summary;
  summary.window_start_ns = window.start_ns;
  summary.critical_path = PaintPath(trace, roles, functions, window, has_device, unattributed, options);
  NameProgramPoints(trace, roles, functions, window, unattributed, has_device, &summary.critical_path, &table);
  for (const Span& span : summary.critical_path) table[span.function].owned_ns += span.end_ns - span.start_ns;
  AddUtilization(summary.critical_path, has_device, options.samples, &table);

  WorkerPattern& pattern = summary.pattern;
  pattern.rank = trace.meta.rank;
  pattern.world_size = trace.meta.world_size;
  pattern.host = trace.meta.host;
  pattern.source = trace.meta.path;
  pattern.has_device = has_device;
  pattern.group = RoleFromProcessGroups(trace.meta);
  pattern.device_name = trace.meta.device_name;
  pattern.step_ids = window.step_ids;
  pattern.window_ns = window.length_ns();
  int iterations = std::max<int>(1, static_cast<int>(window.step_ids.size()));
  pattern.iteration_s = static_cast<double>(window.length_ns()) / 1e9 / iterations;
  pattern.dataloader_ops_per_iter = DataloaderOpsPerIteration(trace, roles, window, iterations);
  if (!window.warning.empty()) pattern.warnings.push_back(window.warning);
  if (std::string problems = DescribeReadProblems(trace); !problems.empty()) {
    pattern.warnings.push_back(problems);
  }
  if (trace.meta.rank < 0)
    pattern.warnings.push_back("rank unknown: no distributedInfo and no number in the file name");
  for (const FunctionStats& f : table.all()) {
    if (f.category == Category::kCompute) pattern.compute_calls_per_iter += static_cast<double>(f.calls);
  }
  pattern.compute_calls_per_iter /= iterations;
  pattern.collectives = CollectiveSequence(trace, roles, functions, window, has_device, table);
  pattern.iteration_category_beta = IterationCategoryBetas(summary.critical_path, window, table);
  pattern.functions =
      BuildFunctionPatterns(table.all(), window.length_ns(), iterations, options.max_functions, &pattern.category_beta);
  AttachHotFrames(options.stack_samples, summary.critical_path, table, &pattern.functions);
  pattern.cpu = options.stack_samples.cpu;
  pattern.loader_worker_frames = HottestLoaderWorkerFrames(options.stack_samples, window.start_ns, window.end_ns);
  pattern.other_thread_frames = HottestOtherThreadFrames(options.stack_samples, window.start_ns, window.end_ns);
  TrainingLines lines =
      TrainingThreadLines(options.stack_samples, window.start_ns, window.end_ns,
                          has_device ? TimeSpans{} : SpansOf(summary.critical_path, table, Category::kCommunication));
  pattern.code_lines = std::move(lines.lines);
  pattern.code_line_periods = lines.periods;
  for (const FunctionStats& f : table.all()) summary.function_names.push_back(f.name);
  return summary;
}

}  // namespace eroica
