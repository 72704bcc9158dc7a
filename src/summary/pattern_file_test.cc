#include "summary/pattern_file.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <fstream>

#include "base/byte_codec.h"
#include "base/peak_rss.h"
#include "base/temp_dir.h"

namespace eroica {
namespace {

WorkerPattern MakeWorker(int rank) {
  WorkerPattern w;
  w.rank = rank;
  w.world_size = 128;
  w.host = "node-" + std::to_string(rank / 8);
  w.source = "rank-" + std::to_string(rank) + ".json.gz";
  w.has_device = true;
  w.device_name = "NVIDIA H100";
  w.step_ids = {100, 101, 102};
  w.window_ns = 3'000'000'123;
  w.iteration_s = 1.000000041;
  w.category_beta = {0.5, 0.1, 0.2, 0.1, 0.1};
  w.dataloader_ops_per_iter = 12;
  w.compute_calls_per_iter = 400;
  FunctionPattern f;
  f.name = "at::native::gemm";
  f.category = Category::kCompute;
  f.beta = 0.5;
  f.mu = 0.75;
  f.sigma = 0.125;
  f.calls_per_iter = 40;
  f.mean_duration_us = 12.5;
  f.median_duration_us = 9.75;
  f.low_quartile_duration_us = 8.5;
  f.bytes_per_iter = 1 << 20;
  f.shapes_hash = 0xdeadbeef;
  w.functions.push_back(f);
  FunctionPattern g;
  g.name = "(python, unattributed)";
  g.category = Category::kHost;
  g.host_kind = HostKind::kPython;
  g.beta = 0.5;
  g.hot_frames = {{"train.py:57(step)", 0.75F}, {"data.py:12(load)", 0.125F}};
  w.functions.push_back(g);
  w.warnings = {"no ProfilerStep markers"};
  w.cpu = CpuShare{.cpus = 2,
                   .host_busy = 0.875f,
                   .process_cpu = 0.5f,
                   .run_delay = 0.75f,
                   .loader_cpu = 0.25f,
                   .loader_run_delay = 0.125f,
                   .loader_asleep = 1.5f,
                   .loader_making = 1.75f,
                   .throttled = 0.0625f,
                   .main_cpu = 0.375f,
                   .main_run_delay = 0.25f};
  w.loader_worker_frames = {{"data.py:30(tokenize)", 0.625F}};
  w.code_lines = {{"train.py:90(<module>)", 1.0F, 0}, {"train.py:75(main)", 0.5F, 1}};
  w.code_line_periods = 37.5F;
  w.other_thread_frames = {{"train.py:140(metrics_thread)", 0.875F}};
  // The second call's iteration is unknown; the third's lies outside the window's 3 steps.
  w.collectives = {{"allreduce 4MiB", 1250.5F, 2}, {"allreduce", 12.5F, -1}, {"broadcast", 3.0F, 7}};
  return w;
}

TEST(PatternFileTest, RoundTripsEveryField) {
  TempDir dir;
  std::string path = dir.path() + "/w.pattern";
  ASSERT_TRUE(WritePatternFile(path, {MakeWorker(5)}).ok());
  ASSERT_TRUE(LooksLikePatternFile(path));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.world_size, 128);
  EXPECT_EQ(w.host, "node-0");
  EXPECT_EQ(w.step_ids, (std::vector<int64_t>{100, 101, 102}));
  EXPECT_EQ(w.window_ns, 3'000'000'123);
  EXPECT_DOUBLE_EQ(w.iteration_s, 1.000000041);
  ASSERT_EQ(w.functions.size(), 2u);
  EXPECT_EQ(w.functions[0].name, "at::native::gemm");
  EXPECT_FLOAT_EQ(static_cast<float>(*w.functions[0].mu), 0.75f);
  EXPECT_FLOAT_EQ(static_cast<float>(*w.functions[0].sigma), 0.125f);
  EXPECT_EQ(w.functions[0].bytes_per_iter, 1 << 20);
  EXPECT_EQ(w.functions[0].shapes_hash, 0xdeadbeefu);
  EXPECT_FLOAT_EQ(static_cast<float>(w.functions[0].median_duration_us), 9.75f);
  EXPECT_FLOAT_EQ(static_cast<float>(w.functions[0].low_quartile_duration_us), 8.5f);
  EXPECT_FALSE(w.functions[1].mu.has_value());
  EXPECT_EQ(w.functions[1].host_kind, HostKind::kPython);
  EXPECT_TRUE(w.functions[0].hot_frames.empty());
  ASSERT_EQ(w.functions[1].hot_frames.size(), 2u);
  EXPECT_EQ(w.functions[1].hot_frames[0].location, "train.py:57(step)");
  EXPECT_FLOAT_EQ(w.functions[1].hot_frames[1].share, 0.125F);
  EXPECT_EQ(w.warnings, std::vector<std::string>{"no ProfilerStep markers"});
  ASSERT_TRUE(w.cpu.has_value());
  EXPECT_FLOAT_EQ(w.cpu->host_busy, 0.875f);
  EXPECT_FLOAT_EQ(w.cpu->run_delay, 0.75f);
  EXPECT_FLOAT_EQ(w.cpu->loader_cpu, 0.25f);
  EXPECT_FLOAT_EQ(w.cpu->loader_run_delay, 0.125f);
  EXPECT_FLOAT_EQ(w.cpu->throttled, 0.0625f);
  EXPECT_FLOAT_EQ(w.cpu->main_cpu, 0.375f);
  EXPECT_FLOAT_EQ(w.cpu->main_run_delay, 0.25f);
  EXPECT_FLOAT_EQ(w.cpu->loader_asleep, 1.5f);
  EXPECT_FLOAT_EQ(w.cpu->loader_making, 1.75f);
  ASSERT_EQ(w.loader_worker_frames.size(), 1u);
  EXPECT_EQ(w.loader_worker_frames[0].location, "data.py:30(tokenize)");
  EXPECT_FLOAT_EQ(w.loader_worker_frames[0].share, 0.625F);
  ASSERT_EQ(w.code_lines.size(), 2u);
  EXPECT_EQ(w.code_lines[1].location, "train.py:75(main)");
  EXPECT_FLOAT_EQ(w.code_lines[1].share, 0.5F);
  EXPECT_EQ(w.code_lines[1].depth, 1u);
  EXPECT_FLOAT_EQ(w.code_line_periods, 37.5F);
  ASSERT_EQ(w.other_thread_frames.size(), 1u);
  EXPECT_EQ(w.other_thread_frames[0].location, "train.py:140(metrics_thread)");
  EXPECT_FLOAT_EQ(w.other_thread_frames[0].share, 0.875F);
  ASSERT_EQ(w.collectives.size(), 3u);
  EXPECT_EQ(w.collectives[0].name, "allreduce 4MiB");
  EXPECT_FLOAT_EQ(w.collectives[0].duration_us, 1250.5F);
  EXPECT_EQ(w.collectives[0].iteration, 2);
  EXPECT_EQ(w.collectives[1].iteration, -1);
  EXPECT_EQ(w.collectives[2].iteration, -1);
}

// An older version's file, as that version's writer left it (what it lacks is left out).
std::string OlderVersionFile(const WorkerPattern& w, char version) {
  PatternWriter writer(4096, 9, version);
  writer.Add(w);
  std::string file = writer.Finish();
  EXPECT_EQ(file[7], version);
  return file;
}

TEST(PatternFileTest, ReadsVersionTenFilesWithoutTheCollectivesIterations) {
  TempDir dir;
  std::string path = dir.Write("v10.pattern", OlderVersionFile(MakeWorker(10), '\x0a'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  EXPECT_EQ(w.other_thread_frames.size(), 1u);
  ASSERT_EQ(w.collectives.size(), 3u);
  EXPECT_FLOAT_EQ(w.collectives[0].duration_us, 1250.5F);
  EXPECT_EQ(w.collectives[0].iteration, -1);
}

TEST(PatternFileTest, ReadsVersionNineFilesWithoutTheOtherThreadsFrames) {
  TempDir dir;
  std::string path = dir.Write("v9.pattern", OlderVersionFile(MakeWorker(9), '\x09'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  EXPECT_FLOAT_EQ(w.code_line_periods, 37.5F);
  EXPECT_TRUE(w.other_thread_frames.empty());
}

TEST(PatternFileTest, ReadsVersionEightFilesWithoutTheLinesSamplingPeriods) {
  TempDir dir;
  std::string path = dir.Write("v8.pattern", OlderVersionFile(MakeWorker(8), '\x08'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  ASSERT_EQ(w.code_lines.size(), 2u);
  EXPECT_EQ(w.code_line_periods, 0.0F);  // unknown
}

TEST(PatternFileTest, ReadsVersionSevenFilesWithoutTheCodeLines) {
  TempDir dir;
  std::string path = dir.Write("v7.pattern", OlderVersionFile(MakeWorker(7), '\x07'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  ASSERT_EQ(w.loader_worker_frames.size(), 1u);
  EXPECT_TRUE(w.code_lines.empty());
}

TEST(PatternFileTest, ReadsVersionSixFilesWithoutTheLoaderWorkersFrames) {
  TempDir dir;
  std::string path = dir.Write("v6.pattern", OlderVersionFile(MakeWorker(6), '\x06'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  ASSERT_TRUE(w.cpu.has_value());
  EXPECT_FLOAT_EQ(w.cpu->loader_making, 1.75f);
  EXPECT_TRUE(w.loader_worker_frames.empty());
}

TEST(PatternFileTest, ReadsVersionFiveFilesWithoutTheLoaderWorkersSleep) {
  TempDir dir;
  std::string path = dir.Write("v5.pattern", OlderVersionFile(MakeWorker(6), '\x05'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  EXPECT_FLOAT_EQ(static_cast<float>(w.functions[0].low_quartile_duration_us), 8.5f);
  ASSERT_TRUE(w.cpu.has_value());
  EXPECT_FLOAT_EQ(w.cpu->main_run_delay, 0.25f);
  EXPECT_LT(w.cpu->loader_asleep, 0);  // unknown, never "none"
  EXPECT_LT(w.cpu->loader_making, 0);
}

TEST(PatternFileTest, ReadsVersionFourFilesWithoutTheLowerQuartileCall) {
  TempDir dir;
  std::string path = dir.Write("v4.pattern", OlderVersionFile(MakeWorker(6), '\x04'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  ASSERT_EQ(w.functions.size(), 2u);
  EXPECT_FLOAT_EQ(static_cast<float>(w.functions[0].median_duration_us), 9.75f);
  EXPECT_EQ(w.functions[0].low_quartile_duration_us, 0);
  EXPECT_EQ(w.functions[0].shapes_hash, 0xdeadbeefu);
  ASSERT_TRUE(w.cpu.has_value());
}

TEST(PatternFileTest, ReadsVersionThreeFilesWithoutTheMedianCall) {
  TempDir dir;
  std::string path = dir.Write("v3.pattern", OlderVersionFile(MakeWorker(6), '\x03'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  const WorkerPattern& w = (*read)[0];
  ASSERT_EQ(w.functions.size(), 2u);
  EXPECT_EQ(w.functions[0].median_duration_us, 0);
  EXPECT_FLOAT_EQ(static_cast<float>(w.functions[0].mean_duration_us), 12.5f);
  EXPECT_EQ(w.functions[0].shapes_hash, 0xdeadbeefu);
  ASSERT_TRUE(w.cpu.has_value());
  EXPECT_FLOAT_EQ(w.cpu->main_run_delay, 0.25f);
}

TEST(PatternFileTest, ReadsVersionTwoFilesWithoutCpuShare) {
  TempDir dir;
  std::string path = dir.Write("v2.pattern", OlderVersionFile(MakeWorker(4), '\x02'));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_FALSE((*read)[0].cpu.has_value());
  ASSERT_EQ((*read)[0].functions[1].hot_frames.size(), 2u);
  EXPECT_EQ((*read)[0].warnings, std::vector<std::string>{"no ProfilerStep markers"});
}

TEST(PatternFileTest, ReadsVersionOneFilesWithoutHotFrames) {
  TempDir dir;
  std::string path = dir.Write("v1.pattern", OlderVersionFile(MakeWorker(3), '\x01'));
  ASSERT_TRUE(LooksLikePatternFile(path));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].rank, 3);
  ASSERT_EQ((*read)[0].functions.size(), 2u);
  EXPECT_TRUE((*read)[0].functions[1].hot_frames.empty());
  EXPECT_EQ((*read)[0].warnings, std::vector<std::string>{"no ProfilerStep markers"});
}

TEST(PatternFileTest, BundlesSpanSeveralBlocks) {
  PatternWriter writer(/*workers_per_block=*/7);
  for (int r = 0; r < 50; ++r) writer.Add(MakeWorker(r));
  TempDir dir;
  std::string path = dir.Write("bundle.pattern", writer.Finish());
  std::vector<int> ranks;
  ASSERT_TRUE(ForEachPattern(path, [&](WorkerPattern&& w) { ranks.push_back(w.rank); }).ok());
  ASSERT_EQ(ranks.size(), 50u);
  EXPECT_EQ(ranks[49], 49);
}

// The online scale-out path (python/eroica/central.py) bundles the ranks' files by keeping the
// first magic and appending every file's blocks: blocks must stay self-contained (each its own
// string table) for that bundle to read as every worker of every file.
TEST(PatternFileTest, BlocksOfSeveralFilesAppendedAfterOneMagicAreOneBundle) {
  std::string bundle{kPatternMagic};
  for (int r = 0; r < 3; ++r) {
    PatternWriter writer;
    WorkerPattern w = MakeWorker(r);
    w.host = "node" + std::to_string(r);  // each file's string table differs
    writer.Add(w);
    bundle += writer.Finish().substr(kPatternMagic.size());
  }
  TempDir dir;
  std::string path = dir.Write("patterns.pattern", bundle);
  std::vector<std::string> hosts;
  ASSERT_TRUE(ForEachPattern(path, [&](WorkerPattern&& w) { hosts.push_back(w.host); }).ok());
  EXPECT_EQ(hosts, (std::vector<std::string>{"node0", "node1", "node2"}));
}

// A file from a later eroica: one line naming the file and both versions, and `diagnose DIR`
// must see it as a pattern file (so it reports it) rather than skip it.
TEST(PatternFileTest, NewerVersionIsOneLineNamingTheFile) {
  TempDir dir;
  PatternWriter writer;
  writer.Add(MakeWorker(1));
  std::string newer = writer.Finish();
  newer[7] = static_cast<char>(kPatternMagic[7] + 1);
  std::string path = dir.Write("next.pattern", newer);
  EXPECT_TRUE(LooksLikePatternFile(path));
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(path);
  ASSERT_FALSE(read.ok());
  std::string message = read.status().message();
  EXPECT_EQ(message, path +
                         ": pattern format version 12 is not supported (this eroica reads 1 to 11; "
                         "a newer eroica wrote it)");
  newer[7] = static_cast<char>(200);
  read = ReadPatternFile(dir.Write("v200.pattern", newer));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("version 200 is not supported"), std::string::npos);
}

TEST(PatternFileTest, DamageIsAnErrorNotACrash) {
  TempDir dir;
  PatternWriter writer;
  writer.Add(MakeWorker(1));
  std::string bytes = writer.Finish();
  EXPECT_FALSE(ReadPatternFile(dir.Write("cut.pattern", bytes.substr(0, bytes.size() - 5))).ok());
  EXPECT_FALSE(ReadPatternFile(dir.Write("magic.pattern", "NOTAPATTERNFILE")).ok());
  std::string future = bytes;
  future[7] = 12;
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(dir.Write("v12.pattern", future));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("version 12"), std::string::npos);
  for (size_t i = 8; i < bytes.size(); i += 3) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    (void)ReadPatternFile(dir.Write("flip.pattern", flipped));  // must not crash
  }
}

std::string Block(const std::string& raw, uint32_t claimed_raw, uint32_t count) {
  std::string compressed(ZSTD_compressBound(raw.size()), '\0');
  compressed.resize(ZSTD_compress(compressed.data(), compressed.size(), raw.data(), raw.size(), 1));
  ByteWriter header;
  header.U32(static_cast<uint32_t>(compressed.size()));
  header.U32(claimed_raw);
  header.U32(count);
  return header.bytes() + compressed;
}

// Lengths in the file used to be believed before they were checked: a 30-byte header took
// 1 GiB, a worker record claiming a million functions took 100 MB.
TEST(PatternFileTest, ClaimedLengthsCostNothingUntilTheBytesAreThere) {
  TempDir dir;
  int64_t before = PeakRssBytes();
  ByteWriter forged;
  forged.U32(1u << 30);  // compressed bytes: far more than the file has
  forged.U32(1u << 30);
  forged.U32(1);
  std::string header_only = std::string(kPatternMagic) + forged.bytes() + std::string(10, 'z');
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(dir.Write("a.pattern", header_only));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("truncated"), std::string::npos) << read.status().message();

  // A real zstd frame of 4 bytes whose header claims 1 GiB once inflated.
  read = ReadPatternFile(dir.Write("b.pattern", std::string(kPatternMagic) + Block("abcd", 1u << 30, 1)));
  ASSERT_FALSE(read.ok());

  // A worker whose counts promise far more than the block holds.
  ByteWriter raw;
  raw.Varint(0);  // no strings
  raw.SignedVarint(0);
  raw.SignedVarint(4);
  for (int i = 0; i < 2; ++i) raw.Varint(0);
  raw.U8(0);
  for (int i = 0; i < 2; ++i) raw.Varint(0);
  raw.Varint(0);  // steps
  raw.Varint(0);
  raw.F64(0.1);
  for (int i = 0; i < kCategoryCount; ++i) raw.F32(0);
  raw.Varint(0);  // iterations
  raw.F32(0);
  raw.F32(0);
  raw.Varint(0);        // collectives
  raw.Varint(1 << 20);  // functions, with none behind
  std::string payload = raw.bytes() + std::string(64, '\0');
  read = ReadPatternFile(
      dir.Write("c.pattern", std::string(kPatternMagic) + Block(payload, static_cast<uint32_t>(payload.size()), 1)));
  ASSERT_FALSE(read.ok());
  EXPECT_LT(PeakRssBytes() - before, 48 << 20);
}
}  // namespace
}  // namespace eroica
