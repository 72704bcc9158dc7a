// Imbalance or slow device? A rank given more work runs more calls, bigger shapes or more
// bytes, or loads more items, or (with none of these recorded) runs its batch's ops slower while
// the work sized by the model keeps its peers' pace; a slow rank runs the same work, every op
// longer.
#pragma once

#include <string>

#include "localize/groups.h"

namespace eroica {

struct WorkComparison {
  bool more_work = false;
  std::string evidence;  // which signal, with the numbers ("data-loader ops per iteration 192 vs 64")
};

// Compares group member `suspect` (an index into group.members) with its peers.
WorkComparison CompareWork(const WorkerGroup& group, size_t suspect, double ratio);

}  // namespace eroica
