// Reads the format specified in metrics_file_writer.h.
#include <zstd.h>

#include <cstring>

#include "agent/metrics_file.h"
#include "agent/metrics_file_writer.h"
#include "base/byte_codec.h"
#include "base/file_util.h"
#include "base/zstd_inflate.h"

namespace eroica::agent {
namespace {

constexpr size_t kHeaderBytes = 24;
constexpr uint64_t kMaxBodyBytes = 1ull << 30;
// Sane maxima, far above what an agent writes (1024 processes, a few series per thread).
constexpr uint64_t kMaxProcesses = 1 << 16;
constexpr uint64_t kMaxSeries = 1 << 18;

int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

bool DecodeSeries(ByteReader* in, int64_t unit_ns, MetricsSeries* series) {
  SeriesInfo& info = series->info;
  uint8_t kind = 0;
  uint64_t count = 0;
  if (!in->GetString(&info.name) || !in->GetU8(&kind) || !in->GetString(&info.unit) || !in->GetSigned(&info.pid) ||
      !in->GetSigned(&info.tid) || !in->GetString(&info.instance) || !in->GetString(&info.label) ||
      !in->GetSigned(&info.capacity) || !in->GetVarint(&count)) {
    return false;
  }
  if (kind > 1) return false;
  info.kind = static_cast<SeriesKind>(kind);
  if (count > in->remaining() / 2) return false;  // each sample takes at least two bytes
  series->ts_unix_ns.resize(count);
  series->values.resize(count);
  int64_t units = 0;
  for (uint64_t i = 0; i < count; ++i) {
    int64_t delta = 0;
    if (!in->GetSigned(&delta)) return false;
    units = WrappingAdd(units, delta);
    series->ts_unix_ns[i] = static_cast<int64_t>(static_cast<uint64_t>(units) * static_cast<uint64_t>(unit_ns));
  }
  int64_t value = 0;
  for (uint64_t i = 0; i < count; ++i) {
    int64_t delta = 0;
    if (!in->GetSigned(&delta)) return false;
    value = WrappingAdd(value, delta);
    series->values[i] = value;
  }
  return true;
}

Status DecodeBody(std::string_view body, MetricsFile* file) {
  ByteReader in(body);
  uint64_t ticks = 0, cpus = 0, interval_ns = 0, unit_ns = 0, processes = 0, series = 0;
  if (!in.GetString(&file->host) || !in.GetSigned(&file->created_unix_ns) ||
      !in.GetSigned(&file->realtime_minus_monotonic_ns) || !in.GetSigned(&file->window_start_unix_ns) ||
      !in.GetSigned(&file->window_end_unix_ns) || !in.GetVarint(&ticks) || !in.GetVarint(&cpus) ||
      !in.GetVarint(&interval_ns) || !in.GetVarint(&unit_ns) || !in.GetVarint(&processes)) {
    return ErrorStatus("header cut short");
  }
  if (unit_ns == 0 || unit_ns > 1'000'000'000) return ErrorStatus("bad timestamp unit");
  file->clock_ticks_per_s = static_cast<int64_t>(ticks);
  file->num_cpus = static_cast<int64_t>(cpus);
  file->sample_interval_ns = static_cast<int64_t>(interval_ns);
  // Counts are believed only as far as the bytes left can hold them (3 and 9 bytes at least
  // per entry), and storage grows with the entries actually decoded.
  if (processes > in.remaining() / 3 || processes > kMaxProcesses) {
    return ErrorStatus("bad process count {}", processes);
  }
  file->processes.reserve(std::min<uint64_t>(processes, 4096));
  for (uint64_t i = 0; i < processes; ++i) {
    MetricsProcess process;
    if (!in.GetSigned(&process.pid) || !in.GetSigned(&process.rank) || !in.GetSigned(&process.gpu_index)) {
      return ErrorStatus("process table cut short");
    }
    file->processes.push_back(process);
  }
  if (!in.GetVarint(&series) || series > in.remaining() / 9 || series > kMaxSeries) {
    return ErrorStatus("bad series count");
  }
  file->series.reserve(std::min<uint64_t>(series, 4096));
  for (size_t i = 0; i < series; ++i) {
    MetricsSeries decoded;
    if (!DecodeSeries(&in, static_cast<int64_t>(unit_ns), &decoded)) {
      return ErrorStatus("series {} of {} is damaged", i, series);
    }
    file->series.push_back(std::move(decoded));
  }
  return Status::Ok();
}

}  // namespace

const MetricsSeries* MetricsFile::Find(std::string_view name, int64_t pid, int64_t tid,
                                       std::string_view instance) const {
  for (const MetricsSeries& entry : series) {
    const SeriesInfo& info = entry.info;
    if (info.name == name && info.pid == pid && info.tid == tid && info.instance == instance) {
      return &entry;
    }
  }
  return nullptr;
}

StatusOr<MetricsFile> DecodeMetricsFile(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes) return ErrorStatus("too short for a metrics file");
  if (std::memcmp(bytes.data(), kMetricsFileMagic, sizeof(kMetricsFileMagic)) != 0) {
    return ErrorStatus("not a metrics file (bad magic)");
  }
  ByteReader header(bytes.substr(sizeof(kMetricsFileMagic)));
  uint32_t version = 0, compression = 0;
  uint64_t body_size = 0;
  if (!header.GetFixed32(&version) || !header.GetFixed32(&compression) || !header.GetFixed64(&body_size)) {
    return ErrorStatus("header cut short");
  }
  if (version == 0 || version > kMetricsFileVersion) {
    return ErrorStatus("metrics format version {} is not supported (this eroica reads up to version {}{})", version,
                       kMetricsFileVersion, version > kMetricsFileVersion ? "; a newer eroica wrote it" : "");
  }
  if (compression != 1) return ErrorStatus("unknown compression {}", compression);
  if (body_size > kMaxBodyBytes) return ErrorStatus("body of {} bytes is too large", body_size);
  std::string_view frame = bytes.substr(kHeaderBytes);
  unsigned long long frame_size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (frame_size == ZSTD_CONTENTSIZE_ERROR || frame_size != body_size) {
    return ErrorStatus("compressed body is damaged");
  }
  StatusOr<std::string> body = InflateZstd(frame, body_size);
  if (!body.ok()) return ErrorStatus("compressed body: {}", body.status().message());
  MetricsFile file;
  file.version = version;
  Status status = DecodeBody(*body, &file);
  if (!status.ok()) return ErrorStatus("damaged metrics file: {}", status.message());
  return file;
}

StatusOr<MetricsFile> ReadMetricsFile(const std::string& path) {
  StatusOr<std::string> bytes = ReadSmallFile(path, kMaxBodyBytes);
  if (!bytes.ok()) return bytes.status();
  StatusOr<MetricsFile> file = DecodeMetricsFile(*bytes);
  if (!file.ok()) return ErrorStatus("{}: {}", path, file.status().message());
  return file;
}

}  // namespace eroica::agent
