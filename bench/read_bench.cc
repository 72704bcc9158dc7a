// read_bench: times the trace reader and the summarizer, and the bounds they run against.
// Prints one JSON object per run on stdout (bench/run_bench.py collects them into BENCHMARKS.md).
//
//   read_bench read FILE [--no-summary]    ReadTrace (+ Summarize) of one file
//   read_bench files -j N [--max-memory MB] FILE...   SummarizeFiles over several files, N threads
//   read_bench best N FILE                 the best of N reads and summaries (noise-robust)
//   read_bench inflate FILE [N]            libdeflate, zlib and ISA-L alone on a .json.gz, best of N
//   read_bench bound FILE                  the floors: memchr over the JSON, libdeflate, zlib and
//                                          ISA-L alone (gzip), a raw simdjson walk of every event
//
// Figures: wall seconds, CPU seconds (all threads), MB/s of uncompressed JSON per wall second
// and per CPU second, and the process's peak RSS (getrusage ru_maxrss).
#include <fmt/core.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <sys/resource.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/heap_reuse.h"
#include "summary/summarize_files.h"
#include "summary/summarizer.h"
#include "trace/reader.h"

namespace eroica {

// Every event's name, ts and dur through simdjson's on-demand API (simdjson_walk.cc, built for
// the CPU it runs on): the parse floor.
size_t SimdjsonWalk(const char* json, size_t size, size_t capacity);

namespace {

struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = CpuSeconds();

  static double CpuSeconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  double WallSince() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(); }
  double CpuSince() const { return CpuSeconds() - cpu; }
};

int64_t PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Pages the process faulted in: first touches of fresh memory, which a fresh process pays.
int64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double MbPerS(int64_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e6 : 0; }

int RunRead(const std::string& path, bool summarize, bool huge_heap) {
  Clock clock;
  StatusOr<Trace> trace = ReadTrace(path);
  if (!trace.ok()) {
    fmt::print(stderr, "read_bench: {}\n", trace.status().message());
    return 1;
  }
  double read_s = clock.WallSince(), read_cpu_s = clock.CpuSince();
  Clock summary_clock;
  size_t functions = 0;
  if (summarize) {
    StatusOr<Summary> summary = Summarize(*trace);
    if (!summary.ok()) {
      fmt::print(stderr, "read_bench: {}\n", summary.status().message());
      return 1;
    }
    functions = summary->pattern.functions.size();
  }
  double summarize_s = summary_clock.WallSince();
  double total_s = clock.WallSince(), total_cpu_s = clock.CpuSince();
  int64_t bytes = trace->stats.input_bytes;
  fmt::print(
      "{{\"mode\": \"read\", \"file\": \"{}\", \"input_bytes\": {}, \"events\": {}, \"kept_events\": {}, "
      "\"functions\": {}, \"read_s\": {:.4f}, \"read_cpu_s\": {:.4f}, \"summarize_s\": {:.4f}, "
      "\"total_s\": {:.4f}, \"total_cpu_s\": {:.4f}, \"mb_per_s\": {:.1f}, \"mb_per_cpu_s\": {:.1f}, "
      "\"read_mb_per_s\": {:.1f}, \"peak_rss_kb\": {}, \"event_bytes\": {}, \"minor_faults\": {}, "
      "\"huge_page_heap\": {}}}\n",
      path, bytes, trace->stats.events_seen, trace->events.size(), functions, read_s, read_cpu_s, summarize_s, total_s,
      total_cpu_s, MbPerS(bytes, total_s), MbPerS(bytes, total_cpu_s), MbPerS(bytes, read_s), PeakRssKb(),
      trace->events.size() * sizeof(TraceEvent), MinorFaults(), huge_heap);
  return 0;
}

// The best of `repeats` runs of each stage: robust to a machine shared with other work.
int RunBest(const std::string& path, int repeats) {
  double best_read = 1e30, best_summary = 1e30;
  int64_t bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    Clock clock;
    StatusOr<Trace> trace = ReadTrace(path);
    if (!trace.ok()) return 1;
    best_read = std::min(best_read, clock.WallSince());
    Clock summary_clock;
    StatusOr<Summary> summary = Summarize(*trace);
    if (!summary.ok()) return 1;
    best_summary = std::min(best_summary, summary_clock.WallSince());
    bytes = trace->stats.input_bytes;
  }
  fmt::print(
      "{{\"mode\": \"best\", \"file\": \"{}\", \"repeats\": {}, \"input_bytes\": {}, "
      "\"read_s\": {:.4f}, \"summarize_s\": {:.4f}, \"read_mb_per_s\": {:.1f}, "
      "\"summarize_mb_per_s\": {:.1f}, \"mb_per_s\": {:.1f}}}\n",
      path, repeats, bytes, best_read, best_summary, MbPerS(bytes, best_read), MbPerS(bytes, best_summary),
      MbPerS(bytes, best_read + best_summary));
  return 0;
}

int RunFiles(const std::vector<std::string>& paths, int threads, size_t max_memory_bytes) {
  int64_t bytes = 0;
  for (const std::string& path : paths) {
    StatusOr<Trace> probe = ReadTrace(path);  // warms the page cache and counts the JSON bytes
    if (probe.ok()) bytes += probe->stats.input_bytes;
  }
  Clock clock;
  FileSummaries result = SummarizeFiles(paths, threads, {}, nullptr, max_memory_bytes);
  double wall_s = clock.WallSince(), cpu_s = clock.CpuSince();
  fmt::print(
      "{{\"mode\": \"files\", \"files\": {}, \"threads\": {}, \"patterns\": {}, \"input_bytes\": {}, "
      "\"total_s\": {:.4f}, \"total_cpu_s\": {:.4f}, \"mb_per_s\": {:.1f}, \"mb_per_cpu_s\": {:.1f}, "
      "\"readers\": {}, \"errors\": {}}}\n",
      paths.size(), threads, result.patterns.size(), bytes, wall_s, cpu_s, MbPerS(bytes, wall_s), MbPerS(bytes, cpu_s),
      PlanReaders(paths.size(), threads, max_memory_bytes).readers, result.errors.size());
  return result.errors.empty() ? 0 : 1;
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool IsGzip(const std::string& bytes) {
  return bytes.size() > 18 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Best of `repeats` wall times of `work`.
template <typename Work>
double BestOf(int repeats, Work work) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    Clock clock;
    work();
    best = std::min(best, clock.WallSince());
  }
  return best;
}

struct InflateFloors {
  double libdeflate_s = 0, zlib_s = 0, isal_s = 0;
};

// Each gzip library alone on the whole compressed file in memory: libdeflate into one buffer of
// the whole output (it cannot stream), zlib and ISA-L streaming into a reused 1 MB buffer, as
// the reader would. Best of `repeats`.
InflateFloors MeasureInflate(std::string& file, std::string* json, int repeats) {
  InflateFloors f;
  uint32_t isize = 0;
  std::memcpy(&isize, file.data() + file.size() - 4, 4);
  json->resize(isize);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  f.libdeflate_s = BestOf(repeats, [&] {
    size_t got = 0;
    libdeflate_gzip_decompress(d, file.data(), file.size(), json->data(), json->size(), &got);
  });
  libdeflate_free_decompressor(d);
  std::vector<char> out(1 << 20);
  f.zlib_s = BestOf(repeats, [&] {
    z_stream z{};
    inflateInit2(&z, 15 + 32);
    z.next_in = reinterpret_cast<Bytef*>(file.data());
    z.avail_in = static_cast<uInt>(file.size());
    int rc = Z_OK;
    while (rc == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      rc = inflate(&z, Z_NO_FLUSH);
    }
    inflateEnd(&z);
  });
  auto state = std::make_unique<inflate_state>();
  f.isal_s = BestOf(repeats, [&] {
    isal_inflate_init(state.get());
    state->crc_flag = ISAL_GZIP;
    state->next_in = reinterpret_cast<uint8_t*>(file.data());
    state->avail_in = static_cast<uint32_t>(file.size());
    while (state->block_state != ISAL_BLOCK_FINISH) {
      state->next_out = reinterpret_cast<uint8_t*>(out.data());
      state->avail_out = static_cast<uint32_t>(out.size());
      if (isal_inflate(state.get()) < 0) break;
    }
  });
  return f;
}

// The inflate floors alone, for one .json.gz (the tables' "inflate alone" columns).
int RunInflate(const std::string& path, int repeats) {
  std::string file = ReadFileBytes(path);
  if (!IsGzip(file)) return 1;
  std::string json;
  InflateFloors f = MeasureInflate(file, &json, repeats);
  int64_t bytes = static_cast<int64_t>(json.size());
  fmt::print(
      "{{\"mode\": \"inflate\", \"file\": \"{}\", \"input_bytes\": {}, \"libdeflate_mb_per_s\": {:.1f}, "
      "\"zlib_mb_per_s\": {:.1f}, \"isal_mb_per_s\": {:.1f}}}\n",
      path, bytes, MbPerS(bytes, f.libdeflate_s), MbPerS(bytes, f.zlib_s), MbPerS(bytes, f.isal_s));
  return 0;
}

int RunBound(const std::string& path) {
  std::string file = ReadFileBytes(path);
  bool gzip = IsGzip(file);
  std::string json;
  InflateFloors floors;
  if (gzip) {
    floors = MeasureInflate(file, &json, 3);
  } else {
    json = std::move(file);
  }
  // The kernel's copy of the file into a reused 1 MB buffer, as the reader reads plain JSON.
  double fread_s = 0;
  if (!gzip) {
    std::vector<char> piece(1 << 20);
    fread_s = BestOf(3, [&] {
      FILE* f = std::fopen(path.c_str(), "rb");
      if (f == nullptr) return;
      while (std::fread(piece.data(), 1, piece.size(), f) > 0) {
      }
      std::fclose(f);
    });
  }
  size_t found = 0;
  double memchr_s = BestOf(3, [&] { found += std::memchr(json.data(), '\x01', json.size()) != nullptr; });
  int64_t bytes = static_cast<int64_t>(json.size());
  json.resize(json.size() + 256);  // simdjson's padding
  size_t checksum = 0;
  double simdjson_s =
      BestOf(3, [&] { checksum += SimdjsonWalk(json.data(), static_cast<size_t>(bytes), json.size()); });
  fmt::print(
      "{{\"mode\": \"bound\", \"file\": \"{}\", \"input_bytes\": {}, \"gzip\": {}, "
      "\"memchr_mb_per_s\": {:.1f}, \"simdjson_walk_mb_per_s\": {:.1f}, "
      "\"libdeflate_mb_per_s\": {:.1f}, \"zlib_mb_per_s\": {:.1f}, \"isal_mb_per_s\": {:.1f}, "
      "\"fread_mb_per_s\": {:.1f}, "
      "\"checksum\": {}}}\n",
      path, bytes, gzip ? "true" : "false", MbPerS(bytes, memchr_s), MbPerS(bytes, simdjson_s),
      gzip ? MbPerS(bytes, floors.libdeflate_s) : 0.0, gzip ? MbPerS(bytes, floors.zlib_s) : 0.0,
      gzip ? MbPerS(bytes, floors.isal_s) : 0.0, gzip ? 0.0 : MbPerS(bytes, fread_s), checksum + found);
  return checksum > 0 ? 0 : 1;
}

int Usage() {
  fmt::print(stderr,
             "usage: read_bench read FILE [--no-summary] | files -j N FILE... | inflate FILE [N] | bound FILE\n");
  return 2;
}

}  // namespace
}  // namespace eroica

int main(int argc, char** argv) {
  using namespace eroica;
  bool huge_heap = KeepFreedMemoryForReuse();  // as the eroica command does: the figures are its reads
  if (argc < 3) return Usage();
  std::string mode = argv[1];
  if (mode == "read") {
    bool summarize = !(argc > 3 && std::string(argv[3]) == "--no-summary");
    return RunRead(argv[2], summarize, huge_heap);
  }
  if (mode == "bound") return RunBound(argv[2]);
  if (mode == "inflate") return RunInflate(argv[2], argc > 3 ? std::stoi(argv[3]) : 3);
  if (mode == "best" && argc > 3) return RunBest(argv[3], std::stoi(argv[2]));
  if (mode == "files") {
    int threads = 2;
    size_t max_memory_bytes = 0;
    std::vector<std::string> paths;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "-j" && i + 1 < argc) {
        threads = std::stoi(argv[++i]);
      } else if (std::string(argv[i]) == "--max-memory" && i + 1 < argc) {
        max_memory_bytes = std::stoull(argv[++i]) << 20;
      } else {
        paths.push_back(argv[i]);
      }
    }
    return RunFiles(paths, threads, max_memory_bytes);
  }
  return Usage();
}
