#include "synth/synthesizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/temp_dir.h"
#include "summary/pattern_file.h"
#include "synth/template_model.h"

namespace eroica {
namespace {

FunctionPattern Function(std::string name, Category category, double beta, HostKind kind = HostKind::kNone) {
  FunctionPattern f;
  f.name = std::move(name);
  f.category = category;
  f.host_kind = kind;
  f.beta = beta;
  f.calls_per_iter = 2;
  return f;
}

// Two template ranks of 10 ms iterations; rank 1 waits 2 ms longer in its collective.
std::vector<WorkerPattern> Templates() {
  std::vector<WorkerPattern> out;
  for (int rank = 0; rank < 2; ++rank) {
    WorkerPattern w;
    w.rank = rank;
    w.world_size = 2;
    w.has_device = true;
    w.iteration_s = 0.010 + rank * 0.002;
    w.step_ids = {10, 11};
    w.window_ns = static_cast<int64_t>(w.iteration_s * 2e9);
    double t = w.iteration_s;
    w.functions = {Function("gemm", Category::kCompute, 0.005 / t),
                   Function("allreduce", Category::kCommunication, (0.002 + rank * 0.002) / t),
                   Function("enumerate(DataLoader)#x.__next__", Category::kDataloader, 0.001 / t),
                   Function("aten::mm", Category::kHost, 0.0015 / t, HostKind::kFramework),
                   Function("(python, unattributed)", Category::kHost, 0.0005 / t, HostKind::kPython)};
    w.category_beta = {0.005 / t, 0, (0.002 + rank * 0.002) / t, 0.001 / t, 0.002 / t};
    w.iteration_category_beta = {{0.5f, 0, 0.2f, 0.1f, 0.2f}, {0.5f, 0, 0.2f, 0.1f, 0.2f}};
    w.collectives = {{"allreduce", 2000.0f + rank * 2000.0f}};
    out.push_back(std::move(w));
  }
  return out;
}

TEST(TemplateModelTest, OwnWorkIsTheMedianAndCommunicationTheLeastWaitingRanks) {
  StatusOr<TemplateModel> model = BuildTemplateModel(Templates());
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_NEAR(model->iteration_s, 0.010, 1e-9);
  ASSERT_EQ(model->functions.size(), 5u);
  EXPECT_NEAR(model->functions[0].seconds, 0.005, 1e-9);
  EXPECT_NEAR(model->functions[1].seconds, 0.002, 1e-9);  // rank 0's, not the median
  EXPECT_EQ(model->iterations, 2);
}

TEST(SynthesizerTest, WritesAReadableBundleWithTheTruth) {
  TempDir dir;
  SynthOptions options;
  options.workers = 100;
  options.workers_per_block = 16;
  options.global_kind = "python";
  std::string bundle = dir.path() + "/synth.pattern", truth = dir.path() + "/truth.json";
  StatusOr<SynthResult> result = Synthesize(Templates(), options, bundle, truth);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->planted.size(), 2u);
  const PlantedFault& local = result->planted[0];
  EXPECT_FALSE(local.global);
  EXPECT_EQ(local.category, Category::kDataloader);
  EXPECT_EQ(local.function, "enumerate(DataLoader)#x.__next__");
  ASSERT_EQ(local.ranks.size(), 3u);
  EXPECT_EQ(result->planted[1].function, "(python, unattributed)");

  StatusOr<std::vector<WorkerPattern>> workers = ReadPatternFile(bundle);
  ASSERT_TRUE(workers.ok()) << workers.status().message();
  ASSERT_EQ(workers->size(), 100u);
  for (int rank = 0; rank < 100; ++rank) {
    const WorkerPattern& w = (*workers)[static_cast<size_t>(rank)];
    EXPECT_EQ(w.rank, rank);
    EXPECT_EQ(w.world_size, 100);
    double sum = 0;
    for (double beta : w.category_beta) sum += beta;
    EXPECT_NEAR(sum, 1.0, 1e-6);
    bool straggler = std::find(local.ranks.begin(), local.ranks.end(), rank) != local.ranks.end();
    double loader = w.category_beta[static_cast<size_t>(Category::kDataloader)];
    double comm = w.category_beta[static_cast<size_t>(Category::kCommunication)];
    // Everyone's iteration grows by the straggler's 1.5 ms; the others spend it waiting.
    EXPECT_NEAR(w.iteration_s, 0.010 * (1 + 0.15 + 0.08), 0.0004) << rank;
    if (straggler) {
      EXPECT_GT(loader, 0.10) << rank;
      EXPECT_LT(comm, 0.20) << rank;
    } else {
      EXPECT_LT(loader, 0.10) << rank;
      EXPECT_GT(comm, 0.25) << rank;
    }
  }
  std::ifstream in(truth);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "eroica.synth-truth/v1");
  EXPECT_EQ(j["planted"][0]["workers"].size(), 3u);

  // The same seed gives the same bundle.
  std::string again = dir.path() + "/again.pattern";
  ASSERT_TRUE(Synthesize(Templates(), options, again, "").ok());
  StatusOr<std::vector<WorkerPattern>> repeat = ReadPatternFile(again);
  ASSERT_TRUE(repeat.ok());
  EXPECT_EQ((*repeat)[42].functions[0].beta, (*workers)[42].functions[0].beta);
}

// One worker per block at summarize's level: the magic and one block are exactly the pattern
// file that rank's own `eroica summarize` writes (what bench/scale_bench.py sends per rank).
TEST(SynthesizerTest, OneWorkerPerBlockIsEachRanksOwnPatternFile) {
  TempDir dir;
  SynthOptions options;
  options.workers = 12;
  options.workers_per_block = 1;
  options.zstd_level = 9;
  std::string bundle = dir.path() + "/synth.pattern";
  ASSERT_TRUE(Synthesize(Templates(), options, bundle, "").ok());
  std::ifstream in(bundle, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.substr(0, kPatternMagic.size()), kPatternMagic);
  size_t pos = kPatternMagic.size();
  int rank = 0;
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  while (pos < bytes.size()) {
    ASSERT_LE(pos + 12, bytes.size());
    size_t size = 12 + u32(pos);
    EXPECT_EQ(u32(pos + 8), 1u) << "workers in block " << rank;
    std::string own = dir.path() + "/own.pattern", again = dir.path() + "/again.pattern";
    std::ofstream(own, std::ios::binary) << kPatternMagic << bytes.substr(pos, size);
    StatusOr<std::vector<WorkerPattern>> workers = ReadPatternFile(own);
    ASSERT_TRUE(workers.ok()) << workers.status().message();
    ASSERT_EQ(workers->size(), 1u);
    EXPECT_EQ((*workers)[0].rank, rank);
    ASSERT_TRUE(WritePatternFile(again, *workers).ok());
    std::ifstream a(again, std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>()),
              std::string(kPatternMagic) + bytes.substr(pos, size))
        << "rank " << rank << " differs from what summarize writes for its pattern";
    pos += size;
    ++rank;
  }
  EXPECT_EQ(rank, 12);
}

TEST(SynthesizerTest, RejectsWhatCannotBeALocalFault) {
  TempDir dir;
  SynthOptions options;
  options.workers = 4;
  options.stragglers = 2;
  EXPECT_FALSE(Synthesize(Templates(), options, dir.path() + "/x", "").ok());
  options.stragglers = 1;
  options.straggler_category = Category::kCommunication;
  EXPECT_FALSE(Synthesize(Templates(), options, dir.path() + "/x", "").ok());
  EXPECT_FALSE(Synthesize({}, SynthOptions{}, dir.path() + "/x", "").ok());
}

}  // namespace
}  // namespace eroica
