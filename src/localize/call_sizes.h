// More data or a slower processor, from the size of a rank's typical calls. On CPU training
// every rank runs the same ops on its batch; each op's median call (duration_histogram.h) is the
// size of its work, which the scheduler's preemptions do not move (they hit a minority of calls,
// and stretch the mean instead). A rank given more data per step (longer sequences, larger
// samples) runs its batch-sized ops with larger median calls and its model-sized work (the
// optimizer's step, gradient accumulation) at its peers' size; a slower processor makes both
// larger. A CPU quota freezes whole periods: it leaves short calls as they were and lengthens
// the median of calls long enough to meet a freeze, so a rank its quota held back is judged by
// its cgroup's reading (cpu_contention.h), not by these.
//
// Measured on 4-rank transformer runs on 2 cores whose every rank was queued for a CPU half the
// time: a rank given sequences twice as long had its aten::mm median call 2.0-2.1x its peers'
// and its optimizer step's 0.9-1.1x, while its mean aten::mm was only 1.2-1.6x its peers' and
// its own work per step did not stand out from theirs (the scheduler shared its extra work out).
//
// An op called with two shapes a step as often has its median at the top of the smaller shape's
// calls, the one the scheduler stretched most (duration_histogram.h): a conv net's two
// convolutions put healthy ranks' median calls at 0.4-3.6x their peers' (6 ranks on 2 cores).
// More data makes every call of a batch-sized op larger, the small ones too: so the calls' lower
// quartile must say "larger" as well (those healthy ranks: 0.9-1.4x), where the pattern has it.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "localize/expectations.h"
#include "localize/groups.h"

namespace eroica {

// Work whose size is the model's, not the batch's: accumulating each parameter's gradient
// (autograd's AccumulateGrad nodes, where DDP's reducer hooks also run) and the optimizer's step.
// A rank given more data (longer sequences, larger samples) runs it at its peers' speed; a
// slower processor stretches it like everything else. Not the Python between such ops.
bool ScalesWithTheModel(std::string_view name, HostKind host_kind);

// The ratio below which half of the weight lies (`pairs`: ratio, weight; sorted in place); 0
// without weight.
double WeightedMedianRatio(std::vector<std::pair<double, double>>& pairs);

// One statistic of the calls (the median, or the lower quartile) against the peers'.
struct CallRatios {
  // Its batch-sized compute ops' calls over its peers': the median of the ops' ratios, each op
  // weighed by the critical-path share it holds on the peers.
  double batch_ratio = 0;
  double model_ratio = 0;  // the same over model-sized work
  bool measured = false;   // both kinds seen, timed finely enough, on it and its peers
  // The largest batch_ratio among the other members: how far the scheduler alone moved the
  // calls of ranks given the same data (median calls: up to 1.56x on 234 such ranks of the
  // tuning split, at loads of 1-6 on 2 cores; the ranks given more data there were 1.81-3.41x).
  double others_largest = 0;

  // Its batch-sized calls are larger by the ratio that counts as more work, against its peers'
  // and against its model-sized calls.
  bool Shifted(double ratio) const { return measured && batch_ratio >= ratio && batch_ratio >= ratio * model_ratio; }
  // Shifted, and larger by the ratio than the largest that noise made any other rank's too.
  // (Two ranks given more data in one group hide each other here; their counts or shapes do not.)
  bool Larger(double ratio) const { return Shifted(ratio) && batch_ratio >= ratio * std::max(1.0, others_largest); }
};

struct CallSizes {
  CallRatios median;        // the median calls'
  CallRatios low_quartile;  // the lower quartile calls' (not measured in patterns before version 5)
  // The mean calls', preempted calls included: they speak for a rank that had the processor as
  // readily as its peers (work_signals.cc). On the 1,299 ranks of the 21- and 22-series, 29 of
  // 204 ranks given no more data that waited longer for a CPU cleared 1.3x by their means, 12 of
  // 1,065 that did not (docs/ACCURACY-HISTORY.md, "the call-size rules against their measured
  // distributions").
  CallRatios mean;
  // The share of its batch-sized ops' critical-path time that the larger median calls add (1 - 1
  // / batch_ratio of it), in shares of the group's median iteration: what the extra data costs it
  // per step.
  double extra_share = 0;
  // Its batch-sized ops' summed critical-path share (the ops every member ran, each member's step
  // scaled to the group's median step) less the median of the others'. More data is more time in
  // those ops in sum, not only in their typical call. On the 1,942 ranks of the 27- and 29- to
  // 31-series' saved runs, the 40 ranks given more data whose median calls alone were shifted as
  // MoreData asks (1.3x their peers' and their own model-sized calls, compute calls not up) held
  // 0.09-0.45 of a step more there (median 0.26); of the 16 healthy ranks shifted so, 6 held no
  // more (-0.03 to 0.00: their peers' calls shorter at the median and as long in sum, a
  // distribution's shape, not work), val31b's two false alarms among them.
  double batch_share_beyond = 0;

  bool measured() const { return median.measured; }
  // More data makes every call of a batch-sized op larger: its median and its lower quartile
  // calls are both shifted (where the pattern has the quartile), and at least one of the two
  // stands clear of the noise, the largest shift the scheduler gave any other rank. Noise moves
  // the two apart, since preemptions stretch a rank's longer calls first: a 4-rank transformer
  // beside two busy loops whose rank 1 had sequences twice as long had its median calls 1.34x
  // its peers' against a noisiest other's 1.06x (the ratio over it 1.27) and its lower quartile
  // 1.89x against 1.00x. Requiring both clear of the noise had named nothing there; on the 1,304
  // ranks with call sizes of the 21- and 22-series runs this rule fires on one more of the 30
  // ranks given more data and on none more of the 1,274 others (docs/ACCURACY-HISTORY.md, "more
  // data needs both call statistics shifted").
  //
  // The lower quartile stands in for the median only where no other rank's median calls moved by
  // the ratio: where one did (given the same data), something stretched whole stretches of calls
  // on ranks as much as more data would, and that can be all of one rank's calls. A healthy
  // 4-rank GRU's baseline (3 steps, 2 cores 97 % busy; one op, aten::mm, held 0.42 of the step):
  // rank 1's median and lower quartile calls 2.00x its peers', rank 2's median 1.89x and its
  // lower quartile 1.06x, the two ranks' ops alike twice as long as ranks 0 and 3's.
  //
  // The quartile's batch-sized calls are set against the model-sized work's speed as the less
  // stretched of its two statistics says it: a slower processor stretches both, while a rank
  // given more data keeps its model-sized work at its peers' speed by at least one. A 3-rank MLP
  // whose rank 0 had 3x the batch (2 loader workers a rank on 2 cores) had its model-sized median
  // calls 1.21x its peers' and their lower quartile 1.70x (AccumulateGrad's smallest calls, 12-23
  // us), its batch-sized ones 3.00x and 2.00x; on the 1,771 ranks of the 27- to 29-series this
  // fires on that rank and on no other; made after it, a 4-rank MLP given 2.5x the batch was named
  // so too (docs/ACCURACY-HISTORY.md, the 30-series, rule 1).
  bool MoreData(double ratio) const {
    if (batch_share_beyond <= 0) return false;
    if (!low_quartile.measured) return median.Larger(ratio);
    CallRatios quartile = low_quartile;
    quartile.model_ratio = std::min(low_quartile.model_ratio, median.model_ratio);
    bool quartile_stands_in = quartile.Larger(ratio) && median.others_largest < ratio;
    return median.Shifted(ratio) && quartile.Shifted(ratio) && (median.Larger(ratio) || quartile_stands_in);
  }
  // More data by its fastest calls alone, for a rank its scheduler preempted no more than its
  // peers' (work_signals.cc asks that first): on shared cores a call longer than the scheduler's
  // slice is preempted on every rank, so its median measures the contention it met, and a rank
  // given more data meets less of it (its peers wait at the collective while it computes alone).
  // Each op's lower quartile, the calls least preempted on every rank, still measures the work.
  // A 5-rank graph network on 2 cores whose rank 3 had graphs 1.8x as large: aten::mm (0.47 of
  // the peers' step, 34 calls of 0.6-7 ms) had its median call 1.08x its peers' and its lower
  // quartile 1.90x, its optimizer step 1.00x.
  bool FastestCallsMoreData(double ratio) const {
    if (batch_share_beyond <= 0 || !low_quartile.measured || !median.measured) return false;
    CallRatios quartile = low_quartile;
    quartile.model_ratio = std::min(low_quartile.model_ratio, median.model_ratio);
    return quartile.Larger(ratio);
  }
};

// Each member's call sizes against the median of the others', for every member at once (one
// pass over the group). Empty for a group that trains on a device: its ops there are the host's
// launches, whose size is not the work's.
std::vector<CallSizes> CompareCallSizes(const WorkerGroup& group);

}  // namespace eroica
