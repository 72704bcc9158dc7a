// Half a group waited for by the other half. Peers are compared with the group's median, which
// sits between two equal halves: a replica of two tensor-parallel ranks given sequences twice as
// long, in a job of two replicas, is half the data-parallel group, its compute 0.86 of a step
// against its peers' 0.56 while they waited 0.40 of a step in the all-reduce against its 0.09
// (an unseen 4-rank TP x DP transformer), and no rank stood out of the median or its spread. The
// collectives still say who is late: one half waits, the other does not. Each rank of the half
// that is waited for is compared with the half that waits, as a straggler among those peers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "localize/expectations.h"
#include "localize/groups.h"

namespace eroica {

struct WaitingHalves {
  std::vector<uint32_t> waited_for;  // table indices (WorkerGroup::members)
  std::vector<uint32_t> waiting;
  std::string evidence;  // the two halves' collective and own-work shares
};

// The group's split into the half the others wait for and the half that waits, where it is one:
// an even group of 4 or more whose half with the least exposed communication waits less than every
// rank of the other half by the straggler floor (group_members.h StragglerFloor) and by more than
// either half's own spread of it (two clusters, not a spread), and whose own work exceeds every
// rank of the other half's by that floor over the window and in each of its iterations: in a
// synchronous job what one side waits is the other's extra work.
// nullopt otherwise (a group of 2 has PeerCenter's own rule; with fewer late ranks than half the
// median stays among the punctual ones).
std::optional<WaitingHalves> SplitIntoWaitingHalves(const WorkerGroup& group, const Expectations& e);

// The waiting half with member `waited_for` (a table index) added: its peers for the local rules.
WorkerGroup WithTheWaitingHalf(const WorkerGroup& group, const WaitingHalves& halves, uint32_t waited_for);

}  // namespace eroica
