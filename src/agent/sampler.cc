#include "agent/sampler.h"

#include <pthread.h>

#include "agent/clock.h"

namespace eroica::agent {

Sampler::Sampler(std::string name, int64_t interval_ns, SampleStore* store)
    : name_(std::move(name)), interval_ns_(interval_ns > 0 ? interval_ns : 10'000'000), store_(store) {}

Sampler::~Sampler() { Stop(); }

void Sampler::Add(Collector* collector, int every_n) { entries_.push_back({collector, every_n < 1 ? 1 : every_n}); }

void Sampler::Start() {
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
}

void Sampler::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Sampler::Tick(int64_t now_ns) {
  due_.clear();
  for (const Entry& entry : entries_) {
    if (tick_index_ % static_cast<uint64_t>(entry.every_n) == 0) due_.push_back(entry.collector);
  }
  ++tick_index_;
  for (Collector* collector : due_) collector->Sample(now_ns);
  {
    SampleStore::Writer writer(store_);
    for (Collector* collector : due_) collector->Emit(writer);
  }
  ticks_.fetch_add(1);
}

void Sampler::Run() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  int64_t deadline_ns = MonotonicNs();
  while (!stop_.load()) {
    Tick(RealtimeNs());
    deadline_ns += interval_ns_;
    int64_t now_ns = MonotonicNs();
    if (now_ns > deadline_ns) {  // overran: skip the ticks we missed
      int64_t missed = (now_ns - deadline_ns) / interval_ns_ + 1;
      missed_ticks_.fetch_add(static_cast<uint64_t>(missed));
      deadline_ns += missed * interval_ns_;
    }
    SleepUntilMonotonicNs(deadline_ns);
  }
}

}  // namespace eroica::agent
