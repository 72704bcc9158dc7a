// How a DataLoader worker process spent a capture window: making batches (torch's worker loop
// calling the dataset, the transforms, the collate) or waiting in its index queue for the next
// batch to make, read from its stack samples (loader_workers.py samples the worker's main thread).
// With its main thread's CPU reading this separates the two ways a busy worker is off the
// processor: queued for one (the node's cores are busy: it is starved) or asleep in its own work
// (a read, a sleep, a lock: it is slow by itself); and workers that spent less of the window
// making batches than training waited for them had the batches ready: that wait was the hand-over.
#pragma once

#include <optional>

#include "summary/stack_samples.h"

namespace eroica {

// Share of the sampled span (0..1) the worker spent making batches: each sample stands for the
// time to the next one (at most a few sampling periods: a worker descheduled for longer is not
// guessed at). nullopt without at least two samples at a known rate.
std::optional<double> BatchMakingShare(const StackSamples& worker);

}  // namespace eroica
