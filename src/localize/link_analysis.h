// A degraded link (a throttled NIC, a bad cable, a flapping port) slows every rank's
// collectives alike: β cannot tell which rank's link it is. The hardware samples can: the
// degraded link never reaches the throughput its peers reach in bursts, and it is busy at its
// cap for longer (low σ). This needs μ and σ from the node agent.
#pragma once

#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

std::vector<Finding> FindDegradedLinks(const WorkerGroup& group, const Expectations& e);

}  // namespace eroica
