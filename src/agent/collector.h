// The seam between what the agent reads and where the readings go (after Dynolog's
// collectors): a Collector reads in Sample() and hands the readings over in Emit(), so reading
// (slow, syscalls) and storing (under the store's lock) stay apart.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "agent/series.h"

namespace eroica::agent {

using SeriesId = uint32_t;
inline constexpr SeriesId kNoSeries = std::numeric_limits<SeriesId>::max();

// Where readings go. Register once per series and keep the id; Release when the thing
// measured is gone (its history stays until it ages out of the window).
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  // Idempotent for the same series (see SameSeries); updates label and capacity. Returns
  // kNoSeries when the store is full (Record then drops and counts).
  virtual SeriesId Register(const SeriesInfo& info) = 0;
  virtual void Record(SeriesId id, int64_t ts_ns, int64_t value) = 0;
  virtual void Release(SeriesId id) = 0;
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view name() const = 0;
  // Reads the counters; now_ns (CLOCK_REALTIME) is the timestamp the readings get.
  virtual void Sample(int64_t now_ns) = 0;
  // Hands the readings of the last Sample() to the sink.
  virtual void Emit(MetricSink& sink) = 0;
};

}  // namespace eroica::agent
