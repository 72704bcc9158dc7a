// What the nodes' processors say about a group's waits (python/eroica/cpu_share.py reads them
// over the capture window). A trace shows a rank waiting in a collective or for its DataLoader
// the same way whether the other side was slow or was runnable and queued for a CPU: on a node
// with more runnable threads than cores, every step of a ring all-reduce waits for a descheduled
// peer, and loader workers wait behind the training processes. Global findings that blame the
// network or the input pipeline first ask whether the CPU explains the wait (on CPU training
// only: global_analysis.cc), and a local straggler whether the scheduler does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

struct GroupCpu {
  double idle_share = 0;     // median over members of their node's idle share of all cores
  double run_delay = 0;      // median thread-seconds a training process was queued, per second
  size_t with_loader = 0;    // members whose loader worker processes were read
  double loader_cpu = 0;     // median cores their loader workers used
  double loader_queued = 0;  // median thread-seconds those workers were queued, per second
  // Median thread-seconds per second those workers slept making batches (loader_work.h), over
  // the members where that was read; negative where most members with workers lack it.
  double loader_asleep = -1;
  double loader_making = -1;  // the same for the time they spent making batches
};

// Whether the rank's DataLoader worker processes were read beside it (their CPU, their queueing,
// or how they spent the window): it loads in worker processes, not in its training process.
bool LoaderWorkersRead(const CpuShare& cpu);

// Its cgroup's quota held the rank back for the noise floor (`min_excess_beta`) of the window or
// more: its own CPU limit, which stretches every op in whole periods and queues every runnable
// thread at once.
bool HeldBackByQuota(const std::optional<CpuShare>& cpu, const Expectations& e);
inline bool HeldBackByQuota(const WorkerRow& row, const Expectations& e) { return HeldBackByQuota(row.cpu, e); }

// Medians over the members that have readings; nullopt unless most members have one.
std::optional<GroupCpu> ReadGroupCpu(const WorkerGroup& group);

// Why `level` of each step, paid in collectives even by the least-waiting rank, is not the
// network's, or "" when the readings do not say so. A slow network makes every rank of a node
// sleep in its collectives at the same time, so the node's cores sit idle for about `level` of
// the window unless other work takes them, and its ranks' threads sleep rather than queue. Where
// the nodes had less than half of that idle and some rank's threads were queued for a CPU at
// least as long as the least-waiting rank waited (thread-seconds per second), the collectives
// waited for descheduled peers: a rank waits at a collective for its slowest peer, and its own
// collective threads' queueing lengthens its own call, so one rank queued that long can account
// for the whole wait; the median rank need not have been. Measured on the tuning split (4 ranks on
// 2 cores, readings over the traced steps only): throttled links queued 0.16-0.25 of their wait
// (median rank) with 0.65-0.70 of the cores idle; healthy runs 0.95-3.5 of theirs, with 0.05-0.16
// idle. Three 4-rank MLPs with every link throttled: the most-queued rank 0.21-0.23 s per second
// against waits of 0.74-0.77, 0.59-0.60 of the cores idle. The median rank would have named the
// network for a 4-rank transformer whose rank 1's loader workers took the cores (its process
// queued 1.29 s per second, its peers 0.25-0.43, waits 0.43, cores 96 % busy) and for a healthy
// 3-rank transformer beside another job (1.12 against 0.34-0.35, waits 0.47, 98 % busy).
// Nor is it the network where a rank's CPU quota held it back for at least `level` of the window:
// its collective threads stall with it, so even it seems to wait (cnn17's 4-rank quota run:
// throttled 0.65, collectives 0.51 of each step on every rank).
std::string CpuExplainsCommunication(const WorkerGroup& group, double level);

// Whether the group's ranks share busy cores, as evidence text ("" when the readings do not say
// so): their nodes' cores were busy at least 85 % of the window and their training processes had
// threads queued for a CPU at least a quarter second per second (medians over ranks). There a
// rank given more work takes the processor while its peers sleep in their collectives, and they
// then run slower in their own ops rather than wait for it. The tuning split's healthy ranks (4
// on 2 cores) saw their cores busy 84-96 %, ranks given more data 86-92 %; where the ranks idle
// in a stall, on slow loader workers or a throttled link, 21-68 % busy. (90 % had been set on
// readings that counted the profiler's stop, all busy; a CI run of longer sequences on one rank
// then read 89 % and was not named.) Of the 358 groups of tuning21, validation21, small4,
// probe25, edge25 and the 26-series, the 41 healthy ones on busy cores queued 0.31-0.98 s per
// second: half a second, the bound before, left out cnn26's s414 and r3's s1600, ranks given
// twice and three times the batch on cores 90-91 % busy that queued 0.47 and 0.49 (the others
// did not wait for r3's rank, so nothing else named it).
inline constexpr double kBusyCoresShare = 0.85;
std::string SharedBusyCores(const WorkerGroup& group);

// Why `level` of each step spent waiting for the DataLoader's worker processes is not the
// loader's own slowness, or "": workers that were queued for a CPU at least as long as the
// training processes waited for them would have kept up had they run (they share the node's
// cores with the training processes they feed), unless they slept longer than that in their own
// work (a read, a decode library, a lock): then they were slow by themselves and queued besides,
// as any busy thread on busy cores is. Nor is it theirs where they spent less of the window making
// batches than training waited: the batches were ready, and the wait was their hand-over in the
// training processes (BatchesWereReady's group-wide twin). A loader in the training process
// itself (no workers) is never excused: it slows down with everything else the process does.
std::string CpuExplainsDataloader(const WorkerGroup& group, double level);

// Whether `member` runs its ops on the very processors its peers use, and was not deprived of
// them: CPU training, every rank of the group on its host (the rank meta file names it), its CPU
// quota read and not holding it back, and its training thread on a CPU at least as long as its
// peers' (median; a neighbour taking its cores or a lower priority leaves it less). Then its ops
// cannot be slower by its device: which rank the host's shared caches, memory bandwidth and
// sibling threads slow is the node's contention, and it moves between windows (edge16/17's
// healthy 2-rank MLPs on 2 cores, made at load 3-4: one rank's compute 0.07-0.12 of a step above
// the other's, its training thread on a CPU 0.71 of the window against 0.62; the same set-up idle
// read healthy). A rank slower than its peers in its ops there does more work, not the same work
// slower. Kept out: a quota, a noisy neighbour or priority, a slower host among several, GPU
// ranks, ranks without readings. Returns the peers' median time on a CPU, or nullopt.
std::optional<double> SharesPeersProcessors(const WorkerGroup& group, size_t member, const Expectations& e);

// Per member: how much longer its training thread slept outside the collectives than its
// peers' (median), as a share of the window: on no CPU, not queued for one, and not in a
// collective the trace shows it exposed to. The scheduler queues a thread, it does not put it to
// sleep: such sleep is the rank's own (I/O, a lock, a sleep call, a wait for its loader
// workers). nullopt where the member or most of its peers have no reading.
std::vector<std::optional<double>> SleptBeyondPeers(const WorkerGroup& group);

// Per member: how much longer its DataLoader workers slept making batches than its peers'
// (median; thread-seconds per second, loader_work.h). The same reasoning: a worker the node's
// cores kept waiting is queued, not asleep; healthy workers (2-8 ranks on 2 cores) slept 0-0.01.
// nullopt where the member or most of its peers have no such reading.
std::vector<std::optional<double>> LoaderSleptBeyondPeers(const WorkerGroup& group);

// Per member: how much longer its training thread ran on a CPU than its peers' (median; share of
// the window). The scheduler's noise gives a rank less processor, never more than its share: a
// rank that ran longer did more work. nullopt where the member has no reading or where most
// members have none.
std::vector<std::optional<double>> OnCpuBeyondPeers(const WorkerGroup& group);

// Local findings on own work (compute, host, data loader, memory) whose excess the node's
// scheduler explains become notes. A rank whose training thread was queued for a CPU longer
// than its peers' by at least its own-work excess, where its peers' queued at least that long
// too or processes outside the job kept fewer of its node's cores busy than that (the job itself
// has more runnable threads than cores: which rank loses the lottery moves between windows;
// another process can keep a thread off a core at most as long as it runs), which slept no longer than theirs outside
// collectives (a rank on slow storage queues more too, at every wake-up, but mostly it sleeps) beyond, for host time,
// what its process's other threads, no busier than its peers', were queued beyond theirs (the interpreter lock and the
// collectives' completions it waits on are held by threads the scheduler kept off a core: that sleep is queueing too),
// and whose CPU quota did
// not hold it back (throttled for less than the noise floor, `min_excess_beta`: a quota's throttling queues every
// runnable thread at once, so any material throttling is the rank's own limit), is not slow by its own work. So is a
// rank waiting for its DataLoader workers whose workers were queued for a CPU longer than its peers' workers by as
// much, on the same terms, and so is one whose workers spent less of the window making batches than it waited for them:
// the batches were ready, and the wait was their hand-over (threads of the training process and
// of the workers that pass a batch, each waiting to be scheduled), which its input pipeline's
// storage, transforms or worker count do not change. Nor is a compute excess a slower device on
// processors the rank shares with all its peers (SharesPeersProcessors). Kept: a rank held back by
// its quota (a CPU limit is its own problem), a rank queued while its peers were not and others'
// processes ran on its node as long (a noisy neighbour), and ranks without readings.
void ExcuseScheduledOut(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local,
                        std::vector<std::string>* notes);

// A local finding on a rank's own work (compute, host, loader, memory) whose lateness the other
// threads of its training process explain becomes theirs: those threads ran on a CPU beyond its
// peers' by a straggler's floor, by at least half its excess, and as an outlier among them (the
// robust z of the peers' functions: their other threads differ too, by up to 0.13 cores on the
// healthy runs of the 27- and 28-series; a slow-storage rank's by 0.11). A Python thread that computes
// holds the interpreter lock the training thread needs around every op, batch hand-over and line
// of the loop, and native threads take the cores it runs on; either way the time is the
// process's own, and it shows wherever the training thread waited. An unseen 4-rank recommender
// (DataLoader workers) whose rank 1 ran a background Python loop: every step 46 -> 518 ms;
// rank 1's process 0.91 cores against its training thread's 0.17 (peers' other threads 0.03-0.05
// cores), its wait for ready batches 0.43 of a step, which BatchesWereReady had excused: healthy.
// Host category, named as the process's other threads (the training thread's samples do not see
// them); before ExcuseScheduledOut, which then leaves it: the training thread's extra queueing
// for a CPU is those threads' doing as well. Without a straggler (the threads took the cores every
// rank shares, so all slowed alike: the testbed's busy_thread without loader workers, in about
// half its runs), a rank on CPU training whose other threads are such an outlier and ran longer
// than its training thread is a finding of its own, costing the share of its node's cores they
// took, where the group's cores are shared and busy (SharedBusyCores). CPU training only: a GPU
// rank's process runs the CUDA runtime's and NCCL's threads beside the loop, unmeasured here.
void BlameBusyThreadsOfItsProcess(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local);

// A rank on CPU training whose DataLoader worker processes ran on a CPU beyond its peers' workers
// by a straggler's floor and as an outlier among them (CoresBeyondPeers), where the group's cores
// are shared and busy (SharedBusyCores), and that no local finding names yet, is slowed by its
// workers' own work: they keep up with its steps by taking the cores every rank's training threads
// need, so all slow alike and nobody need wait for it. Costed at the share of the node's cores
// they took beyond their peers' (at least the noise floor, `min_excess_beta`). An unseen 3-rank
// character LSTM (no DDP, an IterableDataset in 2 persistent workers a rank) whose rank 2
// tokenized each sample in a Python loop: every step 237 -> 360 ms; rank 2's workers 0.51 cores
// against its peers' 0.003, its wait for them β 0.02, every training thread queued 0.5 s per second
// on 2 cores 99 % busy: healthy before. On the 379 ranks with loader workers read of the 27- to
// 29-series, workers ran at most 0.082 cores beyond their peers' (a loader_workers_slow rank's
// sleeping workers). Run after ExcuseScheduledOut: the training threads' queueing is these
// workers' doing, not the scheduler's lottery. A local compute finding on such a rank (the same
// work done slower) whose workers ran beyond their peers' by half its lateness becomes theirs: they
// took the cores its own training thread needed.
void BlameBusyLoaderWorkers(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local);

// A rank its own CPU quota held back (its cgroup's or an ancestor's cpu.stat: throttled for the
// noise floor and more above its peers) is slowed by its CPU limit: a local compute finding
// costed at its own-work excess, even when a worse straggler hides it from the others' waits
// (they wait for that one, not for it, and the quota then costs little until that one is
// fixed). An existing finding on it gets the quota's figures instead, and becomes the quota's
// (compute) when it is host or loader time the quota held the rank back at least as long as,
// not at one program point far above every peer: a quota freezes the rank wherever it runs out.
void AddQuotaThrottled(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local);

}  // namespace eroica
