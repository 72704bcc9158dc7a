// Writes metrics files. The format, version 1 (all integers little-endian):
//
//   offset 0   8 bytes  magic "EROICAMF"
//          8   u32      format version (1)
//         12   u32      compression: 1 = zstd (the only one written)
//         16   u64      size of the body once decompressed (the reader refuses > 1 GiB)
//         24   ...      the body, one zstd frame, to the end of the file
//
// The body is a sequence of fields; "v" is an unsigned LEB128 varint, "s" a zigzag varint
// (signed), "str" a v length then that many UTF-8 bytes:
//
//   str host
//   s   created_unix_ns
//   s   realtime_minus_monotonic_ns   CLOCK_REALTIME − CLOCK_MONOTONIC at writing
//   s   window_start_unix_ns          session start − 1 s
//   s   window_end_unix_ns            session end + 1 s
//   v   clock_ticks_per_s             sysconf(_SC_CLK_TCK)
//   v   num_cpus
//   v   sample_interval_ns            the base sampling period
//   v   timestamp_unit_ns             the unit of the timestamp deltas below (1000: µs)
//   v   process count, then per process:  s pid, s rank, s gpu_index   (-1: unknown)
//   v   series count, then per series:
//         str name, u8 kind (0 gauge, 1 counter), str unit, s pid, s tid, str instance,
//         str label, s capacity (per second for counters; 0: unknown),
//         v   sample count n,
//         n × s  timestamps: the first in timestamp units since the unix epoch (CLOCK_REALTIME),
//                then each the difference to the previous one
//         n × s  values: the first as is, then each the difference to the previous one
//
// Timestamps and values are stored column by column so that zstd sees long runs of similar
// small numbers. Readers must reject a version they do not know and may ignore bytes after
// the last series (room for later additions within version 1).
#pragma once

#include <string>

#include "agent/metrics_file.h"
#include "base/status.h"

namespace eroica::agent {

inline constexpr char kMetricsFileMagic[8] = {'E', 'R', 'O', 'I', 'C', 'A', 'M', 'F'};
inline constexpr int64_t kMetricsTimestampUnitNs = 1000;

// The bytes of a metrics file. Timestamps are floored to the timestamp unit (µs).
StatusOr<std::string> EncodeMetricsFile(const MetricsFile& file);

// Encodes and writes atomically (PATH.tmp, then rename): readers never see half a file.
// A full disk is an error; nothing partial is left behind.
Status WriteMetricsFile(const std::string& path, const MetricsFile& file);

}  // namespace eroica::agent
