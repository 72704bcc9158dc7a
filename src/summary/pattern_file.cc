#include "summary/pattern_file.h"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <unordered_map>

#include "base/byte_codec.h"
#include "base/file_util.h"
#include "base/zstd_inflate.h"

namespace eroica {
// Named, not anonymous: PatternWriter::Block, a member of a class with external linkage, holds one.
namespace pattern_file_internal {

class StringTable {
 public:
  uint64_t Id(const std::string& text) {
    auto [it, inserted] = ids_.try_emplace(text, strings_.size());
    if (inserted) strings_.push_back(&it->first);
    return it->second;
  }
  void Write(ByteWriter* out) const {
    out->Varint(strings_.size());
    for (const std::string* s : strings_) out->String(*s);
  }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<const std::string*> strings_;
};

}  // namespace pattern_file_internal
using pattern_file_internal::StringTable;

namespace {

constexpr uint32_t kMaxBlockBytes = 1u << 30;
constexpr uint64_t kMaxPatternFileBytes = uint64_t{1} << 40;
// Deeper than Python's recursion limit allows by far: a corrupt depth, not a stack.
constexpr uint64_t kMaxStackDepth = 1u << 16;

// A count read from the file is believed only when the bytes left could hold that many
// elements of at least min_bytes each (and it is below a sane maximum): nothing is allocated
// for elements that are not there.
bool CountFits(const ByteReader& in, uint64_t count, uint64_t min_bytes, uint64_t max_count) {
  return in.ok() && count <= max_count && count <= in.remaining() / min_bytes;
}

void WriteWorker(const WorkerPattern& w, int version, StringTable* strings, ByteWriter* out) {
  out->SignedVarint(w.rank);
  out->SignedVarint(w.world_size);
  out->Varint(strings->Id(w.host));
  out->Varint(strings->Id(w.source));
  out->U8(w.has_device ? 1 : 0);
  out->Varint(strings->Id(w.device_name));
  out->Varint(strings->Id(w.group));
  out->Varint(w.step_ids.size());
  int64_t previous = 0;
  for (int64_t id : w.step_ids) {
    out->SignedVarint(id - previous);
    previous = id;
  }
  out->Varint(static_cast<uint64_t>(std::max<int64_t>(0, w.window_ns)));
  out->F64(w.iteration_s);
  for (double beta : w.category_beta) out->F32(static_cast<float>(beta));
  out->Varint(w.iteration_category_beta.size());
  for (const auto& betas : w.iteration_category_beta) {
    for (float beta : betas) out->F32(beta);
  }
  out->F32(static_cast<float>(w.dataloader_ops_per_iter));
  out->F32(static_cast<float>(w.compute_calls_per_iter));
  out->Varint(w.collectives.size());
  for (const CollectiveCall& c : w.collectives) {
    out->Varint(strings->Id(c.name));
    out->F32(c.duration_us);
  }
  out->Varint(w.functions.size());
  for (const FunctionPattern& f : w.functions) {
    out->Varint(strings->Id(f.name));
    out->U8(static_cast<uint8_t>(f.category));
    out->U8(static_cast<uint8_t>(f.host_kind));
    out->F32(static_cast<float>(f.beta));
    out->U8(f.mu.has_value() ? 1 : 0);
    if (f.mu) {
      out->F32(static_cast<float>(*f.mu));
      out->F32(static_cast<float>(f.sigma.value_or(0)));
    }
    out->F32(static_cast<float>(f.calls_per_iter));
    out->F32(static_cast<float>(f.mean_duration_us));
    if (version >= 4) out->F32(static_cast<float>(f.median_duration_us));
    if (version >= 5) out->F32(static_cast<float>(f.low_quartile_duration_us));
    out->Varint(static_cast<uint64_t>(std::max<int64_t>(0, f.bytes_per_iter)));
    out->U32(f.shapes_hash);
  }
  out->Varint(w.warnings.size());
  for (const std::string& warning : w.warnings) out->Varint(strings->Id(warning));
  if (version < 2) return;
  size_t located = std::count_if(w.functions.begin(), w.functions.end(),
                                 [](const FunctionPattern& f) { return !f.hot_frames.empty(); });
  out->Varint(located);
  for (size_t i = 0; i < w.functions.size(); ++i) {
    const std::vector<HotFrame>& frames = w.functions[i].hot_frames;
    if (frames.empty()) continue;
    out->Varint(i);
    out->Varint(frames.size());
    for (const HotFrame& frame : frames) {
      out->Varint(strings->Id(frame.location));
      out->F32(frame.share);
    }
  }
  if (version < 3) return;
  out->U8(w.cpu.has_value() ? 1 : 0);
  if (w.cpu) {
    for (float v : {w.cpu->cpus, w.cpu->host_busy, w.cpu->process_cpu, w.cpu->run_delay, w.cpu->loader_cpu,
                    w.cpu->loader_run_delay, w.cpu->throttled, w.cpu->main_cpu, w.cpu->main_run_delay}) {
      out->F32(v);
    }
    if (version >= 6) {
      out->F32(w.cpu->loader_asleep);
      out->F32(w.cpu->loader_making);
    }
  }
  if (version < 7) return;
  out->Varint(w.loader_worker_frames.size());
  for (const HotFrame& frame : w.loader_worker_frames) {
    out->Varint(strings->Id(frame.location));
    out->F32(frame.share);
  }
  if (version < 8) return;
  out->Varint(w.code_lines.size());
  for (const CodeFrame& line : w.code_lines) {
    out->Varint(strings->Id(line.location));
    out->F32(line.share);
    out->Varint(line.depth);
  }
  if (version < 9) return;
  out->F32(w.code_line_periods);
  if (version < 10) return;
  out->Varint(w.other_thread_frames.size());
  for (const HotFrame& frame : w.other_thread_frames) {
    out->Varint(strings->Id(frame.location));
    out->F32(frame.share);
  }
  if (version < 11) return;
  for (const CollectiveCall& c : w.collectives)
    out->Varint(c.iteration >= 0 ? static_cast<uint64_t>(c.iteration) + 1 : 0);
}

// A call's duration as stored (median, lower quartile): 0, "not measured", for anything that is
// not a positive number, so a corrupt file cannot feed NaN or a negative size to the localizer.
double CallDurationUs(ByteReader* in) {
  float us = in->F32();
  return std::isfinite(us) && us > 0 ? us : 0.0;
}

// Fills every field of *w, reusing its strings' and vectors' storage: a bundle of a million
// workers then costs no allocation per function name.
bool ReadWorker(ByteReader* in, const std::vector<std::string_view>& strings, int version, WorkerPattern* w) {
  auto assign = [&](std::string* out, uint64_t id) {
    if (id < strings.size()) {
      out->assign(strings[id]);
    } else {
      out->clear();
    }
  };
  w->rank = static_cast<int>(in->SignedVarint());
  w->world_size = static_cast<int>(in->SignedVarint());
  assign(&w->host, in->Varint());
  assign(&w->source, in->Varint());
  w->has_device = (in->U8() & 1) != 0;
  assign(&w->device_name, in->Varint());
  assign(&w->group, in->Varint());
  uint64_t steps = in->Varint();
  if (!CountFits(*in, steps, 1, 1u << 20)) return false;
  w->step_ids.clear();
  int64_t previous = 0;
  for (uint64_t i = 0; i < steps && in->ok(); ++i) {
    // A damaged delta must not overflow the running step id (undefined behaviour): the block is
    // damaged, and read no further.
    if (__builtin_add_overflow(previous, in->SignedVarint(), &previous)) return false;
    w->step_ids.push_back(previous);
  }
  w->window_ns = static_cast<int64_t>(in->Varint());
  w->iteration_s = in->F64();
  for (double& beta : w->category_beta) beta = in->F32();
  uint64_t iterations = in->Varint();
  if (!CountFits(*in, iterations, 4 * kCategoryCount, 1u << 20)) return false;
  w->iteration_category_beta.resize(iterations);
  for (auto& betas : w->iteration_category_beta) {
    for (float& beta : betas) beta = in->F32();
  }
  w->dataloader_ops_per_iter = in->F32();
  w->compute_calls_per_iter = in->F32();
  uint64_t collectives = in->Varint();
  if (!CountFits(*in, collectives, 5, 1u << 20)) return false;
  w->collectives.resize(collectives);
  for (CollectiveCall& c : w->collectives) {
    assign(&c.name, in->Varint());
    c.duration_us = in->F32();
    c.iteration = -1;
  }
  uint64_t functions = in->Varint();
  if (!CountFits(*in, functions, 18, 1u << 20)) return false;
  w->functions.resize(functions);
  for (FunctionPattern& f : w->functions) {
    assign(&f.name, in->Varint());
    uint8_t category = in->U8();
    uint8_t host_kind = in->U8();
    if (category >= kCategoryCount || host_kind >= kHostKindCount) return false;
    f.category = static_cast<Category>(category);
    f.host_kind = static_cast<HostKind>(host_kind);
    f.beta = in->F32();
    f.mu.reset();
    f.sigma.reset();
    if (in->U8() != 0) {
      f.mu = in->F32();
      f.sigma = in->F32();
    }
    f.calls_per_iter = in->F32();
    f.mean_duration_us = in->F32();
    f.median_duration_us = version >= 4 ? CallDurationUs(in) : 0.0;
    f.low_quartile_duration_us = version >= 5 ? CallDurationUs(in) : 0.0;
    f.bytes_per_iter = static_cast<int64_t>(in->Varint());
    f.shapes_hash = in->U32();
  }
  uint64_t warnings = in->Varint();
  if (!CountFits(*in, warnings, 1, 1u << 16)) return false;
  w->warnings.resize(warnings);
  for (std::string& warning : w->warnings) assign(&warning, in->Varint());
  for (FunctionPattern& f : w->functions) f.hot_frames.clear();
  w->cpu.reset();
  w->loader_worker_frames.clear();
  w->code_lines.clear();
  w->code_line_periods = 0;
  w->other_thread_frames.clear();
  if (version < 2) return in->ok();
  uint64_t located = in->Varint();
  if (!in->ok() || located > functions) return false;
  for (uint64_t i = 0; i < located; ++i) {
    uint64_t index = in->Varint();
    uint64_t frames = in->Varint();
    if (!in->ok() || index >= functions || frames > 16) return false;
    std::vector<HotFrame>& hot = w->functions[index].hot_frames;
    hot.resize(frames);
    for (HotFrame& frame : hot) {
      assign(&frame.location, in->Varint());
      frame.share = in->F32();
    }
  }
  if (version < 3) return in->ok();
  if (in->U8() != 0) {
    CpuShare cpu;
    for (float* v :
         {&cpu.cpus, &cpu.host_busy, &cpu.process_cpu, &cpu.run_delay, &cpu.loader_cpu, &cpu.loader_run_delay}) {
      float read = in->F32();
      *v = std::isfinite(read) ? std::max(0.0f, read) : 0.0f;
    }
    for (float* v : {&cpu.throttled, &cpu.main_cpu, &cpu.main_run_delay}) {
      float read = in->F32();
      *v = std::isfinite(read) && read >= 0 && read < 1e6f ? read : -1.0f;
    }
    cpu.throttled = std::min(1.0f, cpu.throttled);
    if (version >= 6) {
      for (float* v : {&cpu.loader_asleep, &cpu.loader_making}) {
        float read = in->F32();
        *v = std::isfinite(read) && read >= 0 && read < 1e6f ? read : -1.0f;
      }
    }
    w->cpu = cpu;
  }
  if (version < 7) return in->ok();
  uint64_t frames = in->Varint();
  if (!in->ok() || frames > 16) return false;
  w->loader_worker_frames.resize(frames);
  for (HotFrame& frame : w->loader_worker_frames) {
    assign(&frame.location, in->Varint());
    frame.share = in->F32();
  }
  if (version < 8) return in->ok();
  uint64_t lines = in->Varint();
  if (!in->ok() || lines > kMaxCodeLines) return false;
  w->code_lines.resize(lines);
  for (CodeFrame& line : w->code_lines) {
    assign(&line.location, in->Varint());
    float share = in->F32();
    line.share = std::isfinite(share) ? std::clamp(share, 0.0f, 1.0f) : 0.0f;
    uint64_t depth = in->Varint();
    if (depth > kMaxStackDepth) return false;
    line.depth = static_cast<uint32_t>(depth);
  }
  if (version < 9) return in->ok();
  float periods = in->F32();
  w->code_line_periods = std::isfinite(periods) && periods > 0 ? periods : 0.0F;
  if (version < 10) return in->ok();
  uint64_t threads = in->Varint();
  if (!in->ok() || threads > 16) return false;
  w->other_thread_frames.resize(threads);
  for (HotFrame& frame : w->other_thread_frames) {
    assign(&frame.location, in->Varint());
    frame.share = in->F32();
  }
  if (version < 11) return in->ok();
  // An iteration outside the window's steps is unknown, not an index to trust.
  for (CollectiveCall& c : w->collectives) {
    uint64_t iteration = in->Varint();
    c.iteration = iteration >= 1 && iteration <= w->step_ids.size() ? static_cast<int32_t>(iteration - 1) : -1;
  }
  return in->ok();
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

struct PatternWriter::Block {
  StringTable strings;
  ByteWriter workers;
  size_t count = 0;
};

PatternWriter::PatternWriter(size_t workers_per_block, int zstd_level, int format_version)
    : workers_per_block_(std::max<size_t>(1, workers_per_block)),
      zstd_level_(zstd_level),
      version_(std::clamp(format_version, static_cast<int>(kOldestReadablePatternVersion),
                          static_cast<int>(kPatternMagic[7]))),
      block_(std::make_unique<Block>()) {
  out_.back() = static_cast<char>(version_);
}

PatternWriter::~PatternWriter() = default;

void PatternWriter::Add(const WorkerPattern& worker) {
  WriteWorker(worker, version_, &block_->strings, &block_->workers);
  if (++block_->count >= workers_per_block_) FlushBlock();
}

void PatternWriter::FlushBlock() {
  if (block_->count == 0) return;
  ByteWriter payload;
  block_->strings.Write(&payload);
  payload.bytes() += block_->workers.bytes();
  const std::string& raw = payload.bytes();
  std::string compressed(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(compressed.data(), compressed.size(), raw.data(), raw.size(), zstd_level_);
  EROICA_CHECK(!ZSTD_isError(n));
  compressed.resize(n);
  ByteWriter header;
  header.U32(static_cast<uint32_t>(compressed.size()));
  header.U32(static_cast<uint32_t>(raw.size()));
  header.U32(static_cast<uint32_t>(block_->count));
  out_ += header.bytes();
  out_ += compressed;
  block_ = std::make_unique<Block>();
}

std::string PatternWriter::Finish() {
  FlushBlock();
  return std::move(out_);
}

std::string PatternWriter::TakeCompleted() {
  std::string done = std::move(out_);
  out_.clear();
  return done;
}

Status WritePatternFile(const std::string& path, const std::vector<WorkerPattern>& workers) {
  PatternWriter writer;
  for (const WorkerPattern& w : workers) writer.Add(w);
  return WriteFileAtomically(path, writer.Finish());
}

bool LooksLikePatternFile(const std::string& path) {
  StatusOr<FILE*> opened = OpenStreamForReading(path, kMaxPatternFileBytes, nullptr);
  if (!opened.ok()) return false;
  std::unique_ptr<FILE, FileCloser> file(*opened);
  char magic[8];
  // The version byte is left out, so that a newer file is read and refused with its version
  // instead of being skipped as "not a pattern".
  return std::fread(magic, 1, 8, file.get()) == 8 && std::string_view(magic, 7) == kPatternMagic.substr(0, 7);
}

namespace {

// One block read and inflated, or why not.
struct RawBlock {
  Status status;
  bool end = false;  // no more blocks
  std::string raw;
  uint32_t count = 0;
};

RawBlock ReadBlock(FILE* file, const std::string& path, int block, int64_t file_bytes) {
  RawBlock out;
  char header_bytes[12];
  size_t got = std::fread(header_bytes, 1, 12, file);
  if (got == 0) {
    out.end = true;
    return out;
  }
  ByteReader header(std::string_view(header_bytes, got));
  uint32_t compressed_bytes = header.U32(), raw_bytes = header.U32();
  out.count = header.U32();
  if (!header.ok() || compressed_bytes > kMaxBlockBytes || raw_bytes > kMaxBlockBytes) {
    out.status = ErrorStatus("{}: damaged block header in block {}", path, block);
    return out;
  }
  long at = std::ftell(file);
  if (at < 0 || compressed_bytes > file_bytes - at) {
    out.status = ErrorStatus("{}: truncated in block {} ({} bytes claimed, {} left)", path, block, compressed_bytes,
                             at < 0 ? 0 : file_bytes - at);
    return out;
  }
  std::string compressed(compressed_bytes, '\0');
  if (std::fread(compressed.data(), 1, compressed_bytes, file) != compressed_bytes) {
    out.status = ErrorStatus("{}: truncated in block {}", path, block);
    return out;
  }
  StatusOr<std::string> raw = InflateZstd(compressed, raw_bytes);
  if (!raw.ok()) {
    out.status = ErrorStatus("{}: corrupt block {}: {}", path, block, raw.status().message());
    return out;
  }
  out.raw = std::move(*raw);
  return out;
}

bool MoreToRead(FILE* file) {
  int c = std::fgetc(file);
  if (c == EOF) return false;
  std::ungetc(c, file);
  return true;
}

}  // namespace

// Blocks are inflated on a helper thread one ahead of the block being visited, so that zstd and
// the caller's work overlap on two cores; memory stays at two blocks.
Status ForEachPattern(const std::string& path, const std::function<void(WorkerPattern&&)>& visit) {
  int64_t file_bytes = 0;
  StatusOr<FILE*> opened = OpenStreamForReading(path, kMaxPatternFileBytes, &file_bytes);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<FILE, FileCloser> file(*opened);
  char magic[8];
  if (std::fread(magic, 1, 8, file.get()) != 8 || std::string_view(magic, 7) != kPatternMagic.substr(0, 7)) {
    return ErrorStatus("{}: not an eroica pattern file", path);
  }
  const int version = static_cast<unsigned char>(magic[7]);
  const int newest = static_cast<unsigned char>(kPatternMagic[7]);
  if (version < kOldestReadablePatternVersion || version > newest) {
    return ErrorStatus("{}: pattern format version {} is not supported (this eroica reads {} to {}{})", path, version,
                       static_cast<int>(kOldestReadablePatternVersion), newest,
                       version > newest ? "; a newer eroica wrote it" : "");
  }
  RawBlock current = ReadBlock(file.get(), path, 0, file_bytes);
  WorkerPattern worker;
  std::vector<std::string_view> strings;
  for (int block = 0;; ++block) {
    if (!current.status.ok()) return current.status;
    if (current.end) return Status::Ok();
    std::future<RawBlock> next;
    if (MoreToRead(file.get())) {
      next = std::async(std::launch::async, ReadBlock, file.get(), std::cref(path), block + 1, file_bytes);
    }
    ByteReader in(current.raw);
    uint64_t string_count = in.Varint();
    // Each string takes at least its length byte.
    if (!CountFits(in, string_count, 1, kMaxBlockBytes)) {
      return ErrorStatus("{}: corrupt string table in block {}", path, block);
    }
    strings.clear();
    strings.reserve(std::min<uint64_t>(string_count, 1 << 16));
    for (uint64_t i = 0; i < string_count && in.ok(); ++i) strings.push_back(in.String());
    for (uint32_t i = 0; i < current.count; ++i) {
      if (!ReadWorker(&in, strings, version, &worker)) {
        return ErrorStatus("{}: corrupt worker record in block {}", path, block);
      }
      visit(std::move(worker));
    }
    if (!next.valid()) return Status::Ok();
    current = next.get();
  }
}

StatusOr<std::vector<WorkerPattern>> ReadPatternFile(const std::string& path) {
  std::vector<WorkerPattern> workers;
  Status status = ForEachPattern(path, [&](WorkerPattern&& w) { workers.push_back(std::move(w)); });
  if (!status.ok()) return status;
  return workers;
}

}  // namespace eroica
