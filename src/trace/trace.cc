#include "trace/trace.h"

namespace eroica {

bool Trace::IdCode(int64_t id, int32_t* code) {
  if (id >= -kDirectIdLimit && id < kDirectIdLimit) {
    *code = static_cast<int32_t>(id);
    return true;
  }
  if (id >= kStringPidBase && id - kStringPidBase < kWideIdBase - kStringIdCodeBase) {
    *code = static_cast<int32_t>(kStringIdCodeBase + (id - kStringPidBase));
    return true;
  }
  auto it = wide_codes_.find(id);
  if (it == wide_codes_.end()) {
    if (wide_ids.size() >= (size_t{1} << 29)) return false;
    it = wide_codes_.emplace(id, static_cast<int32_t>(kWideIdBase + static_cast<int64_t>(wide_ids.size()))).first;
    wide_ids.push_back(id);
  }
  *code = it->second;
  return true;
}

bool Trace::Add(const ParsedEvent& parsed) {
  TraceEvent e;
  e.ts_ns = parsed.ts_ns;
  e.dur_ns = parsed.dur_ns;
  e.name = parsed.name;
  e.cat = parsed.cat;
  if (!IdCode(parsed.pid, &e.pid) || !IdCode(parsed.tid, &e.tid)) return false;
  bool narrow_correlation = parsed.correlation >= -1 && parsed.correlation <= INT32_MAX;
  e.correlation = narrow_correlation ? static_cast<int32_t>(parsed.correlation) : kCorrelationInExtra;
  if (!narrow_correlation || parsed.bytes != -1 || parsed.shapes != 0 || parsed.collective != 0) {
    if (extras.size() >= UINT32_MAX - 1) return false;
    extras.push_back({narrow_correlation ? -1 : parsed.correlation, parsed.bytes, parsed.shapes, parsed.collective});
    e.extra = static_cast<uint32_t>(extras.size());
  }
  events.push_back(e);
  return true;
}

}  // namespace eroica
