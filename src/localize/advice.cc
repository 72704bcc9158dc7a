#include "localize/advice.h"

#include <fmt/core.h>

namespace eroica {

std::string Advice(const std::string& category, const std::string& scope, int rank) {
  bool local = scope == "local";
  if (category == "dataloader") {
    return local ? fmt::format("Check rank {}'s input pipeline: its storage and I/O, its collate_fn, "
                               "DataLoader num_workers/prefetch on its host.", rank)
                 : "Every rank waits for input: add DataLoader workers and prefetching, or move "
                   "decoding off the training process.";
  }
  if (category == "compute") {
    return local ? fmt::format("Rank {} runs the same work slower: check its device or CPU (clocks, "
                               "thermal or power throttling, a CPU quota, noisy neighbours).", rank)
                 : "Compute itself is slow everywhere: check kernels' efficiency and device settings.";
  }
  if (category == "memory") {
    return local ? fmt::format("Rank {} copies more or slower between host and device: check its PCIe "
                               "link and pinned memory.", rank)
                 : "Copies sit on the critical path: pin memory, use non_blocking copies, prefetch.";
  }
  if (category == "communication") {
    return local ? fmt::format("Rank {}'s link moves less data than its peers': check its NIC, cable "
                               "and switch port.", rank)
                 : "Exposed communication is high on every rank: overlap it with compute (bucket "
                   "sizes), check the network and collective configuration.";
  }
  if (category == "host") {
    return local ? fmt::format("Rank {} spends time in Python/host code its peers do not (GC, a hot "
                               "loop, logging): profile it with with_stack=True.", rank)
                 : "Every rank spends this time in Python on the critical path: move the work out of "
                   "the step, batch it, or compile it.";
  }
  if (category == "imbalance") {
    return fmt::format("Rank {} is given more work than its peers: balance the sharding, batch sizes "
                       "or sequence lengths.", rank);
  }
  if (category == "hang") {
    return fmt::format("Rank {} is stuck at the location shown while its peers wait in a collective: "
                       "look for a lock, a skipped collective or a rank-dependent branch.", rank);
  }
  return "";
}

}  // namespace eroica
