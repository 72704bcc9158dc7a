// A sampling loop: a thread that wakes at a fixed rate (CLOCK_MONOTONIC, absolute deadlines,
// so it does not drift), lets each due collector Sample(), then Emit()s all of them into the
// store under one lock. A collector may run every n-th tick only (a lower rate). Late ticks
// are skipped, not made up, and counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "agent/collector.h"
#include "agent/sample_store.h"

namespace eroica::agent {

class Sampler {
 public:
  Sampler(std::string name, int64_t interval_ns, SampleStore* store);
  ~Sampler();

  // Before Start(): run `collector` every `every_n` ticks.
  void Add(Collector* collector, int every_n = 1);
  void Start();
  void Stop();  // joins; idempotent

  // One tick, on the calling thread (tests, and the first sample before Start()).
  void Tick(int64_t now_ns);

  uint64_t ticks() const { return ticks_.load(); }
  uint64_t missed_ticks() const { return missed_ticks_.load(); }

 private:
  struct Entry {
    Collector* collector;
    int every_n;
  };
  void Run();

  std::string name_;
  int64_t interval_ns_;
  SampleStore* store_;
  std::vector<Entry> entries_;
  std::vector<Collector*> due_;
  uint64_t tick_index_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ticks_{0};
  std::atomic<uint64_t> missed_ticks_{0};
  std::thread thread_;
};

}  // namespace eroica::agent
