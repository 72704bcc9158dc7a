// The pattern file: one worker's pattern (`eroica summarize -o x.pattern`) or a bundle of many
// (one file per node or per job: a million small files is itself a bottleneck).
//
// Format, version 11 (all integers little-endian):
//   file    := "EROICAP\x0b" block*
//   block   := u32 compressed_bytes, u32 raw_bytes, u32 worker_count, zstd(payload)
//   payload := strings worker*            (a block's workers share one string table)
//   strings := varint n, (varint len, bytes)*
//   worker  := svarint rank, svarint world_size, varint host_str, varint source_str,
//              u8 flags (bit0: has_device), varint device_str, varint group_str,
//              varint n_steps, svarint first_step, svarint step_delta*,
//              varint window_ns, f64 iteration_s, f32 category_beta[5],
//              varint n_iterations, f32 iteration_category_beta[n_iterations][5],
//              f32 dataloader_ops_per_iter, f32 compute_calls_per_iter,
//              varint n_collectives, (varint name_str, f32 duration_us)*,
//              varint n_functions, function*, varint n_warnings, varint warning_str*,
//              varint n_located, (varint function_index, varint n_frames,
//                                 (varint location_str, f32 share)*)*,
//              u8 has_cpu, [f32 cpus, host_busy, process_cpu, run_delay, loader_cpu,
//                           loader_run_delay, throttled, main_cpu, main_run_delay,
//                           loader_asleep, loader_making (these five negative: unknown)],
//              varint n_loader_frames, (varint location_str, f32 share)*,
//              varint n_code_lines, (varint location_str, f32 share, varint depth)*,
//              f32 code_line_periods,
//              varint n_other_thread_frames, (varint location_str, f32 share)*,
//              varint collective_iteration[n_collectives] (the call's iteration + 1; 0: unknown)
//   function:= varint name_str, u8 category, u8 host_kind, f32 beta,
//              u8 has_mu_sigma, [f32 mu, f32 sigma], f32 calls_per_iter,
//              f32 mean_duration_us, f32 median_duration_us, f32 low_quartile_duration_us,
//              varint bytes_per_iter, u32 shapes_hash
// Blocks are self-contained (each has its own string table), so the blocks of several files of
// one version after a single magic are one bundle: the online scale-out path gathers the ranks'
// files so (`patterns.pattern`, python/eroica/central.py, which checks that each file's blocks
// fill it exactly before appending them).
// Version 10 is version 11 without the collectives' iterations, version 9 version 10 without the
// other threads' frames, version 8 version 9 without the
// code lines' sampling periods, version 7 version 8 without
// the training thread's code lines, version 6 version 7 without
// the loader workers' frames, version 5 version 6 without
// loader_asleep and loader_making, version 4 version 5 without the lower quartile call,
// version 3 version 4 without the median call, version 2 version 3 without the CPU share, version 1 version 2 without
// the located functions (no hot frames); all are still read; readers reject other versions with a message; blocks are
// read one at a time, so memory is bounded by the block size whatever the file size.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "summary/pattern.h"

namespace eroica {

inline constexpr std::string_view kPatternMagic = "EROICAP\x0b";
inline constexpr char kOldestReadablePatternVersion = 1;
// A pattern holds kCategoryCount shares per worker and iteration, and host kinds below
// kHostKindCount: changing either changes the format, so the magic's version byte changes too.
static_assert(kCategoryCount == 5 && kHostKindCount == 7,
              "the categories changed: bump kPatternMagic's version byte, then these numbers");

// Writes workers into blocks of `workers_per_block`, each compressed at `zstd_level`, in the
// newest format or an older one (for an older eroica to read: what that version lacks is left out).
class PatternWriter {
 public:
  explicit PatternWriter(size_t workers_per_block = 4096, int zstd_level = 9,
                         int format_version = static_cast<unsigned char>(kPatternMagic[7]));
  ~PatternWriter();
  // Encodes the worker at once (no copy is kept).
  void Add(const WorkerPattern& worker);
  // The whole file so far (flushes the open block).
  std::string Finish();
  // The bytes of the blocks completed so far, handed over (for writing a large bundle as it
  // grows); Finish then returns only what follows.
  std::string TakeCompleted();

 private:
  struct Block;  // the open block: its string table and encoded workers
  void FlushBlock();
  size_t workers_per_block_;
  int zstd_level_;
  int version_;
  std::unique_ptr<Block> block_;
  std::string out_{kPatternMagic};
};

Status WritePatternFile(const std::string& path, const std::vector<WorkerPattern>& workers);

// Calls `visit` for each worker in file order. Stops with an error at the first damaged block.
Status ForEachPattern(const std::string& path, const std::function<void(WorkerPattern&&)>& visit);
StatusOr<std::vector<WorkerPattern>> ReadPatternFile(const std::string& path);

// True when the file starts with the pattern magic (cheap sniffing for `diagnose DIR`).
bool LooksLikePatternFile(const std::string& path);

}  // namespace eroica
