// Imbalance or slow device? A rank given more work runs more calls, bigger shapes or more
// bytes, or loads more items, or (with none of these recorded) runs its batch's ops slower while
// the work sized by the model keeps its peers' pace; a slow rank runs the same work, every op
// longer, and with the node agent's samples its ops hold the processor for less of their time.
#pragma once

#include <string>

#include "base/robust_stats.h"
#include "localize/call_sizes.h"
#include "localize/expectations.h"
#include "localize/groups.h"

namespace eroica {

// What showed the extra work. Counts, bytes and shapes are exact; the other two are read from
// op timings, which a rank's own loader workers, Python or CPU quota also move.
enum class WorkSource {
  kExact,
  kCallSizes,    // its batch-sized ops' median calls (call_sizes.h)
  kMeanTimings,  // its batch-sized ops' time against its model-sized ops' (means, with preemptions)
};

struct WorkComparison {
  bool more_work = false;
  std::string evidence;                    // which signal, with the numbers ("data-loader ops per iteration 192 vs 64")
  std::string slower;                      // when not more work: what shows the processor itself slower, if anything
  WorkSource source = WorkSource::kExact;  // when more work
};

// Compares group member `suspect` (an index into group.members) with its peers; more work
// counts from e.imbalance_ratio on. `sizes`: its call sizes (call_sizes.h), null when unknown.
WorkComparison CompareWork(const WorkerGroup& group, size_t suspect, const Expectations& e, const CallSizes* sizes);

// How many times its peers' calls `suspect` makes of the ops its peers spend their time in: the
// median of its compute ops' call ratios, each op weighed by its peers' critical-path share. More
// data through a loop over it (an RNN's time steps over longer sequences) calls those ops more
// often; a loop of the rank's own code calls ops its peers hardly spend time in (0 without any).
double CallsRatioOfPeersWork(const WorkerGroup& group, size_t suspect);

// Each member's compute calls a step against the ranks' counts. Counts are exact: healthy ranks'
// windows differ by a few calls at their edges (a 6-rank MLP's 5,525-5,536), code of a rank's own
// adds its ops' calls (an evaluation's forward, a loop logging each parameter's norm).
class ComputeCalls {
 public:
  explicit ComputeCalls(const WorkerGroup& group);
  double of(size_t member) const { return calls_[member]; }
  double peers(size_t member) const { return peers_[member]; }  // the median of the others'
  // More calls than its peers' by two or more, and out of the ranks' count noise: a robust z of
  // `e.outlier_z` or more, at a scale of one call at least. Two ranks have no spread to measure
  // (their robust z is never above 0.7): there, e.imbalance_ratio times the other's calls, as
  // for more work by counts (CompareWork).
  bool StandsOut(size_t member, const Expectations& e) const;

 private:
  std::vector<double> calls_, peers_;
  RobustCenter center_;
};

// Evidence that `suspect`'s extra ops are calls of its own code, or "": it calls the ratio's more
// compute ops per iteration than its peers, but not of the ops its peers spend their time in
// (CallsRatioOfPeersWork), while its loader hands it their count of items (more samples or
// micro-batches come through the loader). Where DataLoader worker processes load its batches,
// the training process's loader ops count no items (per-sample ops of a larger batch are extra
// calls too), and `more_work` (CompareWork's verdict, its calls' sizes) decides instead. Empty
// where the peers' loaders count no items.
std::string ExtraCallsOfItsOwnCode(const WorkerGroup& group, size_t suspect, double ratio, bool more_work);

}  // namespace eroica
