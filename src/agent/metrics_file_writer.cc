#include "agent/metrics_file_writer.h"

#include <zstd.h>

#include "base/byte_codec.h"
#include "base/file_util.h"

namespace eroica::agent {
namespace {

int64_t ToUnits(int64_t ts_ns) {
  int64_t units = ts_ns / kMetricsTimestampUnitNs;
  if (ts_ns < 0 && units * kMetricsTimestampUnitNs != ts_ns) --units;
  return units;
}

int64_t WrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

void EncodeSeries(const MetricsSeries& series, ByteWriter* out) {
  const SeriesInfo& info = series.info;
  out->String(info.name);
  out->U8(static_cast<uint8_t>(info.kind));
  out->String(info.unit);
  out->SignedVarint(info.pid);
  out->SignedVarint(info.tid);
  out->String(info.instance);
  out->String(info.label);
  out->SignedVarint(info.capacity);
  size_t count = std::min(series.ts_unix_ns.size(), series.values.size());
  out->Varint(count);
  int64_t previous = 0;
  for (size_t i = 0; i < count; ++i) {
    int64_t units = ToUnits(series.ts_unix_ns[i]);
    out->SignedVarint(WrappingSub(units, previous));
    previous = units;
  }
  previous = 0;
  for (size_t i = 0; i < count; ++i) {
    out->SignedVarint(WrappingSub(series.values[i], previous));
    previous = series.values[i];
  }
}

std::string EncodeBody(const MetricsFile& file) {
  std::string body;
  ByteWriter out(&body);
  out.String(file.host);
  out.SignedVarint(file.created_unix_ns);
  out.SignedVarint(file.realtime_minus_monotonic_ns);
  out.SignedVarint(file.window_start_unix_ns);
  out.SignedVarint(file.window_end_unix_ns);
  out.Varint(static_cast<uint64_t>(file.clock_ticks_per_s));
  out.Varint(static_cast<uint64_t>(file.num_cpus));
  out.Varint(static_cast<uint64_t>(file.sample_interval_ns));
  out.Varint(kMetricsTimestampUnitNs);
  out.Varint(file.processes.size());
  for (const MetricsProcess& process : file.processes) {
    out.SignedVarint(process.pid);
    out.SignedVarint(process.rank);
    out.SignedVarint(process.gpu_index);
  }
  out.Varint(file.series.size());
  for (const MetricsSeries& series : file.series) EncodeSeries(series, &out);
  return body;
}

}  // namespace

StatusOr<std::string> EncodeMetricsFile(const MetricsFile& file) {
  std::string body = EncodeBody(file);
  std::string bytes(kMetricsFileMagic, sizeof(kMetricsFileMagic));
  ByteWriter header(&bytes);
  header.U32(kMetricsFileVersion);
  header.U32(1);  // zstd
  header.U64(body.size());
  size_t header_size = bytes.size();
  bytes.resize(header_size + ZSTD_compressBound(body.size()));
  size_t compressed =
      ZSTD_compress(bytes.data() + header_size, bytes.size() - header_size, body.data(), body.size(), 3);
  if (ZSTD_isError(compressed)) {
    return ErrorStatus("zstd compression failed: {}", ZSTD_getErrorName(compressed));
  }
  bytes.resize(header_size + compressed);
  return bytes;
}

Status WriteMetricsFile(const std::string& path, const MetricsFile& file) {
  StatusOr<std::string> bytes = EncodeMetricsFile(file);
  if (!bytes.ok()) return bytes.status();
  // 0640: the training job's user (or group) reads it; nobody else.
  return WriteFileAtomically(path, *bytes, 0640);
}

}  // namespace eroica::agent
