#include "localize/local_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "base/robust_stats.h"
#include "localize/call_sizes.h"
#include "localize/collective_waits.h"
#include "localize/cpu_contention.h"
#include "localize/function_leads.h"
#include "localize/group_members.h"
#include "localize/host_gaps.h"
#include "localize/iteration_evidence.h"
#include "localize/own_code_line.h"
#include "localize/work_signals.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

struct AlsoUp {
  Category category;
  double share;
  double peer_share;
};

// A worker whose own work stands out, in shares of the group's median iteration.
struct Excess {
  size_t member = 0;
  Category category = Category::kHost;
  double excess = 0;           // the whole own-work excess the others wait for
  double category_excess = 0;  // the excess in `category` alone
  double peer_share = 0;       // the peers' median share in `category`
  double z = 0;
  std::vector<AlsoUp> also;      // other categories up on this worker
  std::string uniform_slowdown;  // evidence when compute and host are up alike
  // The others waited for it in every iteration (ReadLateAlike, one rank or more).
  bool waited_every_step = false;
  // Host time far above every peer at one program point (function_leads.h): the rank's code,
  // which costs the job whether the others then wait for it or, on shared cores, slow down in
  // their own ops because it holds the processor.
  bool at_one_point = false;
  // Given more work by exact counts on cores its peers share (cpu_contention.h SharedBusyCores):
  // its extra work slows them in their own ops, so they need not wait for it.
  std::string shared_cores;
  // Its training thread ran on a CPU longer than its peers' by the floor: by how much, and whose
  // work that was (evidence).
  std::string longer_on_cpu;
  // Compute or host time, most of it under a line of the job's code that its peers' samples never
  // reached (own_code_line.h): its code's, whether the others then wait for it or, on shared
  // cores, slow down in their own ops.
  std::optional<OwnCodeLine> own_code;
};

// Each worker's time in `category` (nullopt: all its own work) per iteration, as a share of the
// group's median iteration. Ranks' windows differ when a trace holds one iteration (each ends
// when that rank's last kernel does), so own work is compared in seconds, not in β.
std::vector<double> OwnShares(const WorkerGroup& group, std::optional<Category> category) {
  double median_s = std::max(MedianIterationS(group), 1e-12);
  std::vector<double> shares;
  shares.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& w = group.row(k);
    double beta = category ? w.beta(*category) : OwnWorkBeta(w);
    shares.push_back(beta * w.iteration_s / median_s);
  }
  return shares;
}

// What member k's share is measured against for its impact: the group's median, but with two
// workers the other one's share. The median of two is their mean, half-way to the peer, and
// what the peer waits for is the whole gap. Whether it stands out at all is still judged by its
// distance from the group's center (the floors were set on that).
double PeerCenter(const std::vector<double>& shares, const RobustCenter& center, size_t k) {
  return shares.size() == 2 ? shares[1 - k] : center.median;
}

// Every own-work category's shares (OwnShares) and their median and MAD, for each member.
struct CategoryShares {
  std::vector<std::vector<double>> shares;  // [category of kOwnWork][member]
  std::vector<RobustCenter> centers;

  explicit CategoryShares(const WorkerGroup& group) {
    for (Category c : kOwnWork) {
      shares.push_back(OwnShares(group, c));
      centers.push_back(MedianAndMad(shares.back()));
    }
  }
};

// Member k's excess in the c-th own-work category over its peers: its category, the excess,
// the peers' share and its z.
Excess ExcessAt(const CategoryShares& s, size_t k, const Expectations& e, size_t c) {
  Excess x;
  x.member = k;
  x.category = kOwnWork[c];
  x.peer_share = PeerCenter(s.shares[c], s.centers[c], k);
  x.excess = x.category_excess = s.shares[c][k] - x.peer_share;
  x.z = RobustZ(s.shares[c][k], s.centers[c], e.min_scale_beta);
  return x;
}

// Member k's largest excess over the group's median share, among the own-work categories that
// `considered` admits (all when null).
Excess LargestCategoryExcess(const CategoryShares& s, size_t k, const Expectations& e,
                             const std::vector<std::vector<bool>>* considered = nullptr) {
  Excess best;
  bool found = false;
  for (size_t c = 0; c < kOwnCount; ++c) {
    if (considered && !(*considered)[c][k]) continue;
    Excess x = ExcessAt(s, k, e, c);
    if (!found || x.category_excess > best.category_excess) {
      best = std::move(x);
      found = true;
    }
  }
  return best;
}

Excess CategoryExcess(const CategoryShares& s, size_t k, const Expectations& e, Category category) {
  size_t c = static_cast<size_t>(std::find(std::begin(kOwnWork), std::end(kOwnWork), category) - std::begin(kOwnWork));
  return ExcessAt(s, k, e, c);
}

// How much more of each iteration the others spend in collectives than member k: in a
// synchronous job they wait there for the rank that is late.
double OthersWaitFor(const WorkerGroup& group, size_t suspect) {
  std::vector<double> others;
  others.reserve(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    if (k != suspect) others.push_back(group.row(k).beta(Category::kCommunication));
  }
  return MedianInPlace(others) - group.row(suspect).beta(Category::kCommunication);
}

// Ranks late alike that share a collective (one tensor-parallel replica) also wait for each
// other in it: in each step the later of them holds up the other, whose share in collectives then
// rises toward the others' although the set as a whole was late. Each member still finishes its
// own work after the ranks outside the set (it waits for a member only what that member is later
// still), so its share in collectives stays under theirs, if by less than the floor. So where no
// two ranks are late alike one by one, the set is tested as one: of the ranks the others waited
// for over the window (their median share in collectives above the rank's own by the floor on
// average), those under the median of the ranks outside in every iteration, two or more and
// fewer than half, whose mean share stays under that median by the floor in every iteration. The
// mean keeps the members' waits for each other (it understates the set's lateness). An unseen
// 6-rank TP x DP job whose replica 1 (ranks 2, 3) had sequences 1.8x as long: rank 3 in
// collectives 0.07-0.15 of each step, rank 2 0.09-0.36 (0.29 and 0.36 in the two steps where it
// waited 0.26 and 0.31 of the step for rank 3 in their all-reduces), ranks 0, 1, 4, 5 at a median
// of 0.29-0.39; the set's mean 0.14-0.22 under them in each of 5 steps. A rank late in some steps
// only is no member where one rank is late in all (an unseen 5-rank LSTM job: rank 1 under a CPU
// quota, rank 4 over the others' median in 2 of 5 steps). `comm`: each iteration's shares in
// collectives, by member.
std::vector<bool> SetLateAlike(const std::vector<std::vector<double>>& comm, double floor) {
  const size_t n = comm.empty() ? 0 : comm.front().size();
  std::vector<bool> in_set(n, false), none(n, false);
  std::vector<double> mean_gap(n, 0);
  for (const std::vector<double>& iteration : comm) {
    std::vector<double> others = MedianOfOthers(iteration);
    for (size_t k = 0; k < n; ++k) mean_gap[k] += (others[k] - iteration[k]) / static_cast<double>(comm.size());
  }
  for (size_t k = 0; k < n; ++k) in_set[k] = mean_gap[k] >= floor;
  // The median of the ranks outside the set in each iteration.
  auto outside_median = [&](const std::vector<double>& iteration) {
    std::vector<double> outside;
    for (size_t k = 0; k < n; ++k) {
      if (!in_set[k]) outside.push_back(iteration[k]);
    }
    return outside.empty() ? 0.0 : MedianInPlace(outside);
  };
  std::vector<bool> always_under = in_set;
  for (const std::vector<double>& iteration : comm) {
    double outside = outside_median(iteration);
    for (size_t k = 0; k < n; ++k) always_under[k] = always_under[k] && iteration[k] < outside;
  }
  in_set = always_under;
  const size_t count = static_cast<size_t>(std::count(in_set.begin(), in_set.end(), true));
  if (count < 2 || 2 * count >= n) return none;
  for (const std::vector<double>& iteration : comm) {
    double set_mean = 0;
    for (size_t k = 0; k < n; ++k) set_mean += in_set[k] ? iteration[k] / static_cast<double>(count) : 0;
    if (outside_median(iteration) - set_mean < floor) return none;
  }
  return in_set;
}

// Which members the others waited for in every iteration of the window (4 or more), where several
// are late alike: the median of the others' shares of each iteration in collectives above the
// member's own by the straggler floor every time, for two members or more and fewer than half the
// group; else, where one rank or none is, in groups under `small_group`, a set of them as a whole
// (SetLateAlike). Several ranks late alike are each last at their own collectives, none at nearly
// every call (FindLastArriver) and none above every peer in every iteration, but the others wait
// for each of them in every step: the slowness did not move between ranks. An unseen 6-rank TP x
// DP job whose replica 2 (ranks 4, 5) had sequences twice as long: ranks 4, 5 in collectives
// 0.06-0.18 of each step, the others 0.31-0.41, in each of 5. One rank alone is held to
// FindLastArriver's across-the-window test for being an outlier; half the group or more is a role
// or a global matter (waited_half.h compares a late half). `Ranks(fewest)`: how many such ranks it takes
// (2 for the outlier test; 1 where a rank already stands out and its CPU time is read:
// MoreWorkOnTheSameProcessors).
struct LateAlike {
  std::vector<bool> each;  // late by the floor in every iteration, member by member
  size_t count = 0;        // of `each`
  std::vector<bool> set;   // SetLateAlike's, in groups under `small_group`; none where not asked
  // The members late alike, where `fewest` or more of them are (see above).
  std::vector<bool> Ranks(size_t fewest) const {
    const size_t n = each.size();
    if (count >= 2 && 2 * count < n) return each;
    if (std::find(set.begin(), set.end(), true) != set.end()) return set;
    if (count < fewest || 2 * count >= n) return std::vector<bool>(n, false);
    return each;
  }
};

// One reading for every `fewest` (OutlyingExcesses asks for two).
LateAlike ReadLateAlike(const WorkerGroup& group, const Expectations& e) {
  const size_t n = group.size();
  LateAlike late;
  late.each.assign(n, false);
  size_t iterations = SIZE_MAX;
  for (size_t k = 0; k < n; ++k) iterations = std::min<size_t>(iterations, group.row(k).iterations_count);
  if (n < 3 || iterations == SIZE_MAX || iterations < 4) return late;
  const double floor = StragglerFloor(group, e);
  std::vector<std::vector<double>> comm(iterations, std::vector<double>(n));
  std::vector<double> least_gap(n, 1e300);
  for (size_t i = 0; i < iterations; ++i) {
    for (size_t k = 0; k < n; ++k) comm[i][k] = IterationShare(group, k, i, Category::kCommunication);
    std::vector<double> others = MedianOfOthers(comm[i]);
    for (size_t k = 0; k < n; ++k) least_gap[k] = std::min(least_gap[k], others[k] - comm[i][k]);
  }
  for (size_t k = 0; k < n; ++k) {
    late.each[k] = least_gap[k] >= floor;
    late.count += late.each[k] ? 1 : 0;
  }
  if (late.count >= 2 && 2 * late.count < n) return late;
  // Only in small groups: in a large one the ranks under the others' median in every iteration
  // by chance grow with it, and so does a set of them whose mean is under it by the floor.
  if (static_cast<double>(n) < e.small_group) late.set = SetLateAlike(comm, floor);
  return late;
}

// Whether member `index`'s excess (in shares of an iteration) makes it an outlier. A fault
// persists, noise moves around: a worker above all its peers in every profiled iteration is an
// outlier at any group size, by a small floor when there are enough iterations to make chance
// unlikely (4+), by a larger one with 2-3. So is one whose excess summed over the window stands
// k noise-spreads above the group while the others wait for it in collectives: a loader that
// stalls every second iteration misses persistence, not the sum. The sum is held to the noise
// of all own work, where the scheduler moves it; to its category's own noise only when the
// worker is also the one the others wait for at (nearly) every collective (`last`), or when its
// excess stays in the category, above the iteration's median by the floor in every iteration of
// the window (`steady`). The scheduler's noise moves between categories and iterations: it
// stretches one rank's loader in one step and its Python in the next. A slow disk, a checkpoint
// or a starved loader is there every time. A 6-rank run on 2 cores whose rank 1 read each
// sample from a slow disk had its loader 0.17-0.39 above the iteration's median in each of 5
// iterations (7.6 loader spreads over the window), while its own work as a whole was no higher
// than a peer's: waiting on the disk, it left its CPU to the others. Large groups also accept a
// robust z-score beyond k (the paper's k = 5). Without per-iteration data only a large excess
// counts. With two workers, being the one the other waits for does (see below).
// `late_alike`: one of several ranks the others waited for in every iteration
// (ReadLateAlike).
bool IsOutlier(const WorkerGroup& group, const IterationLeaders& leaders, const WindowExcess& window, size_t index,
               double excess, double z, const std::optional<LastArriver>& last, bool late_alike,
               const Expectations& e) {
  if (excess < e.min_excess_beta) return false;
  if (static_cast<double>(group.size()) >= e.small_group && z >= e.outlier_z) return true;
  if (leaders.iterations() < 2) return excess >= e.fallback_excess_beta;
  double floor = leaders.iterations() >= 4 ? e.small_group_min_excess_beta : e.fallback_excess_beta;
  if (excess < floor) return false;
  if (leaders.Persistent(index)) return true;
  bool arrives_last = last && last->member == index;
  // The others waited for it across the window (collective_waits.h): the scheduler's noise moves
  // between ranks, this did not, so its excess need not also stand out of its peers' spread. On
  // 2 cores that spread is the job's own turns for a CPU: a 4-rank graph network whose rank 3 had
  // graphs 1.6x as large held its compute 0.14 of a step above its peers' over the window, while
  // their own work swung 0.49-0.96 of a step from iteration to iteration (2.4 spreads); the
  // others waited for it in 4 of 5 iterations, 0.94 of all their waiting, 0.23 of a step.
  // So is a rank the others waited for in every iteration where several are late alike (each of
  // them last at its own collectives, none at nearly every call, none above every peer in every
  // iteration): the slowness stayed with them.
  if (((arrives_last && last->across_the_window) || late_alike) && window.iterations() >= 4 &&
      window.MeanExcess(index) >= floor && OthersWaitFor(group, index) >= e.min_excess_beta) {
    return true;
  }
  bool steady = window.SmallestExcess(index) >= floor;
  // With one peer there is no spread of peers to hold a sum to: that the peer waits for this
  // worker at (nearly) every collective, or for it alone, is the evidence.
  if (group.size() == 2) return arrives_last && OthersWaitFor(group, index) >= e.min_excess_beta;
  double window_z = arrives_last || steady ? window.CategoryZ(index) : window.Z(index);
  return window.iterations() >= 4 && window.MeanExcess(index) >= floor && window_z >= e.outlier_z &&
         OthersWaitFor(group, index) >= e.min_excess_beta;
}

// The scheduler's noise runs the code every rank runs, longer or shorter; it does not make one
// rank run code its peers never do. So own work above its peers by the floor, while the others
// wait for it, most of it under a line of the job's code that its peers' stack samples never
// reached (own_code_line.h), is that code's at any spread: however rarely it runs. An unseen
// 6-rank conv job whose rank 0 ran 300 ms of evaluation every 8th step had it in one step of
// its 5-step window (that step 0.47 s, the others 0.14-0.20): its own work summed over the window
// stood 3.0 spreads above its peers', the others waiting 0.28 of a step for it, 26 % of its
// window under the evaluation's line.
// `others_wait`: what the others spend in collectives beyond member k (OthersWaitFor), for every
// member at once: asked of every member above the floor, one at a time it is O(n²).
bool RunsCodeOfItsOwn(const WorkerGroup& group, size_t iterations, size_t k, double excess, double others_wait,
                      const Expectations& e) {
  double floor = iterations >= 4 ? e.small_group_min_excess_beta : e.fallback_excess_beta;
  return iterations >= 2 && excess >= floor && others_wait >= e.min_excess_beta &&
         LineOnlyItRuns(group, k, excess, e).has_value();
}

// Code is at one program point in every step; the scheduler's noise moves between points and
// steps. So host time above the iteration's median by the floor in every iteration of the window
// (WindowExcess::SmallestExcess), whose whole excess over the window one recurring Python point or
// GC accounts for (the worker leads every peer there by at least that much, function_leads.h),
// while the others wait for it, is the worker's code at any lead and spread. A 4-rank
// transformer whose rank 3 saved a checkpoint each step without fsync: its host time
// 0.11-0.26 above the iteration's median in each of 5 steps, 0.18 on average, 0.197 of the step
// at the point before the save, its peers waiting 0.17 of a step for it; a peer's one 0.45 spike
// put it at 4.9 host spreads (below the 5) and its lead just under the 0.2 box.
bool SteadyAtOnePoint(const WorkerGroup& group, const WindowExcess& window, size_t k, double host_lead,
                      const Expectations& e) {
  double floor = e.small_group_min_excess_beta;
  double excess = window.MeanExcess(k);
  return window.iterations() >= 4 && window.SmallestExcess(k) >= floor && excess >= floor && host_lead >= excess &&
         OthersWaitFor(group, k) >= e.min_excess_beta;
}

// A loader is slow by itself where its workers sleep in their own work (a read, a decode library,
// a lock); the scheduler queues a worker, it does not put it to sleep. So a loader wait above the
// median by the floor, on a rank whose workers slept making batches longer than its peers' by the
// noise floor, while the others wait for it, is that rank's loader at any spread. validation17's
// 4-rank transformer reading each sample from disk with O_DIRECT (seed 101, x1.19): rank 0's
// workers slept 0.11 s per second making batches, its peers' 0-0.002; it waited 0.19 of its step
// against a median 0.12, the others waiting for it, but a peer's noisy 0.15 kept its spread wide.
bool LoaderAsleepInItsWork(const WorkerGroup& group, const WindowExcess& window, size_t k, double excess,
                           const std::optional<double>& loader_slept, const Expectations& e) {
  return loader_slept && *loader_slept >= e.min_excess_beta && window.iterations() >= 4 &&
         excess >= e.small_group_min_excess_beta && OthersWaitFor(group, k) >= e.min_excess_beta;
}

// The same for a loader without worker processes, which the training thread runs itself: the
// scheduler queues a thread, it does not put it to sleep, so a thread that slept outside the
// collectives longer than its peers' by the noise floor (cpu_contention.h SleptBeyondPeers), on a
// rank whose loader time stands out, slept reading its input (slow storage, a sleep in collate).
// With worker processes the thread sleeps waiting for their batches however they were slowed
// (LoaderAsleepInItsWork reads the workers instead). A fresh 4-rank MLP reading 512 KiB per sample
// with O_DIRECT on rank 0 (seed 1201): its loader 0.26 of its window against 0.05-0.07, its thread
// asleep outside collectives 0.10 of the window longer than its peers', the others waiting 0.28 of
// a step for it; one fast read in one of the 5 steps broke the every-step test, and its own work's
// spread the window's. Not for host time: healthy ranks' threads slept 0.04-0.10 of the window
// longer than their peers' outside the collectives the trace shows, with host time 0.09-0.11
// above the median (probe23's s500, validation21's s102), and were named.
// Read without DataLoader worker processes: none ran beside it (no CPU of theirs, no reading of
// their work). A rank whose workers went unread is not taken for one without.
bool WithoutLoaderWorkers(const WorkerRow& w) { return w.cpu && !LoaderWorkersRead(*w.cpu); }

bool ThreadAsleepInItsWork(const WorkerGroup& group, const WindowExcess& window, size_t k, double excess,
                           const std::optional<double>& slept, const Expectations& e) {
  return slept && *slept >= e.min_excess_beta && window.iterations() >= 4 && excess >= e.small_group_min_excess_beta &&
         OthersWaitFor(group, k) >= e.min_excess_beta;
}

// The same work done slower everywhere is a slow worker, not slow code: a throttled or contended
// CPU stretches its compute ops and the Python between them, while a hot loop or a GC storm adds
// host time and leaves the ops as fast as the peers'. So when host time leads but the worker's
// ops are clearly slower, the host time that factor explains (the peers' host time stretched
// alike) is the slow worker's too. What is left over is host's own only when it is larger than
// the compute excess and sits at one program point far above every peer: a CFS quota freezes
// the rank for most of a period wherever it wakes next, which spreads over several points.
// Not where the worker runs on the very processors its peers use (cpu_contention.h
// SharesPeersProcessors): there it cannot be slower by itself, and its host time is its code's.
// cnn17's 4-rank CNN whose rank 2 saved a checkpoint each step (seed 415): host 0.39 of its step
// against 0.09, spread over the three points around the save, its ops 2.1x its peers' as the
// save's writes held the host's memory; it had been named a slower device.
void PreferUniformSlowdown(const WorkerGroup& group, const std::vector<std::vector<double>>& shares,
                           const std::vector<RobustCenter>& centers, const std::vector<std::vector<bool>>& outlier,
                           size_t k, double host_lead, const Expectations& e, Excess* best) {
  constexpr size_t kCompute = 0, kHost = 3;
  static_assert(kOwnWork[kCompute] == Category::kCompute && kOwnWork[kHost] == Category::kHost);
  if (best->category != Category::kHost || SharesPeersProcessors(group, k, e)) return;
  double compute_peers = PeerCenter(shares[kCompute], centers[kCompute], k);
  double host_peers = PeerCenter(shares[kHost], centers[kHost], k);
  if (compute_peers <= 0 || host_peers <= 0) return;
  double compute_ratio = shares[kCompute][k] / compute_peers;
  double host_ratio = shares[kHost][k] / host_peers;
  double compute_excess = shares[kCompute][k] - compute_peers;
  bool compute_up = outlier[kCompute][k] || compute_excess >= e.small_group_min_excess_beta;
  double host_unexplained = (shares[kHost][k] - host_peers) - host_peers * (compute_ratio - 1);
  bool hosts_own = host_unexplained > compute_excess && host_lead >= e.point_lead_beta;
  if (!compute_up || compute_ratio < e.slow_worker_ratio || hosts_own) return;
  best->category = Category::kCompute;
  best->excess = best->category_excess = compute_excess;
  best->peer_share = compute_peers;
  best->z = RobustZ(shares[kCompute][k], centers[kCompute], e.min_scale_beta);
  best->uniform_slowdown = fmt::format(
      "; its compute ops take {:.1f}x its peers' time and its host time "
      "{:.1f}x: the worker itself is slower, not its code",
      compute_ratio, host_ratio);
}

// The others wait for all of a straggler's own-work excess, so its category is where most of that
// excess lies. A category that stands out by itself can hold the smaller part: a rank given
// sequences three times as long also collates longer (a clean-clone CI run was named by its
// loader, +9.1 ms, while its compute, 0.68 of a step against its peers' 0.40, held most of its
// +55.1 ms). Where one category holds more than half of its own-work excess, and more than the
// flagged one, that category names it.
void PreferWhereMostOfItsExcessIs(const CategoryShares& s, size_t k, double own_excess, const Expectations& e,
                                  Excess* best) {
  if (own_excess <= 0) return;
  Excess most = LargestCategoryExcess(s, k, e);
  if (most.category != best->category && most.category_excess > best->category_excess &&
      most.category_excess > own_excess / 2) {
    *best = std::move(most);
  }
}

// Every worker whose own work stands out from the group, one Excess each. A worker stands out
// in a category, or in its own work as a whole (a throttled CPU slows compute and Python alike,
// none enough alone). The finding's category is its largest outlying category (else its
// largest excess), or the one holding most of its excess (PreferWhereMostOfItsExcessIs); the
// impact is the whole own-work excess the others wait for.
std::vector<Excess> OutlyingExcesses(const WorkerGroup& group, const Expectations& e,
                                     const std::optional<LastArriver>& last) {
  size_t n = group.size();
  CategoryShares by_category(group);
  const std::vector<std::vector<double>>& shares = by_category.shares;
  const std::vector<RobustCenter>& centers = by_category.centers;
  std::vector<std::vector<bool>> outlier(kOwnCount, std::vector<bool>(n, false));
  std::vector<double> host_leads = HostFunctionLeads(group);
  std::vector<std::optional<double>> loader_slept = LoaderSleptBeyondPeers(group);
  std::vector<std::optional<double>> thread_slept = SleptBeyondPeers(group);
  WindowExcess own_window(group, std::nullopt, e);
  const LateAlike late = ReadLateAlike(group, e);
  const std::vector<bool> late_alike = late.Ranks(2);
  const std::vector<bool> waited_every_step = late.Ranks(1);
  for (size_t c = 0; c < kOwnCount; ++c) {
    size_t flagged = 0;
    IterationLeaders leaders(group, kOwnWork[c]);
    WindowExcess window(group, kOwnWork[c], e, &own_window);
    for (size_t k = 0; k < n; ++k) {
      double excess = shares[c][k] - centers[c].median;
      double z = RobustZ(shares[c][k], centers[c], e.min_scale_beta);
      outlier[c][k] =
          shares[c][k] >= e.min_beta && IsOutlier(group, leaders, window, k, excess, z, last, late_alike[k], e);
      // Host time that sits at one program point far above every peer is the worker's code,
      // even when a noisy iteration elsewhere breaks the persistence test.
      if (kOwnWork[c] == Category::kHost && host_leads[k] >= e.point_lead_beta && excess >= e.min_excess_beta) {
        outlier[c][k] = true;
      }
      if (kOwnWork[c] == Category::kHost && SteadyAtOnePoint(group, window, k, host_leads[k], e)) {
        outlier[c][k] = true;
      }
      if (kOwnWork[c] == Category::kDataloader && LoaderAsleepInItsWork(group, window, k, excess, loader_slept[k], e)) {
        outlier[c][k] = true;
      }
      if (kOwnWork[c] == Category::kDataloader && WithoutLoaderWorkers(group.row(k)) &&
          ThreadAsleepInItsWork(group, window, k, excess, thread_slept[k], e)) {
        outlier[c][k] = true;
      }
      flagged += outlier[c][k] ? 1 : 0;
    }
    // Local means a minority; what most workers share is a global matter.
    if (flagged * 2 >= n && n >= 3) std::fill(outlier[c].begin(), outlier[c].end(), false);
  }
  std::vector<double> own = OwnShares(group, std::nullopt);
  RobustCenter own_center = MedianAndMad(own);
  IterationLeaders own_leaders(group, std::nullopt);
  std::vector<double> comm = CategoryBetas(group, Category::kCommunication);
  std::vector<double> others_comm = MedianOfOthers(comm);
  std::vector<Excess> out;
  for (size_t k = 0; k < n; ++k) {
    bool own_outlier = IsOutlier(group, own_leaders, own_window, k, own[k] - own_center.median,
                                 RobustZ(own[k], own_center, e.min_scale_beta), last, late_alike[k], e);
    bool any_category = false;
    for (size_t c = 0; c < kOwnCount; ++c) any_category = any_category || outlier[c][k];
    if (!own_outlier && !any_category) {
      own_outlier = RunsCodeOfItsOwn(group, own_leaders.iterations(), k, own[k] - PeerCenter(own, own_center, k),
                                     others_comm[k] - comm[k], e);
    }
    if (!own_outlier && !any_category) continue;
    Excess best = LargestCategoryExcess(by_category, k, e, any_category ? &outlier : nullptr);
    PreferWhereMostOfItsExcessIs(by_category, k, own[k] - PeerCenter(own, own_center, k), e, &best);
    PreferUniformSlowdown(group, shares, centers, outlier, k, host_leads[k], e, &best);
    best.at_one_point = best.category == Category::kHost && host_leads[k] >= e.point_lead_beta;
    // Flagged either way, the others wait for all of its own-work excess: that is the impact.
    best.excess = std::max(best.category_excess, own[k] - PeerCenter(own, own_center, k));
    for (size_t c = 0; c < kOwnCount; ++c) {
      double peers = PeerCenter(shares[c], centers[c], k);
      double excess = shares[c][k] - peers;
      if (kOwnWork[c] != best.category && excess >= e.min_excess_beta) {
        best.also.push_back({kOwnWork[c], shares[c][k], peers});
      }
    }
    best.waited_every_step = waited_every_step[k];
    out.push_back(best);
  }
  return out;
}

// The worker's function in `category` that exceeds its peers most: its name, β, the peers'
// median β and its robust z. One pass over the group gathers all candidates.
struct FunctionExcess {
  const FunctionEntry* function = nullptr;
  double peer_beta = 0;
  double z = 0;
};

FunctionExcess TopFunction(const WorkerGroup& group, size_t member, Category category, const Expectations& e) {
  std::vector<const FunctionEntry*> candidates;
  std::vector<std::pair<StringId, Category>> keys;
  for (const FunctionEntry& f : group.functions(member)) {
    if (f.category == category) {
      candidates.push_back(&f);
      keys.push_back({f.name, f.category});
    }
  }
  std::vector<std::vector<double>> columns = FunctionBetaColumns(group, keys);
  FunctionExcess best;
  double best_excess = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    RobustCenter center = MedianAndMad(columns[i]);
    double excess = candidates[i]->beta - center.median;
    if (excess > best_excess) {
      best_excess = excess;
      best = {candidates[i], center.median, RobustZ(candidates[i]->beta, center, e.min_scale_beta)};
    }
  }
  return best;
}

std::string WaitingEvidence(const WorkerGroup& group, size_t suspect) {
  double gap = OthersWaitFor(group, suspect);
  if (gap <= 0.01) return "";
  double mine = group.row(suspect).beta(Category::kCommunication);
  return fmt::format(
      "; the other {} workers wait on it in collectives (exposed communication β {:.2f} "
      "vs {:.2f} on rank {})",
      group.size() - 1, mine + gap, mine, group.row(suspect).rank);
}

double ExpectationDistance(const Expectations& e, const FunctionEntry& f, bool has_device) {
  return e.Distance(f.category, f.host_kind, f.beta, f.mu, f.sigma, has_device);
}

// Evidence that `member`'s compute excess is more work, or "": its ops ran on the processors its
// peers use, with a CPU at least as long as theirs (SharesPeersProcessors), which are not slower
// for one rank; the node's contention for caches and memory moves between ranks and windows
// (ExcuseScheduledOut's note), and here the others waited for this rank across the window
// (collective_waits.h), or for it (and any other rank late alike) in every step by the straggler
// floor (ReadLateAlike). Its call sizes need not show it: on shared cores the scheduler stretches
// every rank's calls. An unseen LSTM job whose rank 3 had reviews 1.3x as long (5 ranks on 2
// cores): its compute 0.67 of a step above its peers', its thread on a CPU 0.79 of the window
// against 0.12-0.21, the others waiting for it in 4 of 5 iterations, 0.98 of their waiting.
std::string MoreWorkOnTheSameProcessors(const WorkerGroup& group, const Excess& x, const Expectations& e,
                                        const std::optional<LastArriver>& last) {
  const size_t member = x.member;
  std::optional<double> peers_cpu = SharesPeersProcessors(group, member, e);
  if (!peers_cpu) return "";
  bool last_across = last && last->member == member && last->across_the_window;
  if (!last_across) {
    // Waited for in every step, more work shows as more CPU: a rank whose ops only stretched is
    // waiting inside them (a tensor-parallel partner of a throttled rank blocks in its backward's
    // all-reduce, an autograd node read as compute: 0.66 of a step against 0.50, its thread on a CPU
    // 0.23 of the window against 0.22).
    if (!x.waited_every_step) return "";
    std::optional<double> beyond = OnCpuBeyondPeers(group)[member];
    if (!beyond || *beyond < StragglerFloor(group, e)) return "";
  }
  const WorkerRow& w = group.row(member);
  return fmt::format(
      "every rank of this group runs on host {}'s processors, no CPU quota held it and its training thread had a CPU "
      "{:.2f} of the window against its peers' {:.2f}: the same processors are not slower for one rank, and the "
      "others waited for it {}, where the node's contention moves between ranks: it has more work than its peers "
      "(more data, or work they do not run)",
      group.table->name(w.host), w.cpu->main_cpu, *peers_cpu,
      last_across ? "across the window (at the collectives, below)" : "in every step of the window");
}

// `last`: FindLastArriver's answer for the group, read once for all its findings.
Finding MakeFinding(const WorkerGroup& group, const Excess& x, const Expectations& e,
                    const std::vector<CallSizes>& sizes, const std::optional<LastArriver>& last) {
  const WorkerRow& w = group.row(x.member);
  FunctionExcess top = TopFunction(group, x.member, x.category, e);
  double iteration_ms = MedianIterationS(group) * 1e3;
  Finding f;
  f.scope = FindingScope::kLocal;
  f.category = FindingCategoryOf(x.category);
  f.workers = {w.rank};
  f.function = top.function ? std::string(group.table->name(top.function->name)) : "";
  f.beta = top.function ? top.function->beta : 0;
  f.peer_beta = top.peer_beta;
  f.expectation_distance = top.function ? ExpectationDistance(e, *top.function, w.has_device) : 0;
  f.differential_distance = group.size() >= 3 ? x.z : 0;
  f.impact_s_per_iter = x.excess * iteration_ms / 1e3;
  std::string also;
  for (const AlsoUp& other : x.also) {
    also += fmt::format("; its {} is also up ({:.2f} vs {:.2f})", CategoryName(other.category), other.share,
                        other.peer_share);
  }
  f.evidence = fmt::format(
                   "rank {}: {} takes {:.3f} of an iteration vs peer median {:.3f} (+{:.1f} ms; "
                   "its own work in all +{:.1f} ms per {:.1f} ms iteration)",
                   w.rank, CategoryName(x.category), x.peer_share + x.category_excess, x.peer_share,
                   x.category_excess * iteration_ms, x.excess * iteration_ms, iteration_ms) +
               also + x.uniform_slowdown + WaitingEvidence(group, x.member);
  if (!x.longer_on_cpu.empty()) f.evidence += "; " + x.longer_on_cpu;
  if (!x.shared_cores.empty() && OthersWaitFor(group, x.member) < e.min_excess_beta) {
    f.evidence += "; its peers hardly wait for it at the collectives: " + x.shared_cores +
                  ", so its extra work slows every rank in its own ops instead";
  }
  if (x.at_one_point && OthersWaitFor(group, x.member) < e.min_excess_beta) {
    f.evidence +=
        "; its peers do not wait for it at the collectives, but the time sits at one program point far above "
        "every peer's: its code, which on shared cores slows them in their own ops instead";
  }
  if (x.own_code && OthersWaitFor(group, x.member) < e.min_excess_beta) {
    // Compute says which line below (the finding is named at it); host time keeps its frames.
    f.evidence += x.category == Category::kCompute
                      ? std::string(
                            "; its peers hardly wait for it at the collectives, but its extra work is code "
                            "they never ran (below), which on shared cores slows them in their own ops instead")
                      : fmt::format(
                            "; its peers hardly wait for it at the collectives, but {:.0f}% of its window sits under "
                            "{}, a line the samples of {} of its {} sampled peers never reached: its code, which on "
                            "shared cores slows them in their own ops instead",
                            100 * x.own_code->share, group.table->name(x.own_code->location), x.own_code->peers_without,
                            x.own_code->peers_sampled);
  }
  WorkComparison work = CompareWork(group, x.member, e, sizes.empty() ? nullptr : &sizes[x.member]);
  // Timings say "more data" only about slower ops: a rank whose own loader workers or Python
  // take its CPU also runs its ops slower, and its excess is still its loader's or Python's
  // (a slow-worker loader run was once named `imbalance` so, and a 2-rank run whose rank 1
  // collected garbage every step had its median calls 1.3x its peer's under load). Nor about a
  // rank its CPU quota held back (its cgroup's throttled time, cpu_contention.h): the quota
  // freezes it for whole periods, which stretch every op's mean and the median of calls long
  // enough to meet a freeze (a 2-rank transformer run at a 45 % quota: its batch-sized ops'
  // median calls 1.40x its peer's, its gradient accumulation's 7 us calls 0.89x). Counts,
  // bytes and shapes are exact.
  bool timed = work.source != WorkSource::kExact;
  std::string own_calls = ExtraCallsOfItsOwnCode(group, x.member, e.imbalance_ratio, work.more_work);
  // Ops its peers also run, called from a line they never ran: an evaluation pass on one rank
  // calls the model's forward ops, so its calls look like more data (own_code_line.h).
  std::optional<OwnCodeLine> own_line;
  bool named_by_line = false;  // the finding is that line's: "(code only this rank runs)"
  if (x.category == Category::kCompute)
    own_line = x.own_code ? x.own_code : LineOnlyItRuns(group, x.member, x.excess, e);
  if (own_line) {
    f.location = std::string(group.table->name(own_line->location));
    std::string line_evidence = fmt::format(
        "its stack samples put {:.0f}% of its window under {}, a line the samples of {} of its {} sampled peers never "
        "reached: the extra work is its own code's",
        100 * own_line->share, f.location, own_line->peers_without, own_line->peers_sampled);
    own_calls = own_calls.empty() ? line_evidence : own_calls + "; " + line_evidence;
  }
  if (!own_calls.empty() && (x.category == Category::kCompute || x.category == Category::kHost)) {
    // Its code's: the ops it calls and the Python between them. Named at its busiest host point,
    // whose stack samples give the line (a GRU's rank 0 logging its parameters element by element:
    // 98,000 calls a step each of aten::select and aten::item, the Python between them 0.20 of
    // its step, sampled at the logging line).
    f.category = FindingCategory::kHost;
    FunctionExcess host = TopFunction(group, x.member, Category::kHost, e);
    // Named by the line where no host function's samples are there: an unseen distillation job's
    // rank 1 ran its teacher 3 more times at a line of its own (its convolutions, 45% of its
    // window), and its busiest host function was its student's DDP forward, sampled two lines on.
    if (own_line && !(host.function && host.function->hot_frame == own_line->location)) {
      named_by_line = true;
      f.function = std::string(kCodeOnlyItRuns);
      f.beta = own_line->share;
      f.peer_beta = own_line->most_a_peer_held;
    } else if (host.function) {
      f.function = std::string(group.table->name(host.function->name));
      f.beta = host.function->beta;
      f.peer_beta = host.peer_beta;
    }
    f.evidence += "; " + own_calls;
  } else if (work.more_work && (!timed || (x.category == Category::kCompute && !HeldBackByQuota(w, e)))) {
    f.category = FindingCategory::kImbalance;
    f.evidence += "; it is given more work: " + work.evidence;
  } else if (x.category == Category::kCompute) {
    std::string more = MoreWorkOnTheSameProcessors(group, x, e, last);
    if (!more.empty()) f.category = FindingCategory::kImbalance;
    f.evidence += more.empty() ? "; same work as its peers, done slower" + work.slower : "; " + more;
  }
  if (group.size() == 2) f.evidence += " (only 2 workers: compared with each other)";
  f.action = AdviceFor(f.category, f.scope, w.rank);
  if (named_by_line) {
    f.action = fmt::format(
        "Rank {} runs work at {} that its peers never run (an extra pass, a metric or a log on one rank): run it on "
        "every rank alike, less often, or off the step.",
        w.rank, f.location);
  }
  if (IsResumePoint(f.function)) {
    // Not code: its thread was slow to run again after a collective (summary/program_points.h).
    f.action = fmt::format(
        "Rank {}'s training thread is slow to run again after its collectives complete: it waits for a CPU. Look "
        "at what else runs on its cores (its own loader workers and threads, other jobs) and at its CPU quota.",
        w.rank);
  }
  return f;
}

// The rank the others wait for at the collectives confirms a straggler finding; when no own-work
// excess stands out (its delay began before the window), it is the finding itself.
void AddLastArriver(const WorkerGroup& group, const Expectations& e, const std::vector<CallSizes>& sizes,
                    const std::optional<LastArriver>& last, std::vector<Finding>* findings) {
  if (!last) return;
  int rank = group.row(last->member).rank;
  for (Finding& f : *findings) {
    if (f.workers == std::vector<int>{rank}) {
      f.evidence += "; " + last->evidence;
      return;
    }
  }
  if (!findings->empty()) return;
  // With several iterations in the window, a delay that began before one of them began inside
  // the previous one: a real straggler then shows own-work excess, and late arrival alone is
  // scheduling noise. Only a single-iteration window (its past unseen) names it from arrival.
  if (group.row(last->member).iterations >= 3) return;
  Excess best = LargestCategoryExcess(CategoryShares(group), last->member, e);
  Finding f = MakeFinding(group, best, e, sizes, last);
  double own_ms = std::max(0.0, best.excess) * MedianIterationS(group) * 1e3;
  f.impact_s_per_iter = last->waited_s_per_iter;
  f.evidence = last->evidence +
               fmt::format(
                   "; its own work in the window is only {:.1f} ms above its peers' (largest: {}), so most of the "
                   "delay began before the profiled window",
                   own_ms, CategoryName(best.category));
  f.action = fmt::format(
      "Rank {} starts its collectives late: look at what it does between iterations "
      "(data loading, checkpoints, logging) and profile a longer window.",
      rank);
  findings->push_back(std::move(f));
}

// Work counts (items loaded, compute calls) are exact, not timing noise: a rank given clearly
// more work whose own work takes longer than its peers' is imbalanced even when noisy timings
// alone would not single it out. So its own-work excess needs only the general floor, not the
// small group's, which guards against timing noise: whether it costs the job is then the
// others' wait for it (KeepThoseTheOthersWaitFor). With more ranks than cores the scheduler
// hands the cores to the rank that still works while its peers sleep in their collectives, so
// its extra work shows as everyone slower: an 8-rank run on 2 cores whose rank 6 loaded 2.0x
// the items had its own work only 0.04 of a step above its peers', and they waited 0.15 of a
// step for it (0.07 for any other rank). Where the readings show the ranks sharing busy cores,
// any own-work excess counts and the others need not wait: a 4-rank run given 3x the batch on
// one rank had that rank's own work 0.017 of a step above its peers' and nobody waiting for it.
// The same holds for a rank that already stands out. Larger median calls (call_sizes.h) find a
// rank as counts do: on busy shared cores a 4-rank run's rank given sequences twice as long had
// its own work no higher than its peers', and its cost is then its larger calls' time. Whether
// they name it `imbalance` is still a timing's question (MakeFinding).
void AddImbalancedWorkers(const WorkerGroup& group, const Expectations& e, const std::vector<CallSizes>& sizes,
                          std::vector<Excess>* excesses) {
  size_t n = group.size();
  if (n < 2) return;
  std::vector<double> items, calls;
  for (size_t k = 0; k < n; ++k) {
    items.push_back(group.row(k).dataloader_ops_per_iter);
    calls.push_back(group.row(k).compute_calls_per_iter);
  }
  std::vector<double> sorted_items = items, sorted_calls = calls;
  double median_items = MedianInPlace(sorted_items), median_calls = MedianInPlace(sorted_calls);
  // With two workers the median of the pair is their mean, half-way to the peer (twice the
  // peer's count is 1.33x the mean at most, under the 1.3 ratio with any noise): each is compared
  // with the other, as its own work is (PeerCenter). edge18's 2-rank MLP whose rank 0 had twice the batch (seed 823):
  // 3,416 compute calls and 3,038 loader ops per step against 1,905 and 1,527, own work 0.77 of a step against 0.56.
  std::vector<double> own = OwnShares(group, std::nullopt);
  RobustCenter own_center = MedianAndMad(own);
  CategoryShares by_category(group);
  // How much longer each rank's training thread ran on a CPU than its peers' (median; share of
  // the window; 0 without readings). On cores the ranks share, the scheduler spreads a rank's
  // extra work over all of them, so its own work need not stand out, but the processor time it
  // took does: validation18's 6-rank MLP whose rank 1 had twice the batch (seed 100; 2 cores,
  // 99% busy): 3,406 compute calls a step against 1,900, its own work 0.38 of a step against
  // its peers' 0.38-0.48, its training thread on a CPU 0.23 of the window against 0.13-0.16.
  std::vector<std::optional<double>> on_cpu_beyond = OnCpuBeyondPeers(group);
  for (size_t k = 0; k < n; ++k) {
    const WorkerRow& w = group.row(k);
    const double cpu_beyond = on_cpu_beyond[k].value_or(0.0);
    double peer_items = PeerCenter(items, {.median = median_items}, k);
    double peer_calls = PeerCenter(calls, {.median = median_calls}, k);
    // Where a loader counts items, more compute calls with the peers' count of items are more data
    // only as calls of the ops the peers spend their time in (an RNN's time steps over longer
    // sequences: an unseen 4-rank GRU whose rank 2 padded its batches 3x made 2.86x its peers'
    // aten::mm calls); a loop of the rank's own code calls ops they hardly spend time in (the same
    // GRU whose rank 0 logged its parameters element by element each step: 399,357 compute calls
    // a step against 5,136, 98,000 each of aten::select, aten::item..., aten::mm's as its peers').
    bool more_calls = peer_calls > 0 && w.compute_calls_per_iter >= e.imbalance_ratio * peer_calls &&
                      (peer_items <= 0 || CallsRatioOfPeersWork(group, k) >= e.imbalance_ratio);
    bool counted = (peer_items > 0 && w.dataloader_ops_per_iter >= e.imbalance_ratio * peer_items) || more_calls;
    bool larger_calls = !sizes.empty() && sizes[k].MoreData(e.imbalance_ratio);
    // More data is more work: where the training threads were read, a rank found by its larger
    // calls alone (no counts) must also have run on a CPU longer than its peers by the noise
    // floor. The 21 ranks given longer sequences of the 21- to 24-series ran 0.10-0.56 of the
    // window longer; a healthy 8-rank run's rank the calls named (edge25 s805), -0.002, and two
    // other ranks they named without counts 0.019 and 0.022.
    if (larger_calls && !counted && on_cpu_beyond[k] && cpu_beyond < e.min_excess_beta) larger_calls = false;
    // Its fastest calls larger (CallSizes::FastestCallsMoreData: where calls outlast the scheduler's
    // slice, the median's are the contention's), where the two other measures of more work agree,
    // each by the floor a rank's excess over 4+ iterations is held to: its batch-sized ops held
    // that much more of a step than its peers' in sum, and its training thread ran on a CPU that
    // much longer (more data is more work done on the processor). Whether it had the processor as
    // readily as its peers is CompareWork's question below. A 6-rank GAN on 2 cores whose rank 2
    // had 1.8x the batch: lower quartile calls 3.77x its peers', median 1.04x, 0.15 of a step more
    // in its batch-sized ops, its thread 0.15 of the window longer, the others waiting 0.14 of a
    // step more than it; its own work did not stand out of a 6-rank spread (another rank's compute
    // up 0.07) and the calls did not split into iterations for the waiting to be read across the
    // window. The ranks given more data of stops 56-59's jobs that these calls found: both 0.063
    // or more (the batch-sized ops 0.063-0.330, the threads 0.097-0.359); the other ranks they
    // found: the smaller of the two 0.033 at most. As in CallSizes::MoreData, not where another
    // rank's median calls moved by the ratio: something stretched whole stretches of calls there as
    // much as more data would (the healthy GRU whose ranks 1 and 2 ran every op about twice as long).
    // Nor where its mean calls are no larger than its peers': more data makes every call do more,
    // and on a processor it had as readily as they did (CompareWork asks that) its mean carries no
    // more preemption than theirs. A healthy baseline window of the unseen PPO job (5 ranks):
    // rank 2's fastest calls 1.56x, its ops 0.053 of a step beyond in sum, its thread 0.059 of the
    // window longer, its mean calls 0.998x; the ranks given more data these calls found, 1.035x to
    // 1.78x (stops 56-60's jobs).
    const bool fastest_calls = !counted && !larger_calls && !sizes.empty() && on_cpu_beyond[k] &&
                               sizes[k].median.others_largest < e.imbalance_ratio && sizes[k].mean.measured &&
                               sizes[k].mean.batch_ratio > 1 && sizes[k].FastestCallsMoreData(e.imbalance_ratio) &&
                               std::min(sizes[k].batch_share_beyond, cpu_beyond) >= e.small_group_min_excess_beta;
    if (!counted && !larger_calls && !fastest_calls) continue;
    double excess = own[k] - PeerCenter(own, own_center, k);
    auto listed = std::find_if(excesses->begin(), excesses->end(), [&](const Excess& x) { return x.member == k; });
    // Counts alone need some own-work excess (checked first: comparing work costs a pass over
    // the group, and noisy counts can touch many ranks of a large one).
    if (!larger_calls && !fastest_calls && listed == excesses->end() && excess <= 0 && cpu_beyond < e.min_excess_beta)
      continue;
    WorkComparison work = CompareWork(group, k, e, sizes.empty() ? nullptr : &sizes[k]);
    if (!work.more_work) continue;
    std::string shared = work.source == WorkSource::kMeanTimings ? "" : SharedBusyCores(group);
    // Counted: what its extra work costs is at least the processor time it took beyond its
    // peers', whether or not the cores were busy enough to call them shared (the scheduler
    // spreads the work over the ranks either way; where they are not called shared, the others
    // must still wait for it). cnn26's 3-rank CNN whose rank 1 had twice the batch (seed 414,
    // cores then not called shared): 1.78x the calls, its own work 0.028 above its peers', its
    // thread on a CPU 0.12 longer, the others waiting 0.11 of a step more than it did.
    std::string longer_on_cpu;
    if (counted && cpu_beyond >= e.min_excess_beta) {
      excess = std::max(excess, cpu_beyond);
      longer_on_cpu = fmt::format(
          "its training thread ran on a CPU {:.2f} of the window longer than theirs, the work of its extra calls",
          cpu_beyond);
    }
    // Larger calls on busy shared cores: the scheduler spreads the rank's extra work over every
    // rank, so its own work need not stand out; what its extra data costs is its larger calls'
    // time, as far as it spent that time: its batch-sized ops' time beyond its peers' in sum (a
    // typical call can be larger without the ops taking longer, where the peers' calls spread
    // wider). Found by that alone, the cost must clear the general floor. A healthy 4-rank
    // forecaster on 2 cores also busy outside the job (95 %): rank 1's aten::mm median calls 1.69x
    // its peers' (20 us calls of two shapes), its batch-sized ops 0.029 of a step beyond theirs in
    // sum, which its median calls had priced at 0.146 (32 ms a step, named `imbalance`). The ranks
    // given more data of stops 56-59's unseen jobs that call sizes found: 0.06-0.33 beyond in sum.
    if (larger_calls && !shared.empty())
      excess = std::max(excess, std::min(sizes[k].extra_share, sizes[k].batch_share_beyond));
    if (fastest_calls && !shared.empty()) excess = std::max(excess, sizes[k].batch_share_beyond);
    if (listed != excesses->end()) {
      // Already standing out: on busy shared cores the others need not wait for it either.
      if (!shared.empty()) {
        listed->shared_cores = std::move(shared);
        listed->excess = std::max(listed->excess, excess);
        listed->longer_on_cpu = std::move(longer_on_cpu);
      }
      continue;
    }
    bool kept = counted ? excess > 0 && (excess >= e.min_excess_beta || !shared.empty()) : excess >= e.min_excess_beta;
    if (!kept) continue;
    // Found by its larger calls alone, its excess is its batch-sized ops': compute.
    Excess best =
        counted ? LargestCategoryExcess(by_category, k, e) : CategoryExcess(by_category, k, e, Category::kCompute);
    best.longer_on_cpu = std::move(longer_on_cpu);
    best.shared_cores = std::move(shared);
    best.excess = excess;  // the others wait for all of its own-work excess
    excesses->push_back(best);
  }
}

// In a synchronous job the others wait at the next collective for the rank that is late: that
// wait is what a straggler costs the job. On a shared machine some rank is slower in each step
// (it lost the CPU to the others, which were working meanwhile), and the others wait for
// whoever it was. So a suspect's own-work excess counts only when the others wait for it more
// than for any unsuspected peer, by the noise floor: a healthy 4-rank run on 2 cores once had
// a rank's loader +11 ms per iteration while the others waited 0.05 of a step for it and as
// long for an unsuspected rank; real stragglers here were waited for 0.4-1.4x their excess
// and their peers not at all. Ranks that never wait (no collective seen) keep own work alone, and
// a rank asleep in its own work (KeepThoseTheOthersWaitFor) needs only that the others wait.
// The wait is taken in each iteration, as a share of it, and averaged with each iteration
// weighing alike: one long iteration (a 6-rank run's first step took 1.4 s, its others 0.2-0.3 s)
// would otherwise hold most of the window and its noise.
// For each member: the median of the others' values minus its own (MedianOfOthers: one sort).
void AddOthersMedianGap(const std::vector<double>& values, double weight, std::vector<double>* out) {
  std::vector<double> others = MedianOfOthers(values);
  for (size_t k = 0; k < values.size(); ++k) (*out)[k] += weight * (others[k] - values[k]);
}

std::vector<double> WaitedForPerMember(const WorkerGroup& group) {
  size_t n = group.size();
  std::vector<double> waited(n, 0.0), comm(n);
  size_t iterations = SIZE_MAX;
  for (uint32_t member : group.members) iterations = std::min(iterations, group.table->iteration_betas(member).size());
  if (iterations == 0 || iterations == SIZE_MAX) {
    for (size_t k = 0; k < n; ++k) comm[k] = group.row(k).beta(Category::kCommunication);
    AddOthersMedianGap(comm, 1.0, &waited);
    return waited;
  }
  constexpr auto kComm = static_cast<size_t>(Category::kCommunication);
  for (size_t i = 0; i < iterations; ++i) {
    for (size_t k = 0; k < n; ++k) comm[k] = group.table->iteration_betas(group.members[k])[i][kComm];
    AddOthersMedianGap(comm, 1.0 / static_cast<double>(iterations), &waited);
  }
  return waited;
}

// A rank whose host time stands out only by the calls beyond its points' median calls
// (host_gaps.h) was preempted between its ops more than its peers, not running code of its own:
// no host finding. Where its other own work is up too, the finding stands on that.
void DropHostTimeItsCodeDidNotSpend(const WorkerGroup& group, const Expectations& e, std::vector<Excess>* excesses) {
  bool any = std::any_of(excesses->begin(), excesses->end(),
                         [](const Excess& x) { return x.category == Category::kHost && x.also.empty(); });
  if (!any) return;
  std::vector<double> own_code = OwnShares(group, Category::kHost);
  std::vector<double> gaps = HostGapShares(group);
  for (size_t k = 0; k < group.size(); ++k) own_code[k] -= gaps[k];
  RobustCenter center = MedianAndMad(own_code);
  std::erase_if(*excesses, [&](const Excess& x) {
    return x.category == Category::kHost && x.also.empty() &&
           own_code[x.member] - PeerCenter(own_code, center, x.member) < e.min_excess_beta;
  });
}

void KeepThoseTheOthersWaitFor(const WorkerGroup& group, const Expectations& e, std::vector<Excess>* excesses) {
  size_t n = group.size();
  if (n < 3 || excesses->empty()) return;
  bool waits = false;
  for (size_t k = 0; k < n; ++k) waits = waits || group.row(k).beta(Category::kCommunication) > 0;
  if (!waits) return;
  std::vector<bool> suspect(n, false);
  for (const Excess& x : *excesses) suspect[x.member] = true;
  std::vector<double> waited = WaitedForPerMember(group);
  double noise = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!suspect[k]) noise = std::max(noise, waited[k]);
  }
  std::vector<std::optional<double>> slept = SleptBeyondPeers(group);
  // Nor was a rank slowed by the scheduler whose training thread ran on a CPU longer than its
  // peers' by the floor: the scheduler gives a rank less processor, not more. On cores the ranks
  // share, the work it did there takes the processor from the others, which then run slower in
  // their own ops rather than wait for it (as for more data by counts: AddImbalancedWorkers). An
  // unseen 4-rank text job whose rank 1 normalized each sentence 150 more times in its in-process
  // loader: its loader 0.25 of each step against 0.02-0.05 (in every step), its thread on a CPU
  // 0.13 of the window longer, the others waiting 0.09 of a step for it and 0.07 for a peer.
  // Nor where most of its excess sits under a line of the job's code its peers never ran: the
  // scheduler stretches the code every rank runs, it does not make one rank run code of its own
  // (RunsCodeOfItsOwn). An unseen 4-rank text job whose rank 3's forward hook walked its layer's
  // activations in Python: its host time 0.26 of each step against 0.026-0.043, 0.29 of its window
  // under the hook's line, the others waiting for it not at all (its peers' ops ran slower on the
  // 2 cores instead, and it ran on a CPU no longer than they did).
  // Not for the loader: a line where a rank waits for its input is reached by its peers too, but
  // too briefly for their samples (a 5-rank run whose rank 1's loader workers were slow: its
  // training loop's line).
  for (Excess& x : *excesses) {
    if (x.at_one_point || !x.shared_cores.empty()) continue;
    if (x.category == Category::kCompute || x.category == Category::kHost) {
      x.own_code = LineOnlyItRuns(group, x.member, x.excess, e);
    }
  }
  std::vector<std::optional<double>> on_cpu_beyond;
  std::string shared;
  for (Excess& x : *excesses) {
    if (x.at_one_point || !x.shared_cores.empty() || x.own_code) continue;
    if (on_cpu_beyond.empty()) {
      on_cpu_beyond = OnCpuBeyondPeers(group);
      shared = SharedBusyCores(group);
    }
    const std::optional<double>& beyond = on_cpu_beyond[x.member];
    if (shared.empty() || !beyond || *beyond < e.min_excess_beta) continue;
    x.shared_cores = shared;
    x.longer_on_cpu = fmt::format(
        "its training thread ran on a CPU {:.2f} of the window longer than theirs: its own work, not the "
        "scheduler's (which gives a rank less processor, not more)",
        *beyond);
  }
  std::erase_if(*excesses, [&](const Excess& x) {
    if (x.at_one_point || !x.shared_cores.empty() || x.own_code) return false;
    // The rank the scheduler slowed moves from step to step, and the others wait for whoever it
    // was. A rank whose loader or Python time was spent asleep, longer than its peers' sleep by
    // the noise floor, was not slowed by the scheduler: the sleep is its own (a slow disk, a
    // checkpoint's write). That the others wait for it at all is then the whole test. A 6-rank run
    // on 2 cores whose rank 1 read each sample from a slow disk: its training thread slept 0.18
    // of the window longer than its peers', the others waited 0.09 of a step for it, and 0.11
    // for rank 3, which the scheduler had queued 0.84 s per second.
    bool asleep = (x.category == Category::kDataloader || x.category == Category::kHost) && slept[x.member] &&
                  *slept[x.member] >= e.min_excess_beta;
    double floor = asleep ? 0 : noise;
    return waited[x.member] - floor < e.min_excess_beta;
  });
}

}  // namespace

std::vector<bool> RanksLateAlike(const WorkerGroup& group, const Expectations& e) {
  return ReadLateAlike(group, e).Ranks(2);
}

std::vector<Finding> FindLocalProblems(const WorkerGroup& group, const Expectations& e,
                                       std::optional<size_t> waited_across) {
  std::vector<Finding> findings;
  if (group.size() < 2) return findings;
  // Who the others wait for at the collectives: one pass over the calls, for every rule below.
  std::optional<LastArriver> last = FindLastArriver(group, e, waited_across);
  std::vector<Excess> excesses = OutlyingExcesses(group, e, last);
  DropHostTimeItsCodeDidNotSpend(group, e, &excesses);
  std::vector<CallSizes> sizes = CompareCallSizes(group);
  AddImbalancedWorkers(group, e, sizes, &excesses);
  KeepThoseTheOthersWaitFor(group, e, &excesses);
  // With two workers both differ; only the one whose peer waits on it is the cause.
  if (group.size() == 2) {
    std::erase_if(excesses, [&](const Excess& x) {
      return group.row(x.member).beta(Category::kCommunication) >
             group.row(1 - x.member).beta(Category::kCommunication);
    });
  }
  std::sort(excesses.begin(), excesses.end(), [](const Excess& a, const Excess& b) { return a.excess > b.excess; });
  // Many stragglers at once is a fleet-wide matter; name the worst and count the rest.
  size_t shown = std::min(excesses.size(), kMaxLocalFindings);
  for (size_t i = 0; i < shown; ++i) findings.push_back(MakeFinding(group, excesses[i], e, sizes, last));
  if (excesses.size() > shown) {
    findings.back().evidence +=
        fmt::format("; {} more ranks of this group stand out less (not listed)", excesses.size() - shown);
  }
  AddLastArriver(group, e, sizes, last, &findings);
  return findings;
}

}  // namespace eroica
