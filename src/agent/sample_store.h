// All series the agent keeps, bounded: each series is a SeriesBuffer (a time window and a
// sample cap), and the number of series is capped. Thread-safe: samplers write through a
// Writer (one lock per tick), the session writer and the Prometheus page read snapshots.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/collector.h"
#include "agent/series_buffer.h"

namespace eroica::agent {

struct StoreOptions {
  int64_t window_ns = 120'000'000'000;  // keep at least this much history
  size_t max_samples_per_series = 120 * 100 * 2;
  size_t max_series = 8192;
};

// A series' newest sample, for the Prometheus page.
struct LatestSample {
  SeriesInfo info;
  int64_t ts_ns = 0;
  int64_t value = 0;
};

struct StoreStats {
  uint64_t samples_recorded = 0;
  uint64_t samples_dropped = 0;  // store full, clock stepped back, released series
  size_t series = 0;
  size_t memory_bytes = 0;
};

class SampleStore {
 public:
  explicit SampleStore(const StoreOptions& options) : options_(options) {}

  // Holds the store's lock for its lifetime; write one tick's readings through it.
  class Writer : public MetricSink {
   public:
    explicit Writer(SampleStore* store) : store_(store), lock_(store->mu_) {}
    SeriesId Register(const SeriesInfo& info) override { return store_->RegisterLocked(info); }
    void Record(SeriesId id, int64_t ts_ns, int64_t value) override { store_->RecordLocked(id, ts_ns, value); }
    void Release(SeriesId id) override { store_->ReleaseLocked(id); }

   private:
    SampleStore* store_;
    std::lock_guard<std::mutex> lock_;
  };

  // The samples with from_ns <= ts <= to_ns, one entry per series that has any.
  std::vector<MetricsSeries> Snapshot(int64_t from_ns, int64_t to_ns);

  // The newest sample of every live series that `wanted` accepts (it sees each series' info
  // under the lock, so it must be cheap); released series are left out.
  std::vector<LatestSample> Latest(const std::function<bool(const SeriesInfo&)>& wanted);

  // Frees released series whose history has aged out (older than now_ns - window).
  void CollectGarbage(int64_t now_ns);

  StoreStats Stats();
  // The oldest timestamp still held, or 0 when empty.
  int64_t OldestSampleNs();

 private:
  struct Entry {
    SeriesInfo info;
    SeriesBuffer buffer;
    std::string key;
    bool released = false;
  };

  SeriesId RegisterLocked(const SeriesInfo& info);
  void RecordLocked(SeriesId id, int64_t ts_ns, int64_t value);
  void ReleaseLocked(SeriesId id);

  StoreOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;  // by SeriesId; null = free slot
  std::vector<SeriesId> free_ids_;
  std::unordered_map<std::string, SeriesId> ids_by_key_;
  size_t live_series_ = 0;
  uint64_t samples_recorded_ = 0;
  uint64_t samples_dropped_ = 0;
};

}  // namespace eroica::agent
