#include "localize/finding_kind.h"

#include <fmt/core.h>

#include <array>

#include "summary/function_name.h"

namespace eroica {
namespace {

// One case per category: -Werror=switch makes a new enumerator without its entry a build error.
constexpr FindingCategoryInfo Entry(FindingCategory category) {
  switch (category) {
    case FindingCategory::kCompute:
      return {"compute",
              "compute",
              "Rank {0} runs the same work slower: check its device or CPU (clocks, thermal or power throttling, a "
              "CPU quota, noisy neighbours; on CPU also subnormal floats in its tensors, which "
              "torch.set_flush_denormal(True) rules out).",
              "Compute itself is slow everywhere: check kernels' efficiency and device settings.",
              "Rank {0} runs the same operations as its peers but needs {1} more per iteration: usually a slower "
              "device (throttled clocks, thermal or power limits, a CPU quota, a noisy neighbour), not code; on CPU, "
              "subnormal floats in rank {0}'s own tensors (its data, its locally accumulated gradients) make the "
              "same adds and multiplies many times slower. First give the exact commands that confirm or rule this "
              "out on rank {0}'s host (clocks and throttle reasons, cgroup CPU quota, other processes on its cores; "
              "torch.set_flush_denormal(True) for subnormals). Only if the code makes rank {0} compute more (a "
              "rank-dependent branch near {2}), propose a patch that removes it.",
              "Compute ({3}) costs every rank {1} per iteration more than expected. Propose a patch that makes it "
              "cheaper (mixed precision, fused or compiled kernels, larger kernels instead of many small ones).",
              Category::kCompute};
    case FindingCategory::kMemory:
      return {"memory",
              "host-device copies",
              "Rank {0} copies more or slower between host and device: check its PCIe link and pinned memory.",
              "Copies sit on the critical path: pin memory, use non_blocking copies, prefetch.",
              "Rank {0} spends {1} more per iteration in host-device copies than its peers. Check whether the code "
              "copies more on rank {0} (near {2}) and propose a patch; otherwise give the commands that check its "
              "PCIe link and pinned-memory use.",
              "Host-device copies cost every rank {1} per iteration. Propose a patch that removes them from the "
              "critical path (pin_memory=True, non_blocking=True, keep tensors on the device, no .item() or .cpu() "
              "inside the step), starting from {2}.",
              Category::kMemory};
    case FindingCategory::kCommunication:
      return {"communication",
              "exposed communication",
              "Rank {0}'s link moves less data than its peers': check its NIC, cable and switch port.",
              "Exposed communication is high on every rank: overlap it with compute (bucket sizes), check the "
              "network and collective configuration.",
              "Rank {0}'s collectives take {1} more per iteration than its peers' while it does not arrive late: "
              "its link is slow. Give the exact commands that check rank {0}'s NIC, link speed, errors and switch "
              "port, and say which NCCL/gloo settings could route around it.",
              "Exposed communication costs every rank {1} per iteration. Propose a patch that overlaps it with "
              "compute or shrinks it (DDP bucket_cap_mb, gradient_as_bucket_view, no_sync() during gradient "
              "accumulation, fewer and larger collectives).",
              Category::kCommunication};
    case FindingCategory::kDataloader:
      return {"dataloader",
              "the data loader",
              "Check rank {0}'s input pipeline: its storage and I/O, its collate_fn, DataLoader "
              "num_workers/prefetch on its host.",
              "Every rank waits for input: add DataLoader workers and prefetching, or move decoding off the "
              "training process.",
              "Rank {0}'s data loader takes {1} more per iteration than its peers', and every step waits for it. "
              "Find what in the input pipeline can be slower on rank {0} only (Dataset.__getitem__, collate_fn, "
              "the sampler, storage or network reads, a lock or a remote call, a rank-dependent branch), starting "
              "from {2}, and propose a patch that removes that delay from the training step. If the work itself is "
              "needed, move it off the critical path (DataLoader num_workers/prefetch_factor) rather than hiding "
              "it.",
              "Every rank waits {1} per iteration for input. Propose a patch that takes data loading off the "
              "critical path: DataLoader num_workers > 0, pin_memory, prefetch_factor, persistent_workers, cheaper "
              "decoding or collate (start from {2}).",
              Category::kDataloader};
    case FindingCategory::kHost:
      return {"host",
              "host (Python) code",
              "Rank {0} spends time in Python/host code its peers do not (GC, a hot loop, logging): profile it "
              "with with_stack=True.",
              "Every rank spends this time in Python on the critical path: move the work out of the step, batch "
              "it, or compile it.",
              "Rank {0} spends {1} more per iteration in host (Python) code than its peers ({3}): garbage "
              "collection, a hot loop, logging, checkpointing or a rank-dependent branch. Find that code, starting "
              "from {2}, and propose a patch that removes it from the training step (for GC: gc.freeze() after "
              "setup, or gc.disable() with a periodic gc.collect() between steps).",
              "Every rank spends {1} per iteration in host (Python) code on the critical path {4}. Propose a patch "
              "that removes this work from the step (vectorize it, move it out of the loop, batch .item() calls, "
              "torch.compile), starting from {2}.",
              Category::kHost};
    case FindingCategory::kImbalance: {
      constexpr std::string_view advice =
          "Rank {0} is given more work than its peers: balance the sharding, batch sizes or sequence lengths.";
      constexpr std::string_view request =
          "Rank {0} is given more work than its peers ({1} per iteration more): more calls or bigger shapes, not "
          "a slower device. Find where the work is split between ranks (sampler or sharding, batch sizes, "
          "sequence lengths, model partitioning), starting from {2}, and propose a patch that balances it.";
      return {"imbalance", "extra work", advice, advice, request, request, std::nullopt};
    }
    case FindingCategory::kHang: {
      constexpr std::string_view advice =
          "Rank {0} is stuck at the location shown while its peers wait in a collective: look for a lock, a "
          "skipped collective or a rank-dependent branch.";
      constexpr std::string_view request =
          "Rank {0} never reaches {5}: it is blocked at {2}. Read that code and its callers, find why this rank "
          "blocks (a lock acquired again by the thread that already holds it, a blocking call or queue that is "
          "never fed, a rank-dependent branch that skips or reorders a collective), and propose a patch that "
          "removes the blocking so that every rank reaches the same collectives in the same order. Do not hide "
          "it with a timeout, a retry or a caught exception.";
      return {"hang", "a hang", advice, advice, request, request, std::nullopt};
    }
  }
  return {};
}

constexpr std::array<FindingCategoryInfo, kFindingCategoryCount> MakeTable() {
  std::array<FindingCategoryInfo, kFindingCategoryCount> table{};
  for (int c = 0; c < kFindingCategoryCount; ++c) table[c] = Entry(static_cast<FindingCategory>(c));
  return table;
}

constexpr std::array<FindingCategoryInfo, kFindingCategoryCount> kTable = MakeTable();
static_assert(!kTable.back().name.empty(), "kFindingCategoryCount counts every FindingCategory");

}  // namespace

const FindingCategoryInfo& InfoOf(FindingCategory category) { return kTable[static_cast<size_t>(category)]; }

std::string_view Name(FindingCategory category) { return InfoOf(category).name; }

std::string_view Name(FindingScope scope) {
  switch (scope) {
    case FindingScope::kLocal:
      return "local";
    case FindingScope::kGlobal:
      return "global";
  }
  return "";
}

std::optional<FindingCategory> FindingCategoryFromName(std::string_view name) {
  for (int c = 0; c < kFindingCategoryCount; ++c) {
    if (kTable[c].name == name) return static_cast<FindingCategory>(c);
  }
  return std::nullopt;
}

std::optional<FindingScope> FindingScopeFromName(std::string_view name) {
  for (FindingScope s : {FindingScope::kLocal, FindingScope::kGlobal}) {
    if (Name(s) == name) return s;
  }
  return std::nullopt;
}

FindingCategory FindingCategoryOf(Category resource) { return static_cast<FindingCategory>(resource); }

std::string AdviceFor(FindingCategory category, FindingScope scope, int rank) {
  const FindingCategoryInfo& info = InfoOf(category);
  std::string_view text = scope == FindingScope::kLocal ? info.local_advice : info.global_advice;
  return fmt::format(fmt::runtime(text), rank);
}

std::string RequestFor(FindingCategory category, FindingScope scope, const RequestArguments& a) {
  const FindingCategoryInfo& info = InfoOf(category);
  std::string_view text = scope == FindingScope::kLocal ? info.local_request : info.global_request;
  return fmt::format(fmt::runtime(text), a.rank, a.cost, a.start, a.function, InParentheses(a.function), a.waiting_at);
}

}  // namespace eroica
