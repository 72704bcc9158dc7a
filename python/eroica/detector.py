"""Slowdown and hang detection on a series of iteration times. Pure logic, no clocks.

Degradation (the paper's rule): the mean of the last `window` iterations exceeds `threshold`
times the best such mean seen after `warmup` iterations. One extra guard: the excess must also
exceed `noise_sigmas` standard errors of the best window, because the minimum of many noisy
window means sits below the true mean and a noisy series would otherwise trigger on noise.
Where the guard hides a slowdown in a noisy series, the training thread's CPU time per iteration
can still show it (DegradationDetector's docstring).

Isolated outliers: a sample above `clip` times the best mean counts as `clip` times the best
mean. A checkpoint save or an evaluation pause inside the loop makes one huge "iteration";
unclipped, one 30 s pause among 1 s iterations would lift the 50-iteration mean by 60 % and
trigger a session for nothing. Clipped at 2x it adds 2 %. A sustained slowdown still fires
(every sample is at least the slowed time, up to the clip), and so do frequent stalls.

Cycles: a job may take several optimizer steps a step of its own (PPO's minibatch updates after
each rollout, k critic steps a generator step), and its iterations then repeat a pattern: one long
(the rollout) and several short. A window's standard error read as if its iterations were
independent is then the pattern's spread, not noise, and the clip cuts the long one whatever it
grows by: 7 of an unseen 4-6-rank PPO job's 10 faulty runs (4 updates a rollout, 2 cores) got no
session after the onset, 5 of them 1.12-1.56x slower. So after the first warm-up the detector reads
whether its samples repeat with a period of 2 to `max_cycle` iterations (`cycle_length`): from
its first window, where the pattern holds 9/10 of their variance (then an automatic baseline,
taken as that window fills, already captures whole cycles), else from its first four windows,
where it holds half (that job's healthy iterations, before its faults: a rollout of 30-38 ms,
its updates 7-22 ms; the pattern held 0.48-0.56 of their variance in three windows of 50); a
baseline kept before (runtime.py, _check_cycle_read) is then taken again in whole cycles. Where
they repeat, every rule reads whole cycles: a sample is a cycle's mean iteration (in any phase a
cycle holds one of each), a window `window` cycles (the job's own steps: read as a quarter as
many, 12 cycles of that job, their noise held a rollout 1.35x as long under the guard).

Cool-down: after it fires the detector stays disarmed until `rebaseline()`, which forgets the
old baseline and measures a new one (warm-up, then a full window). One slowdown therefore
gives one session, and a further slowdown on top of it gives another. After a captured session
the new baseline starts from the pace the session captured (`captured_pace`), or the pace just
before it where that was slower (`held_pace`): the session has seen that pace, and a pace
slower than it by the threshold is a slowdown it did not see, one that began after its window.
Without that a session on noise just before a real slowdown made the slowed pace the new best
(a CI run: a session on noise captured iterations 110-114, every rank slowed from 120 on,
inside the new warm-up and window, and no session followed).
"""

import collections
import dataclasses
import math
import statistics
from typing import Optional, Tuple

# Running sums drift by rounding; recompute them exactly this often (in samples).
_RESUM_EVERY = 4096


@dataclasses.dataclass(frozen=True)
class Degradation:
    sample_index: int  # index of the sample (since the last rebaseline) that fired
    best_mean_s: float
    current_mean_s: float
    # Set when the training thread's CPU time per iteration fired it (see DegradationDetector).
    best_cpu_s: Optional[float] = None
    current_cpu_s: Optional[float] = None
    # The thread's page faults per iteration, its best window's and now, where they rose (by
    # the CPU rule's check): memory the step touches came fresh from the system each time.
    best_faults: Optional[float] = None
    current_faults: Optional[float] = None

    @property
    def ratio(self) -> float:
        return self.current_mean_s / self.best_mean_s if self.best_mean_s > 0 else math.inf

    @property
    def by_cpu(self) -> bool:
        return self.current_cpu_s is not None


class _Windows:
    """One series: its last `window` samples with running sums, and the best (lowest) full
    window's mean with that window's standard error; with `median_every`, also the lowest median
    of the full windows seen every that many samples (a median costs a sort of the window)."""

    def __init__(self, window: int, pace: Optional[Tuple[float, float]] = None,
                 median_every: int = 0):
        self.window = window
        self.median_every = median_every
        self.until_median = 0
        self.best_median_s: Optional[float] = None
        self.samples = collections.deque()
        self.sum_s = 0.0
        self.sum_sq = 0.0
        self.until_resum = _RESUM_EVERY
        self.best_mean_s: Optional[float] = pace[0] if pace else None
        self.best_sem_s = pace[1] if pace else 0.0

    def add(self, sample_s: float, cap: Optional[float]) -> Tuple[Optional[float], bool]:
        """Adds a sample (at most `cap`; None: no cap); returns the window's mean once the
        window is full (else None), and whether that mean is the new best."""
        best = self.best_mean_s
        if cap is not None and sample_s > cap:
            sample_s = cap
        samples = self.samples
        samples.append(sample_s)
        self.sum_s += sample_s
        self.sum_sq += sample_s * sample_s
        n = len(samples)
        if n > self.window:
            old = samples.popleft()
            self.sum_s -= old
            self.sum_sq -= old * old
            n -= 1
            self.until_resum -= 1
            if self.until_resum <= 0:
                self.sum_s = math.fsum(samples)
                self.sum_sq = math.fsum(x * x for x in samples)
                self.until_resum = _RESUM_EVERY
        elif n < self.window:
            return None, False
        if self.median_every:
            self.until_median -= 1
            if self.until_median <= 0:
                self.until_median = self.median_every
                median_s = self.median()
                if self.best_median_s is None or median_s < self.best_median_s:
                    self.best_median_s = median_s
        mean_s = self.sum_s / n
        if best is None or mean_s < best:
            self.best_mean_s = mean_s
            self.best_sem_s = self.sem(mean_s)
            return mean_s, True
        return mean_s, False

    def median(self) -> float:
        return statistics.median(self.samples)

    def sem(self, mean_s: float) -> float:
        n = len(self.samples)
        variance = max(0.0, (self.sum_sq - self.sum_s * mean_s) / (n - 1))
        return math.sqrt(variance / n)


def _mean_and_variance(xs) -> Tuple[float, float]:
    """The mean and the sample variance (n - 1) of at least two values."""
    m = math.fsum(xs) / len(xs)
    return m, math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def cycle_length(samples_s, max_cycle: int = 8, min_spread: float = 0.05, ratio: float = 0.1,
                 min_cycles: int = 6) -> int:
    """The period, in iterations, of a pattern the samples repeat (1: none). A length p in
    2..max_cycle passes where the non-overlapping sums of p vary by less than `ratio` of what p
    independent iterations would (the pattern holding over 1 - ratio of the iterations'
    variance), read over at least `min_cycles` whole cycles; of those that pass, the one whose
    sums leave least, or its shortest divisor that passes too (below). One long iteration (a
    collection, a checkpoint) lifts a sum as much as it lifts the iterations, so it is no
    pattern; nor is a spread under `min_spread` of the mean (the degradation rule's own step,
    5 %), which cannot hide a slowdown from it.

    Measured on synthetic series (tests/test_detector.py draws them): noise alone (30 % of a
    step) read a period in 9 of 1,000 series of 50 at 0.1 over 6 cycles, in 31 of 1,000 series
    of 200 at 0.5 over 25 (a block of independent iterations read as a cycle is still a fair
    sample, only a coarser one); the PPO job's strong pattern (a rollout 5x an update) read 4 in
    487 of 500 first windows, its weak healthy one (the module docstring's) 4 in 368 of 500
    fourth windows (another length in 113, none in 19). The 28 windows of 200 iterations its
    real runs' sessions held from iteration 500 on (faulty and healthy runs) read 4 in 18, none
    in 10."""
    samples = list(samples_s)
    if len(samples) < 2 * min_cycles:
        return 1
    mean, single = _mean_and_variance(samples)
    if mean <= 0 or single <= (min_spread * mean) ** 2:
        return 1
    left = {}  # p: the share of the iterations' variance that sums of p leave
    for p in range(2, max_cycle + 1):
        cycles = len(samples) // p
        if cycles < min_cycles:
            break
        sums = [math.fsum(samples[i * p:(i + 1) * p]) for i in range(cycles)]
        left[p] = _mean_and_variance(sums)[1] / (p * single)
    passing = [p for p in left if left[p] < ratio]
    if not passing:
        return 1
    # The period cancels the pattern and leaves the noise; so does any multiple of it, while a
    # length that is not one leaves part of the pattern (about 1/p of a strong one: sums of 3 of a
    # 4-iteration cycle hold its long iteration in 3 of 4 sums). So the length that leaves least,
    # or its shortest divisor that passes too: the shortest passing length had read 3 where the
    # PPO job's runs repeated every 4 (3 left 0.49, 4 left 0.20).
    best = min(passing, key=lambda p: left[p])
    return min(p for p in passing if best % p == 0)


def cycle_means(times_s, cycle: int):
    """The mean iteration of each whole cycle of `cycle` iterations in `times_s` (in any phase, a
    cycle holds one iteration of each kind); the times themselves where cycle is 1."""
    times = list(times_s)
    if cycle <= 1:
        return times
    return [math.fsum(times[i:i + cycle]) / cycle for i in range(0, len(times) - cycle + 1, cycle)]


class DegradationDetector:
    """The paper's rule on iteration times, with a noise guard; and, where the caller gives the
    training thread's CPU time and page faults per iteration (`add`), a second reading of it.

    On CPU training sharing busy cores a healthy job's 50-iteration means wander 7-20 % above
    their best over a few hundred iterations (the machine's load moves; up to 8.9 standard
    errors in 6 healthy 3-6-rank testbed runs of 350 iterations), so the noise guard hides
    slowdowns of that size, and no estimate of the noise can tell them apart by time alone. The
    training thread's own CPU time per iteration counts no waiting, and work the code does in
    every iteration raises it in every iteration: the window's mean and its median alike. On
    this 2-core VM, in 10 long healthy testbed runs (and a faulty run's healthy stretch) the
    smaller of the two rose at most 10 % of a step above its best window (a transformer's, whose
    thread took 18 ms of CPU time a step in some stretches and 29 ms in others at the same step
    time; why is not measured), the mean alone up to 12 % (a CNN with loader workers: 25 ms more
    on every other step for a while); faults of the thread's own work raised both 10-18 % of a
    step (light Python on every rank), 15-17 % (a busy Python thread beside it, an evaluation
    pass) and 64-175 % (hot loops, GC storms), an unseen text job's forward hook about 20 %. So
    a job is also slower where its iterations run `threshold` above their best (no time guard)
    and the thread's CPU time per iteration, its window's mean and its median, run above their
    best windows' by `cpu_threshold` of a step (0.15: half again the healthy 10 %), the mean
    also by `noise_sigmas` standard errors: the job got slower, and its own work says by how
    much. Waiting (a stall, a slower peer) adds no CPU time and still needs the time rule; extra
    work that overlaps waiting, leaving the step's time unchanged, is no slowdown. The median is
    taken every fifth of a window (a sort of the window).

    Unless the thread's page faults per iteration rose with it: then the CPU time is the
    kernel's and the memory's, not more of the thread's code. In the text job (4 ranks on 2
    cores) ranks took ~9,300 minor faults an iteration for a while (glibc handing its 12.8 MB
    temporaries out as fresh pages), their threads at 130-190 ms of CPU time an iteration (60-80
    ms of it in the kernel) against 30-40 ms without them; one rank going into that state after
    eroica's first window set off a session on a healthy run. The hook's loop added 17 ms an
    iteration and no faults. Left to the time rule, such a slowdown carries the faults
    (`Degradation.current_faults`) for the diagnosis to say."""

    def __init__(self, window: int = 50, threshold: float = 1.05, warmup: int = 20,
                 noise_sigmas: float = 10.0, clip: float = 2.0, cpu_threshold: float = 0.15,
                 max_cycle: int = 8):
        if window < 2:
            raise ValueError("window must be >= 2")
        self.window = window
        self.threshold = threshold
        self.warmup = warmup
        self.noise_sigmas = noise_sigmas
        self.clip = clip  # 0: off
        self.cpu_threshold = cpu_threshold  # 0: off
        # The period the iterations repeat (module docstring, "Cycles"): read from the samples
        # after the first warm-up, at the first window and at the fourth, and kept: a job's
        # structure stays.
        self.max_cycle = max_cycle
        self.cycle = 1
        self._probe = [] if max_cycle >= 2 else None  # (time, cpu, faults) until the period is read
        self._probe_since = 0  # the probe's first sample since the last rebaseline
        self.rebaseline()

    def rebaseline(self, pace: Optional[Tuple[float, float]] = None) -> None:
        """Forgets the baseline and re-arms; the next `warmup` samples are ignored. `pace`
        (mean, standard error; `captured_pace`) is where the new baseline starts: the windows
        that follow are held to it, and the best of them replaces it only when faster. The CPU
        time's best starts afresh (a profiled window's CPU time is no pace of the job's)."""
        self._skip = self.warmup
        self._pace = pace
        if self._probe is not None:
            self._probe_since = len(self._probe)
        self._new_windows(pace)
        self._armed = True
        self._seen = 0
        self._partial = []  # this cycle's samples so far

    def _new_windows(self, pace: Optional[Tuple[float, float]] = None) -> None:
        window = self.window  # of samples: iterations, or where they repeat a cycle, cycles
        self._time = _Windows(window, pace)
        self._cpu = _Windows(window, median_every=max(1, window // 5))
        self._faults = _Windows(window)

    def disarm(self) -> None:
        """Stops firing until the next rebaseline (a session is already on its way)."""
        self._armed = False

    @property
    def armed(self) -> bool:
        return self._armed

    @property
    def best_mean_s(self) -> Optional[float]:
        return self._time.best_mean_s

    @property
    def current_mean_s(self) -> Optional[float]:
        n = len(self._time.samples)
        return self._time.sum_s / n if n else None

    def best_pace(self) -> Optional[Tuple[float, float]]:
        """The best window's mean and its standard error (as `rebaseline` takes a pace)."""
        t = self._time
        return (t.best_mean_s, t.best_sem_s) if t.best_mean_s is not None else None

    def current_pace(self) -> Optional[Tuple[float, float]]:
        """The mean of the samples in the window now and its standard error (as `rebaseline`
        takes a pace); None under 3 samples."""
        n = len(self._time.samples)
        if n < 3:
            return None
        mean_s = self._time.sum_s / n
        return mean_s, self._time.sem(mean_s)

    def add(self, iteration_s: float, cpu_s: Optional[float] = None,
            page_faults: Optional[int] = None) -> Optional[Degradation]:
        """Adds one iteration's time, and the training thread's CPU time and page faults in it
        where measured (both or neither; for every iteration or for none); returns a
        Degradation the moment a rule first holds."""
        self._seen += 1
        if self._skip > 0:
            self._skip -= 1
            return None
        if self._probe is not None:
            self._probe.append((iteration_s, cpu_s, page_faults))
            n, cycle = len(self._probe), 1
            if n == self.window:
                cycle = cycle_length([t for t, _, _ in self._probe], self.max_cycle, self.threshold - 1)
            elif n == 4 * self.window:
                cycle = cycle_length([t for t, _, _ in self._probe], self.max_cycle, self.threshold - 1,
                                     ratio=0.5, min_cycles=25)
                if cycle == 1:
                    self._probe = None  # no cycle: iterations, as read all along
            if cycle == 1:
                return self._add_sample(iteration_s, cpu_s, page_faults)
            probe, self._probe = self._probe[self._probe_since:], None
            self.cycle = cycle
            # Read again as cycles since the last rebaseline, against the pace it was given, the
            # partial cycle at the end kept.
            self._new_windows(self._pace)
            whole = len(probe) - len(probe) % self.cycle
            fired = None
            for i in range(0, whole, self.cycle):
                fired = self._add_cycle(probe[i:i + self.cycle]) or fired
            self._partial = probe[whole:]
            return fired
        if self.cycle == 1:
            return self._add_sample(iteration_s, cpu_s, page_faults)
        self._partial.append((iteration_s, cpu_s, page_faults))
        if len(self._partial) < self.cycle:
            return None
        cycle, self._partial = self._partial, []
        return self._add_cycle(cycle)

    def _add_cycle(self, cycle) -> Optional[Degradation]:
        """One whole cycle, as its mean iteration (its CPU time and faults where all were read)."""
        n = len(cycle)
        time_s = math.fsum(t for t, _, _ in cycle) / n
        if any(c is None or f is None for _, c, f in cycle):
            return self._add_sample(time_s, None, None)
        cpu_s = math.fsum(c for _, c, _ in cycle) / n
        return self._add_sample(time_s, cpu_s, sum(f for _, _, f in cycle) / n)

    def _add_sample(self, iteration_s: float, cpu_s: Optional[float],
                    page_faults: Optional[float]) -> Optional[Degradation]:
        # One iteration weighs at most `clip` best iterations, its CPU time too: a step's worth
        # is the unit of both rules (a thread whose CPU time is a small share of its step may
        # well more than double it by a slowdown).
        best = self._time.best_mean_s
        cap = self.clip * best if self.clip and best is not None else None
        mean_s, new_best = self._time.add(iteration_s, cap)
        cpu_mean_s = faults_mean = None
        if cpu_s is not None and page_faults is not None:
            cpu_mean_s = self._cpu.add(cpu_s, cap)[0]
            faults_mean = self._faults.add(float(page_faults), None)[0]
        if mean_s is None or new_best or not self._armed:
            return None
        best = self._time.best_mean_s
        if mean_s <= self.threshold * best:
            return None
        faults = self._faults
        # More faults than the fewest a window had, beyond its noise and one an iteration.
        faults_rose = (faults_mean is not None and faults.best_mean_s is not None
                       and faults_mean > faults.best_mean_s + self.noise_sigmas * faults.best_sem_s + 1.0)
        if mean_s - best > self.noise_sigmas * self._time.best_sem_s:
            self._armed = False
            fresh = (faults.best_mean_s, faults_mean) if faults_rose else (None, None)
            return Degradation(self._seen - 1, best, mean_s, best_faults=fresh[0], current_faults=fresh[1])
        cpu = self._cpu
        if not self.cpu_threshold or cpu_mean_s is None or cpu.best_mean_s is None or faults_rose:
            return None
        excess_s, bar_s = cpu_mean_s - cpu.best_mean_s, self.cpu_threshold * best
        if excess_s <= bar_s or excess_s <= self.noise_sigmas * cpu.best_sem_s:
            return None
        # And in the window's typical iteration, not in a few: work the code does every
        # iteration moves the median as much as the mean, bursts (a collection now and then,
        # a worker's batch handed over) move the mean only.
        if cpu.best_median_s is None or cpu.median() - cpu.best_median_s <= bar_s:
            return None
        self._armed = False
        return Degradation(self._seen - 1, best, mean_s, cpu.best_mean_s, cpu_mean_s)


def captured_pace(times_s, window: int) -> Optional[Tuple[float, float]]:
    """The pace a session's window ran at, for `rebaseline`: the median of its iteration times
    and the standard error a mean of `window` such times would have, their spread read from the
    median absolute deviation. The first time carries the profiler's start: a 4-rank CPU run's
    ranks captured times of about 15-27 ms with plain standard errors of 2.4-3.0 ms over their
    5, and 10 of those (the noise guard) stood above the 17 ms that the 2x clip lets any
    slowdown add, so a job slowed 3x after the session was never detected. None under 3
    times. The profiler's own cost makes the pace slower than the job's, which only raises the
    bar."""
    times = [t for t in times_s if t > 0]
    if len(times) < 3 or window < 1:
        return None
    median = statistics.median(times)
    spread = 1.4826 * statistics.median(abs(t - median) for t in times)
    return median, spread / math.sqrt(window)


def held_pace(captured: Optional[Tuple[float, float]],
              before: Optional[Tuple[float, float]]) -> Optional[Tuple[float, float]]:
    """The pace a job is held to after a session: the slower of the pace its window captured and
    the detector's window just before the session began, with the larger standard error. A few
    captured iterations need not show a job's pace: a 2-rank CI job ran its steps at 12 or 16 ms
    (14 ms on average over the 26 before its session), its 5 captured steps at 12.0-12.9 after the
    profiler's first; held to 12.6 ms with their 0.06 ms error, its usual 14 ms set off a second
    session. Neither is the slowed pace of a slowdown that began after the window."""
    paces = [p for p in (captured, before) if p is not None]
    if not paces:
        return None
    return max(p[0] for p in paces), max(p[1] for p in paces)


def ran_faster_since(before: Tuple[float, float], best: Tuple[float, float], threshold: float,
                     noise_sigmas: float) -> bool:
    """Whether the job's best window now runs faster than the window before its baseline, by the
    degradation rule turned around: `before` above `threshold` times `best` and above it by
    `noise_sigmas` of the larger standard error. Both are unprofiled windows of the detector's,
    so the profiler's own cost in the baseline's window does not count. A baseline is how the
    job runs at its best; one taken before the job sped up reads every later session as faster.
    An unseen 4-rank text job (gloo, 2 cores) ran 180-250 ms steps without eroica and after
    eroica's first window 75-85 ms: the window freed a buffer large enough to raise glibc's
    dynamic mmap threshold, so the job's 12.8 MB gradients and optimizer temporaries came from
    the heap from then on instead of fresh zeroed pages (with MALLOC_MMAP_THRESHOLD_ fixed at
    32 MB, 120 ms from the start)."""
    return before[0] > threshold * best[0] and before[0] - best[0] > noise_sigmas * max(before[1], best[1])


def still_speeding_up(samples_s, sigmas: float = 2.0) -> bool:
    """True while iteration times are still falling: the newer half of `samples_s` is faster
    than the older half by more than `sigmas` standard errors of that difference. Warm-up
    (allocator growth, autotuning, the loader filling its prefetch queue) ends when it stops;
    a baseline taken earlier would make every later iteration look fast."""
    samples = list(samples_s)
    half = len(samples) // 2
    if half < 3:
        return False
    older, newer = samples[:half], samples[-half:]
    m_old, v_old = _mean_and_variance(older)
    m_new, v_new = _mean_and_variance(newer)
    return m_old - m_new > sigmas * math.sqrt(v_old / half + v_new / half)


class HangDetector:
    """An iteration is hung once it has run >= max(factor x mean iteration, min_s).

    Fires at most once per iteration id, so a long hang is reported once.
    """

    def __init__(self, factor: float = 5.0, min_s: float = 30.0):
        self.factor = factor
        self.min_s = min_s
        self._fired_iteration: Optional[int] = None

    def threshold_s(self, mean_iteration_s: float) -> float:
        return max(self.factor * mean_iteration_s, self.min_s)

    def check(self, iteration: int, running_s: float,
              mean_iteration_s: Optional[float]) -> bool:
        if mean_iteration_s is None or iteration == self._fired_iteration:
            return False
        if running_s >= self.threshold_s(mean_iteration_s):
            self._fired_iteration = iteration
            return True
        return False
