"""Degradation and hang rules on synthetic iteration-time series."""

import random

import pytest

from eroica.detector import (DegradationDetector, HangDetector, captured_pace, cycle_length, cycle_means,
                             held_pace, ran_faster_since)


def feed(detector, series):
    """Returns the indices of the samples at which the detector fired."""
    return [i for i, s in enumerate(series) if detector.add(s) is not None]


def test_step_change_is_detected_within_a_few_iterations():
    series = [0.100] * 200 + [0.200] * 100
    fired = feed(DegradationDetector(), series)
    assert len(fired) == 1
    assert 200 <= fired[0] <= 205  # a 2x step moves the 50-iteration mean 2 % per iteration


def test_small_step_is_detected_later():
    series = [0.100] * 200 + [0.120] * 100
    fired = feed(DegradationDetector(), series)
    assert len(fired) == 1 and 210 <= fired[0] <= 215  # +20 %: 5 % of the window after ~13


def test_slow_drift_is_detected():
    series = [0.100 * (1 + 0.001 * max(0, i - 100)) for i in range(400)]
    fired = feed(DegradationDetector(), series)
    assert len(fired) == 1
    assert 150 <= fired[0] <= 260


@pytest.mark.parametrize("seed", [1, 7])
def test_noise_without_change_is_not_detected(seed):
    rng = random.Random(seed)
    for noise in (0.02, 0.05, 0.10):
        series = [0.100 * max(0.5, rng.gauss(1.0, noise)) for _ in range(20000)]
        assert feed(DegradationDetector(), series) == [], noise


def test_spikes_without_change_are_not_detected():
    # A periodic garbage collection or checkpoint: same period before and after.
    series = [0.5 if i % 25 == 0 else 0.1 for i in range(3000)]
    assert feed(DegradationDetector(), series) == []


def test_warmup_is_ignored():
    # Slow first iterations (compilation, cache warm-up) must not become the baseline...
    series = [1.0] * 20 + [0.1] * 200
    assert feed(DegradationDetector(warmup=20), series) == []
    # ...and they would have been, without the warm-up skip: the baseline then is not the best.
    detector = DegradationDetector(warmup=0)
    feed(detector, series)
    assert detector.best_mean_s == pytest.approx(0.1)


def test_no_verdict_before_a_full_window():
    detector = DegradationDetector(window=50, warmup=0)
    assert feed(detector, [0.1] * 49) == [] and detector.best_mean_s is None
    feed(detector, [0.1])
    assert detector.best_mean_s == pytest.approx(0.1)


def test_cooldown_one_slowdown_one_trigger_and_rearm_after_new_baseline():
    detector = DegradationDetector()
    assert feed(detector, [0.1] * 100 + [0.2] * 300) == [100 + 2]
    assert not detector.armed
    detector.rebaseline()  # after the session: the slow regime is the new normal
    assert feed(detector, [0.2] * 300) == []
    # A further slowdown on top of it triggers again.
    assert len(feed(detector, [0.4] * 50)) == 1


def test_recovery_then_relapse_triggers_again():
    detector = DegradationDetector()
    feed(detector, [0.1] * 100 + [0.2] * 100)
    detector.rebaseline()
    series = [0.2] * 100 + [0.1] * 100 + [0.2] * 100
    assert len(feed(detector, series)) == 1


def test_after_a_session_a_pace_slower_than_it_captured_triggers_again():
    detector = DegradationDetector()
    assert len(feed(detector, [0.1] * 100 + [0.13] * 60)) == 1  # noise, say, fires a session
    # It captured the healthy pace, and the job slowed after its window: a slowdown it did not see.
    detector.rebaseline(captured_pace([0.12, 0.1, 0.1, 0.1, 0.11], detector.window))
    assert len(feed(detector, [0.2] * 300)) == 1
    plain = DegradationDetector()
    feed(plain, [0.1] * 100 + [0.13] * 60)
    plain.rebaseline()  # from nothing, the slowed pace would become the new best
    assert feed(plain, [0.2] * 300) == []
    # It captured the slowed pace (the profiler's cost on top): no second session for it, and a
    # faster pace after it becomes the best, so a relapse fires.
    detector.rebaseline(captured_pace([0.26, 0.21, 0.2, 0.2, 0.2], detector.window))
    assert feed(detector, [0.2] * 300) == []
    assert len(feed(detector, [0.1] * 100 + [0.2] * 100)) == 1
    assert captured_pace([0.1, 0.2], 50) is None  # too few times to say
    # The profiler's start in the first captured time does not widen the noise guard beyond what
    # the clip lets a slowdown add (a 4-rank CPU run slowed 3x after its session's window).
    detector = DegradationDetector(window=20, warmup=10)
    detector.rebaseline(captured_pace([0.025, 0.016, 0.015, 0.0146, 0.0173], detector.window))
    assert len(feed(detector, [0.06] * 40)) == 1


def test_disarm_suppresses_until_rebaseline():
    detector = DegradationDetector()
    feed(detector, [0.1] * 100)
    detector.disarm()
    assert feed(detector, [0.3] * 100) == []


def test_thresholds_are_configurable():
    series = [0.100] * 200 + [0.103] * 200
    assert feed(DegradationDetector(), series) == []
    assert len(feed(DegradationDetector(threshold=1.02, noise_sigmas=0), series)) == 1


def test_degradation_values():
    detector = DegradationDetector(window=10, warmup=0)
    result = None
    for s in [0.1] * 10 + [0.3] * 10:
        result = detector.add(s) or result
    assert result.best_mean_s == pytest.approx(0.1)
    assert result.current_mean_s > 0.105 and result.ratio > 1.05


def test_hang_rule():
    hang = HangDetector(factor=5, min_s=1.0)
    assert not hang.check(7, 100.0, None)  # no mean yet: unknown
    assert not hang.check(7, 0.9, 0.1)  # 5 x 0.1 s passed, but below the floor
    assert hang.check(7, 1.0, 0.1)
    assert not hang.check(7, 50.0, 0.1)  # reported once per iteration
    assert not hang.check(8, 4.9, 1.0)
    assert hang.check(8, 5.0, 1.0)
    assert hang.threshold_s(2.0) == 10.0


def test_step_change_under_noise_is_detected():
    rng = random.Random(3)
    series = [0.1 * rng.gauss(1.0, 0.05) for _ in range(500)]
    series += [0.125 * rng.gauss(1.0, 0.05) for _ in range(200)]
    fired = feed(DegradationDetector(), series)
    assert len(fired) == 1 and 500 <= fired[0] < 540


def test_isolated_pauses_do_not_trigger_but_frequent_stalls_do():
    # A 30 s checkpoint every 300 iterations of 1 s: one clipped sample per window.
    series = [30.0 if i % 300 == 299 else 1.0 for i in range(3000)]
    assert feed(DegradationDetector(), series) == []
    # Without the clip, the same pauses look like a 60 % slowdown.
    assert feed(DegradationDetector(clip=0), series) != []
    # A stall every 10th iteration (a flapping link) is a real slowdown and still fires.
    series = [1.0] * 200 + [10.0 if i % 10 == 0 else 1.0 for i in range(200)]
    fired = feed(DegradationDetector(), series)
    assert len(fired) == 1 and fired[0] < 240


def test_the_held_pace_is_the_slower_of_the_captured_and_the_one_before():
    # The CI job as measured: steps at 12 or 16 ms, 14 ms on average before its session, its
    # 5 captured steps at 12.0-12.9 after the profiler's first (18.8).
    captured = captured_pace([0.0188, 0.0126, 0.0120, 0.0129, 0.0125], window=50)
    # (Alternating exactly, the steps would read as cycles of two: the pace rule is tested here.)
    before_times = [0.012, 0.016] * 13
    d = DegradationDetector(window=50, warmup=0, max_cycle=1)
    for t in before_times:
        d.add(t)
    before = d.current_pace()
    assert before[0] == pytest.approx(0.014) and before[1] > captured[1]
    assert held_pace(captured, before) == (before[0], before[1])
    # Held to the captured pace alone, the job's usual 14 ms is a slowdown; held to the slower,
    # it is not, and a real one after the session still is.
    for pace, fires_at_usual in ((captured, True), (held_pace(captured, before), False)):
        usual = DegradationDetector(window=50, warmup=0, max_cycle=1)
        usual.rebaseline(pace)
        fired = [usual.add(t) for t in [0.012, 0.016] * 30]
        assert any(fired) == fires_at_usual
        slowed = DegradationDetector(window=50, warmup=0, max_cycle=1)
        slowed.rebaseline(pace)
        assert any(slowed.add(t) for t in [0.024, 0.032] * 30)
    # A slowdown's session: the captured pace is the slower, and is kept.
    assert held_pace((0.050, 0.001), (0.030, 0.002)) == (0.050, 0.002)
    assert held_pace(None, (0.030, 0.002)) == (0.030, 0.002)
    assert held_pace(None, None) is None
    assert DegradationDetector(window=5, warmup=0).current_pace() is None


def test_a_job_is_faster_than_before_its_baseline_only_by_the_rule_turned_around():
    # 200 ms before the baseline, 80 ms now (the text job after its first window): faster.
    assert ran_faster_since((0.200, 0.004), (0.080, 0.002), 1.05, 10.0)
    # 4 % faster: under the threshold.
    assert not ran_faster_since((0.104, 0.0001), (0.100, 0.0001), 1.05, 10.0)
    # 20 % faster but within 10 standard errors of the noisier window.
    assert not ran_faster_since((0.120, 0.003), (0.100, 0.001), 1.05, 10.0)
    assert ran_faster_since((0.120, 0.0019), (0.100, 0.001), 1.05, 10.0)
    # The best window is never slower than the window before it was the best.
    assert not ran_faster_since((0.100, 0.001), (0.100, 0.001), 1.05, 10.0)
    d = DegradationDetector(window=5, warmup=0)
    assert d.best_pace() is None
    for t in [0.1, 0.12] * 3:
        d.add(t)
    mean, sem = d.best_pace()
    assert mean == pytest.approx(0.11, rel=0.1) and sem > 0


def feed_with_cpu(detector, times, cpus, faults=None):
    """feed() with the training thread's CPU time and page faults (none unless given) per
    iteration; returns (index, Degradation) where it fired."""
    faults = faults or [0] * len(times)
    return [(i, d) for i, d in enumerate(detector.add(*sample) for sample in zip(times, cpus, faults)) if d]


def noisy(rng, mean, spread, n):
    return [mean * max(0.3, rng.gauss(1.0, spread)) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_more_own_work_is_a_slowdown_where_noisy_times_hide_it(seed):
    # A step of 100 ms with 30 % noise, a third of it the training thread's CPU time (2 % noise);
    # from iteration 300 it runs 20 ms more Python a step: 20 % of a step, below the noise guard.
    rng = random.Random(seed)
    times = noisy(rng, 0.100, 0.3, 300) + noisy(rng, 0.120, 0.3, 300)
    cpus = noisy(rng, 0.033, 0.02, 300) + noisy(rng, 0.053, 0.02, 300)
    assert feed(DegradationDetector(), times) == []  # by time alone, hidden
    fired = feed_with_cpu(DegradationDetector(), times, cpus)
    assert len(fired) == 1 and fired[0][0] >= 300
    index, degradation = fired[0]
    assert degradation.by_cpu
    assert degradation.current_cpu_s - degradation.best_cpu_s > 0.15 * degradation.best_mean_s


@pytest.mark.parametrize("seed", [1, 2])
def test_a_wandering_pace_with_the_same_own_work_is_no_slowdown(seed):
    # The machine's load moves: iterations run 12 % slower for a while, the CPU time the same (a
    # healthy 3-rank CNN's windows went from 29.5 to 35.9 ms while its threads' CPU time held).
    rng = random.Random(seed)
    times = noisy(rng, 0.100, 0.3, 300) + noisy(rng, 0.112, 0.3, 100) + noisy(rng, 0.100, 0.3, 300)
    cpus = noisy(rng, 0.033, 0.05, 700)
    assert feed(DegradationDetector(), times) == []
    assert feed_with_cpu(DegradationDetector(), times, cpus) == []


def test_own_work_counts_only_where_the_job_got_slower_by_it():
    rng = random.Random(4)
    # More CPU time that overlaps waiting (a GPU job's host ahead of its device, 2 % noise): the
    # step's time unchanged, no slowdown. (On a noisy series the time's condition alone is weak,
    # its best window sits a few standard errors low: there the CPU time decides.)
    times = noisy(rng, 0.100, 0.02, 600)
    cpus = noisy(rng, 0.033, 0.02, 300) + noisy(rng, 0.053, 0.02, 300)
    assert feed_with_cpu(DegradationDetector(), times, cpus) == []
    # The step slower by 12 % with 3 % of a step more CPU time: what the thread did explains
    # too little of it, and by time alone the noise guard holds.
    times = noisy(rng, 0.100, 0.3, 300) + noisy(rng, 0.112, 0.3, 300)
    cpus = noisy(rng, 0.033, 0.02, 300) + noisy(rng, 0.036, 0.02, 300)
    assert feed_with_cpu(DegradationDetector(), times, cpus) == []
    # A rebaseline forgets the CPU time's best as well: the slower work is the new normal.
    detector = DegradationDetector()
    feed_with_cpu(detector, noisy(rng, 0.100, 0.3, 300), noisy(rng, 0.033, 0.02, 300))
    detector.rebaseline()
    assert feed_with_cpu(detector, noisy(rng, 0.112, 0.3, 300), noisy(rng, 0.045, 0.02, 300)) == []


def test_own_work_that_came_with_page_faults_is_left_to_the_time_rule():
    # A rank whose allocator began handing out fresh pages: ~9,300 minor faults an iteration and
    # its thread's CPU time from 30 to 130 ms, the step's time (already waiting on others) up 10 %.
    rng = random.Random(6)
    times = noisy(rng, 0.180, 0.3, 300) + noisy(rng, 0.198, 0.3, 300)
    cpus = noisy(rng, 0.030, 0.05, 300) + noisy(rng, 0.130, 0.05, 300)
    faulting = [rng.choice((0, 0, 1)) for _ in range(300)] + [9343] * 300
    assert feed_with_cpu(DegradationDetector(), times, cpus, faulting) == []
    assert len(feed_with_cpu(DegradationDetector(), times, cpus)) == 1  # the same, without faults
    # A thread that always faults about as much is judged by its CPU time as any.
    steady = [rng.randint(80, 120) for _ in range(600)]
    assert len(feed_with_cpu(DegradationDetector(), times, cpus, steady)) == 1


def test_a_thread_whose_cpu_time_more_than_doubles_is_not_clipped_out_of_the_rule():
    # 1 ms of CPU time in a noisy 25 ms step, then 5 ms more Python: the clip weighs a sample
    # in steps (2 x the best iteration), not in multiples of the thread's own small CPU time.
    rng = random.Random(8)
    times = noisy(rng, 0.025, 0.3, 200) + noisy(rng, 0.030, 0.3, 200)
    cpus = noisy(rng, 0.001, 0.1, 200) + noisy(rng, 0.006, 0.1, 200)
    fired = feed_with_cpu(DegradationDetector(window=20, warmup=10), times, cpus)
    assert len(fired) == 1 and fired[0][1].by_cpu and fired[0][0] >= 200, fired


def test_cpu_time_in_bursts_moves_the_mean_not_the_typical_iteration():
    # A healthy 4-rank CNN with loader workers: its thread's CPU time of 11 ms a step rose by
    # 25 ms on every other step for a while (a 50 ms step; 15 such steps lift a window's mean
    # 15 % of a step above its best). Work the code does every iteration moves the median too.
    rng = random.Random(9)
    times = noisy(rng, 0.050, 0.3, 600)
    base = noisy(rng, 0.011, 0.05, 600)
    bursts = [c + (0.025 if 200 <= i < 230 and i % 2 == 0 else 0.0) for i, c in enumerate(base)]
    assert feed_with_cpu(DegradationDetector(cpu_threshold=0.1), times, bursts) == []
    times = times[:200] + [t + 0.006 for t in times[200:]]
    steady = [c + (0.012 if i >= 200 else 0.0) for i, c in enumerate(base)]
    fired = feed_with_cpu(DegradationDetector(cpu_threshold=0.1), times, steady)
    assert len(fired) == 1 and fired[0][1].by_cpu, fired


def test_a_slowdown_that_came_with_page_faults_says_so():
    # 64 MB of fresh pages a step from iteration 200: 16,384 more faults and 40 ms more a step.
    times = [0.100] * 200 + [0.140] * 100
    faults = [3] * 200 + [16387] * 100
    fired = feed_with_cpu(DegradationDetector(), times, [0.03] * 300, faults)
    assert len(fired) == 1 and not fired[0][1].by_cpu
    assert fired[0][1].best_faults == pytest.approx(3) and fired[0][1].current_faults > 1000
    plain = feed_with_cpu(DegradationDetector(), times, [0.03] * 300)  # no more faults: nothing said
    assert len(plain) == 1 and plain[0][1].current_faults is None


def ppo(rng, n_cycles, rollout_s=0.060, update_s=0.012, noise=0.15):
    """An unseen PPO job's iterations, as eroica counts them (one per optimizer step): the rollout
    and the first update in one, three more updates after it, each with `noise` of itself."""
    out = []
    for _ in range(n_cycles):
        out.append(rollout_s * max(0.3, rng.gauss(1, noise)))
        out += [update_s * max(0.3, rng.gauss(1, noise)) for _ in range(3)]
    return out


def test_the_period_iterations_repeat_is_read_and_noise_has_none():
    rng = random.Random(7)
    assert cycle_length(ppo(rng, 13)) == 4
    assert cycle_length([0.06, 0.01] * 25) == 2
    # Noise alone (30 % of a step): a period about once in a hundred windows of 50 at the first
    # window's bar, once in thirty series of 200 at the fourth's.
    found = sum(cycle_length([0.1 * max(0.3, rng.gauss(1, 0.3)) for _ in range(50)]) > 1 for _ in range(300))
    assert found <= 9, found
    found = sum(cycle_length([0.1 * max(0.3, rng.gauss(1, 0.3)) for _ in range(200)], ratio=0.5,
                             min_cycles=25) > 1 for _ in range(300))
    assert found <= 20, found
    # The job's healthy iterations on busy cores: a rollout of 30-38 ms, updates 7-22 ms (the
    # pattern half their variance). Not at the first window's bar; at the fourth's.
    weak = ppo(rng, 50, rollout_s=0.033, update_s=0.015, noise=0.3)
    assert cycle_length(weak[:50]) == 1
    assert cycle_length(weak, ratio=0.5, min_cycles=25) == 4
    # One long iteration now and then (a checkpoint), a constant pace, a pattern within 5 %: none.
    assert cycle_length([1.0] * 24 + [30.0] + [1.0] * 25) == 1
    assert cycle_length([0.1] * 50) == 1
    assert cycle_length([0.100, 0.104] * 25) == 1
    times = [0.06, 0.01, 0.01, 0.02, 0.07, 0.01, 0.01, 0.01, 0.5]
    assert cycle_means(times, 4) == pytest.approx([0.025, 0.025])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_slower_rollout_is_a_slowdown_read_over_whole_cycles(seed):
    # The PPO job's rollout 1.35x longer from cycle 100 on: the step 1.25x. Read as single
    # iterations, the clip (2x the mean iteration) cuts the rollout whatever it grows by, and the
    # noise guard holds the pattern's spread for noise: no session, as in 7 of 10 such runs (5 of
    # them 1.12-1.56x slower). Read over whole cycles (a window of 50 of them), it is found.
    rng = random.Random(seed)
    times = ppo(rng, 100) + ppo(rng, 100, rollout_s=0.081)
    assert feed(DegradationDetector(max_cycle=1), times) == []
    detector = DegradationDetector()
    fired = feed(detector, times)
    assert detector.cycle == 4
    assert len(fired) == 1 and 400 <= fired[0] < 400 + 4 * 50, fired  # within a window of cycles
    # The same job healthy throughout: nothing.
    healthy = DegradationDetector()
    assert feed(healthy, ppo(rng, 200)) == [] and healthy.cycle == 4
    # Its pace is the mean iteration: a quarter of a cycle.
    assert healthy.best_mean_s == pytest.approx((0.060 + 3 * 0.012) / 4, rel=0.1)


def test_a_collection_in_one_iteration_of_every_cycle_is_found_though_the_pattern_was_weak():
    # The PPO job whose every rank built reference cycles and collected them each step (4-5 ranks):
    # healthy, a rollout of ~33 ms and updates of ~15 ms with 30 % noise; then 80 ms more in the
    # step's last update. Read one by one, the clip cut it to 2x the mean iteration and the noise
    # guard held it: no session though the job ran 1.56x and 1.76x slower (batches A and B, 5
    # and 4 ranks). The period is read at the fourth window, and the collection is then a
    # slower cycle.
    rng = random.Random(11)
    healthy = ppo(rng, 75, rollout_s=0.033, update_s=0.015, noise=0.3)
    faulty = []
    for _ in range(75):
        cycle = ppo(rng, 1, rollout_s=0.033, update_s=0.015, noise=0.3)
        cycle[3] += 0.080
        faulty += cycle
    assert feed(DegradationDetector(max_cycle=1), healthy + faulty) == []
    detector = DegradationDetector()
    fired = feed(detector, healthy + faulty)
    # A weak pattern reads its own length in about three of four series (cycle_length), another
    # now and then (6 here): blocks of whole iterations either way, and the slower ones show.
    assert detector.cycle > 1 and len(fired) == 1 and fired[0] >= 300, fired
    # Healthy all along: read as cycles from the fourth window, nothing.
    quiet = DegradationDetector()
    assert feed(quiet, ppo(rng, 150, rollout_s=0.033, update_s=0.015, noise=0.3)) == [] and quiet.cycle > 1
