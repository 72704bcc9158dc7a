#include "summary/pattern_file.h"

#include <gtest/gtest.h>

#include <zstd.h>

#include <fstream>

#include "base/byte_codec.h"

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
  EXPECT_FALSE(w.functions[1].mu.has_value());
  EXPECT_EQ(w.functions[1].host_kind, HostKind::kPython);
  EXPECT_TRUE(w.functions[0].hot_frames.empty());
  ASSERT_EQ(w.functions[1].hot_frames.size(), 2u);
  EXPECT_EQ(w.functions[1].hot_frames[0].location, "train.py:57(step)");
  EXPECT_FLOAT_EQ(w.functions[1].hot_frames[1].share, 0.125F);
  EXPECT_EQ(w.warnings, std::vector<std::string>{"no ProfilerStep markers"});
}

// A version-1 file: one block whose worker ends after its warnings (no located functions).
std::string VersionOneFile(WorkerPattern w) {
  for (FunctionPattern& f : w.functions) f.hot_frames.clear();
  PatternWriter writer;
  writer.Add(w);
  std::string v2 = writer.Finish();
  ByteReader header(std::string_view(v2).substr(8, 12));
  uint32_t compressed = header.U32(), raw_bytes = header.U32(), count = header.U32();
  std::string raw(raw_bytes, '\0');
  EXPECT_EQ(ZSTD_decompress(raw.data(), raw.size(), v2.data() + 20, compressed), raw_bytes);
  EXPECT_EQ(raw.back(), '\0');  // n_located = 0
  raw.pop_back();
  std::string packed(ZSTD_compressBound(raw.size()), '\0');
  packed.resize(ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), 3));
  ByteWriter out;
  out.U32(static_cast<uint32_t>(packed.size()));
  out.U32(static_cast<uint32_t>(raw.size()));
  out.U32(count);
  std::string file = "EROICAP";
  file.push_back('\x01');
  file += out.bytes();
  file += packed;
  return file;
}

TEST(PatternFileTest, ReadsVersionOneFilesWithoutHotFrames) {
  TempDir dir;
  std::string path = dir.Write("v1.pattern", VersionOneFile(MakeWorker(3)));
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

TEST(PatternFileTest, DamageIsAnErrorNotACrash) {
  TempDir dir;
  PatternWriter writer;
  writer.Add(MakeWorker(1));
  std::string bytes = writer.Finish();
  EXPECT_FALSE(ReadPatternFile(dir.Write("cut.pattern", bytes.substr(0, bytes.size() - 5))).ok());
  EXPECT_FALSE(ReadPatternFile(dir.Write("magic.pattern", "NOTAPATTERNFILE")).ok());
  std::string future = bytes;
  future[7] = 9;
  StatusOr<std::vector<WorkerPattern>> read = ReadPatternFile(dir.Write("v9.pattern", future));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("version 9"), std::string::npos);
  for (size_t i = 8; i < bytes.size(); i += 3) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    (void)ReadPatternFile(dir.Write("flip.pattern", flipped));  // must not crash
  }
}

}  // namespace
}  // namespace eroica
