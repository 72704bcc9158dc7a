// The per-category requests of the AI prompt (prompt.h).
#include <fmt/core.h>

#include "report/prompt.h"
#include "report/verdict.h"

namespace eroica {
namespace {

std::string LocalRequest(const Finding& f, int rank, const std::string& cost, const std::string& start) {
  if (f.category == "dataloader") {
    return fmt::format(
        "Rank {0}'s data loader takes {1} more per iteration than its peers', and every step waits for it. Find what "
        "in the input pipeline can be slower on rank {0} only (Dataset.__getitem__, collate_fn, the sampler, storage "
        "or network reads, a lock or a remote call, a rank-dependent branch), starting from {2}, and propose a patch "
        "that removes that delay from the training step. If the work itself is needed, move it off the critical path "
        "(DataLoader num_workers/prefetch_factor) rather than hiding it.",
        rank, cost, start);
  }
  if (f.category == "compute") {
    return fmt::format(
        "Rank {0} runs the same operations as its peers but needs {1} more per iteration: usually a slower device "
        "(throttled clocks, thermal or power limits, a CPU quota, a noisy neighbour), not code. First give the exact "
        "commands that confirm or rule this out on rank {0}'s host (clocks and throttle reasons, cgroup CPU quota, "
        "other processes on its cores). Only if the code makes rank {0} compute more (a rank-dependent branch near "
        "{2}), propose a patch that removes it.",
        rank, cost, start);
  }
  if (f.category == "memory") {
    return fmt::format(
        "Rank {0} spends {1} more per iteration in host-device copies than its peers. Check whether the code copies "
        "more on rank {0} (near {2}) and propose a patch; otherwise give the commands that check its PCIe link and "
        "pinned-memory use.",
        rank, cost, start);
  }
  if (f.category == "communication") {
    return fmt::format(
        "Rank {0}'s collectives take {1} more per iteration than its peers' while it does not arrive late: its link "
        "is slow. Give the exact commands that check rank {0}'s NIC, link speed, errors and switch port, and say "
        "which NCCL/gloo settings could route around it.",
        rank, cost);
  }
  if (f.category == "imbalance") {
    return fmt::format(
        "Rank {0} is given more work than its peers ({1} per iteration more): more calls or bigger shapes, not a "
        "slower device. Find where the work is split between ranks (sampler or sharding, batch sizes, sequence "
        "lengths, model partitioning), starting from {2}, and propose a patch that balances it.",
        rank, cost, start);
  }
  return fmt::format(
      "Rank {0} spends {1} more per iteration in host (Python) code than its peers ({2}): garbage collection, a hot "
      "loop, logging, checkpointing or a rank-dependent branch. Find that code, starting from {3}, and propose a patch "
      "that removes it from the training step (for GC: gc.freeze() after setup, or gc.disable() with a periodic "
      "gc.collect() between steps).",
      rank, cost, f.function, start);
}

std::string GlobalRequest(const Finding& f, const std::string& cost, const std::string& start) {
  if (f.category == "dataloader") {
    return fmt::format("Every rank waits {} per iteration for input. Propose a patch that takes data loading off the "
                       "critical path: DataLoader num_workers > 0, pin_memory, prefetch_factor, persistent_workers, "
                       "cheaper decoding or collate (start from {}).", cost, start);
  }
  if (f.category == "communication") {
    return fmt::format("Exposed communication costs every rank {} per iteration. Propose a patch that overlaps it with "
                       "compute or shrinks it (DDP bucket_cap_mb, gradient_as_bucket_view, no_sync() during gradient "
                       "accumulation, fewer and larger collectives).", cost);
  }
  if (f.category == "memory") {
    return fmt::format("Host-device copies cost every rank {} per iteration. Propose a patch that removes them from "
                       "the critical path (pin_memory=True, non_blocking=True, keep tensors on the device, no .item() "
                       "or .cpu() inside the step), starting from {}.", cost, start);
  }
  if (f.category == "compute") {
    return fmt::format("Compute ({}) costs every rank {} per iteration more than expected. Propose a patch that makes "
                       "it cheaper (mixed precision, fused or compiled kernels, larger kernels instead of many small "
                       "ones).", f.function, cost);
  }
  return fmt::format("Every rank spends {} per iteration in host (Python) code on the critical path {}. Propose a "
                     "patch that removes this work from the step (vectorize it, move it out of the loop, batch .item() "
                     "calls, torch.compile), starting from {}.", cost, InParentheses(f.function), start);
}

}  // namespace

std::string FindingRequest(const Finding& f, const Diagnosis& d, const std::string& where, const std::string& waiting_in) {
  int rank = f.workers.empty() ? -1 : f.workers.front();
  std::string start = where.empty() ? fmt::format("`{}`", f.function) : fmt::format("`{}`", where);
  if (f.category == "hang") {
    std::string others = waiting_in.empty() ? "the point where the other ranks wait for it"
                                            : fmt::format("the collective the other ranks wait in (`{}`)", waiting_in);
    return fmt::format(
        "Rank {0} never reaches {1}: it is blocked at {2}. Read that code and its "
        "callers, find why this rank blocks (a lock acquired again by the thread that already holds it, a blocking "
        "call or queue that is never fed, a rank-dependent branch that skips or reorders a collective), and propose a "
        "patch that removes the blocking so that every rank reaches the same collectives in the same order. Do not "
        "hide it with a timeout, a retry or a caught exception.",
        rank, others, start);
  }
  std::string cost = FormatDuration(f.impact_s_per_iter);
  if (f.scope == "local" && f.evidence.find("began before the profiled window") != std::string::npos) {
    return fmt::format(
        "Rank {0} arrives last at the collectives and the other ranks wait {1} per iteration for it, but inside the "
        "profiled window it works only slightly more than they do: the delay starts between iterations or before the "
        "window. Look for work that only rank {0} does around the step (logging, metrics, checkpointing, evaluation, "
        "data preparation, a rank-dependent branch), starting from {2}, and propose a patch that removes it from the "
        "step or spreads it across ranks. If nothing in the code singles out rank {0}, say which host-level checks "
        "to run on its machine.",
        rank, FormatDuration(f.impact_s_per_iter), start);
  }
  bool everyone = d.workers > 1 && static_cast<int>(f.workers.size()) >= d.workers;
  if (f.scope == "global" || everyone) return GlobalRequest(f, cost, start);
  return LocalRequest(f, rank, cost, start);
}

}  // namespace eroica
