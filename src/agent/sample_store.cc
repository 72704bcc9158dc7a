#include "agent/sample_store.h"

#include <fmt/format.h>

namespace eroica::agent {
namespace {

std::string SeriesKey(const SeriesInfo& info) {
  return fmt::format("{}\x1f{}\x1f{}\x1f{}", info.name, info.pid, info.tid, info.instance);
}

}  // namespace

SeriesId SampleStore::RegisterLocked(const SeriesInfo& info) {
  std::string key = SeriesKey(info);
  auto it = ids_by_key_.find(key);
  if (it != ids_by_key_.end()) {
    Entry& entry = *entries_[it->second];
    entry.info.label = info.label;
    entry.info.capacity = info.capacity;
    entry.released = false;
    return it->second;
  }
  if (live_series_ >= options_.max_series) return kNoSeries;
  SeriesId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<SeriesId>(entries_.size());
    entries_.emplace_back();
  }
  entries_[id] =
      std::make_unique<Entry>(Entry{info, SeriesBuffer(options_.window_ns, options_.max_samples_per_series), key});
  ids_by_key_.emplace(std::move(key), id);
  ++live_series_;
  return id;
}

void SampleStore::RecordLocked(SeriesId id, int64_t ts_ns, int64_t value) {
  if (id >= entries_.size() || entries_[id] == nullptr || entries_[id]->released) {
    ++samples_dropped_;
    return;
  }
  if (entries_[id]->buffer.Append(ts_ns, value)) {
    ++samples_recorded_;
  } else {
    ++samples_dropped_;
  }
}

void SampleStore::ReleaseLocked(SeriesId id) {
  if (id < entries_.size() && entries_[id] != nullptr) entries_[id]->released = true;
}

std::vector<MetricsSeries> SampleStore::Snapshot(int64_t from_ns, int64_t to_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<MetricsSeries> result;
  std::vector<Sample> samples;
  for (const std::unique_ptr<Entry>& entry : entries_) {
    if (entry == nullptr) continue;
    samples.clear();
    entry->buffer.CopyRange(from_ns, to_ns, &samples);
    if (samples.empty()) continue;
    MetricsSeries& snapshot = result.emplace_back();
    snapshot.info = entry->info;
    snapshot.ts_unix_ns.reserve(samples.size());
    snapshot.values.reserve(samples.size());
    for (const Sample& sample : samples) {
      snapshot.ts_unix_ns.push_back(sample.ts_ns);
      snapshot.values.push_back(sample.value);
    }
  }
  return result;
}

std::vector<LatestSample> SampleStore::Latest(const std::function<bool(const SeriesInfo&)>& wanted) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LatestSample> result;
  for (const std::unique_ptr<Entry>& entry : entries_) {
    if (entry == nullptr || entry->released || entry->buffer.empty() || !wanted(entry->info)) continue;
    result.push_back({entry->info, entry->buffer.last_ts_ns(), entry->buffer.last_value()});
  }
  return result;
}

void SampleStore::CollectGarbage(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (SeriesId id = 0; id < entries_.size(); ++id) {
    std::unique_ptr<Entry>& entry = entries_[id];
    if (entry == nullptr || !entry->released) continue;
    if (!entry->buffer.empty() && entry->buffer.last_ts_ns() >= now_ns - options_.window_ns) {
      continue;
    }
    ids_by_key_.erase(entry->key);
    entry.reset();
    free_ids_.push_back(id);
    --live_series_;
  }
}

StoreStats SampleStore::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  StoreStats stats;
  stats.samples_recorded = samples_recorded_;
  stats.samples_dropped = samples_dropped_;
  stats.series = live_series_;
  stats.memory_bytes = sizeof(*this) + entries_.capacity() * sizeof(entries_[0]);
  for (const std::unique_ptr<Entry>& entry : entries_) {
    if (entry != nullptr) stats.memory_bytes += sizeof(Entry) + entry->buffer.memory_bytes();
  }
  return stats;
}

int64_t SampleStore::OldestSampleNs() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t oldest = 0;
  for (const std::unique_ptr<Entry>& entry : entries_) {
    if (entry == nullptr || entry->buffer.empty()) continue;
    int64_t first = entry->buffer.first_ts_ns();
    if (oldest == 0 || first < oldest) oldest = first;
  }
  return oldest;
}

}  // namespace eroica::agent
