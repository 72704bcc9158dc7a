#include "trace/reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/temp_dir.h"

namespace eroica {
namespace {

// Native Kineto order: metadata after traceEvents; relative float ts; string pids.
constexpr std::string_view kKinetoTrace = R"json( {
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8,
    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0,1,2,3,4,5,6,7]}]},
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}, {"id": 1, "name": "NVIDIA H100 80GB HBM3"}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 100, "tid": 100,
   "ts": 1000.5, "dur": 500.25, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
   "ts": 1010, "dur": 5, "args": {"External id": 2, "correlation": 77}},
  {"ph": "s", "id": 77, "pid": 100, "tid": 100, "ts": 1010, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
   "pid": 0, "tid": 7, "ts": 1020.001, "dur": 100,
   "args": {"correlation": 77, "Collective name": "allreduce", "In msg nelems": 1024, "dtype": "Float"}},
  {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 1020, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": 1001, "dur": 3,
   "args": {"Input Dims": [[32, 64], [64, 8]], "External id": 3}},
  {"ph": "X", "cat": "python_function", "name": "<built-in method numel of Tensor object at 0x7fdc6a2b>",
   "pid": 100, "tid": 100, "ts": 1002, "dur": 1},
  {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
  {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 1600},
  {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 990, "dur": 700}
  ],
  "traceName": "x.json",
  "baseTimeNanoseconds": 1711964646000000000
})json";

constexpr std::string_view kBareList =
    R"([{"name": "ProfilerStep#2", "ph": "X", "ts": 251, "dur": 29888, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "gloo:all_reduce", "ph": "X", "ts": 28394, "dur": 1994, "tid": 2, "pid": "CPU functions", "args": {}}])";

std::string WriteGzip(const TempDir& dir, const std::string& name, std::string_view contents) {
  std::string path = dir.path() + "/" + name;
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, contents.data(), static_cast<unsigned>(contents.size()));
  gzclose(file);
  return path;
}

TEST(ReadTraceTest, KinetoObjectWithMetadataAfterEvents) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("t.json", kKinetoTrace));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->meta.rank, 3);
  EXPECT_FALSE(trace->meta.rank_from_file_name);
  EXPECT_EQ(trace->meta.world_size, 8);
  EXPECT_EQ(trace->meta.backend, "nccl");
  ASSERT_EQ(trace->meta.process_groups.size(), 1u);
  EXPECT_EQ(trace->meta.process_groups[0].ranks.size(), 8u);
  EXPECT_EQ(trace->meta.device_count, 2);
  EXPECT_EQ(trace->meta.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(trace->stats.events_seen, 10);
  EXPECT_EQ(trace->stats.complete_events, 6);
  EXPECT_EQ(trace->stats.flow_events, 2);
  EXPECT_EQ(trace->stats.metadata_events, 1);
  EXPECT_EQ(trace->stats.instant_events, 1);
  EXPECT_EQ(trace->stats.skipped(), 0);
  const TraceEvent& step = trace->events[0];
  EXPECT_EQ(trace->Str(step.name), "ProfilerStep#7");
  EXPECT_EQ(step.ts_ns, 1711964646000000000 + 1000500);
  EXPECT_EQ(step.dur_ns, 500250);
  const TraceEvent& kernel = trace->events[2];
  EXPECT_EQ(trace->Str(kernel.cat), "kernel");
  EXPECT_EQ(trace->Correlation(kernel), 77);
  EXPECT_EQ(trace->Bytes(kernel), 4096);
  EXPECT_EQ(trace->Str(trace->Collective(kernel)), "allreduce");
  EXPECT_EQ(kernel.ts_ns, 1711964646000000000 + 1020001);
  EXPECT_EQ(trace->Str(trace->Shapes(trace->events[3])), "[[32, 64], [64, 8]]");
  EXPECT_EQ(trace->Str(trace->events[4].name), "<built-in method numel of Tensor object at 0x>");
  EXPECT_TRUE(IsStringPid(trace->events[5].pid));
}

TEST(ReadTraceTest, BareEventListFromCpuOnlyBuilds) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("worker5.pt.trace.json", kBareList));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(trace->meta.bare_event_list);
  EXPECT_EQ(trace->meta.rank, 5);
  EXPECT_TRUE(trace->meta.rank_from_file_name);
  ASSERT_EQ(trace->events.size(), 2u);
  EXPECT_EQ(trace->events[1].ts_ns, 28394000);
  EXPECT_EQ(trace->events[0].pid, trace->events[1].pid);
  EXPECT_EQ(trace->events[1].tid, 2);
}

TEST(ReadTraceTest, GzipAndTinyChunksGiveTheSameEvents) {
  TempDir dir;
  StatusOr<Trace> plain = ReadTrace(dir.Write("a.json", kKinetoTrace));
  StatusOr<Trace> gz = ReadTrace(WriteGzip(dir, "a.json.gz", kKinetoTrace), {.chunk_bytes = 1});
  ASSERT_TRUE(plain.ok() && gz.ok());
  ASSERT_EQ(plain->events.size(), gz->events.size());
  for (size_t i = 0; i < plain->events.size(); ++i) {
    EXPECT_EQ(plain->events[i].ts_ns, gz->events[i].ts_ns);
    EXPECT_EQ(plain->Str(plain->events[i].name), gz->Str(gz->events[i].name));
  }
}

// gzip inflated on a helper thread and on the reader's own thread give the same trace, and so do
// concatenated gzip members.
TEST(ReadTraceTest, GzipOnAHelperThreadAndInlineAgree) {
  TempDir dir;
  std::string big = "[";
  for (int i = 0; i < 50000; ++i) {
    big +=
        fmt::format(R"({{"name": "aten::op{}", "ph": "X", "ts": {}, "dur": 1, "tid": 1, "pid": 1}},)", i % 97, i * 3);
  }
  big.back() = ']';
  std::string path = WriteGzip(dir, "big.json.gz", big);
  std::string two = dir.path() + "/two.json.gz";
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::string half1 = WriteGzip(dir, "h1.gz", std::string_view(big).substr(0, 1000));
    std::string half2 = WriteGzip(dir, "h2.gz", std::string_view(big).substr(1000));
    std::ifstream a(half1, std::ios::binary), b(half2, std::ios::binary);
    std::ofstream out(two, std::ios::binary);
    out << a.rdbuf() << b.rdbuf();
  }
  StatusOr<Trace> helper = ReadTrace(path);
  StatusOr<Trace> inline_ = ReadTrace(path, {.inflate_on_helper_thread = false});
  StatusOr<Trace> members = ReadTrace(two);
  StatusOr<Trace> members_inline = ReadTrace(two, {.inflate_on_helper_thread = false});
  ASSERT_TRUE(helper.ok() && inline_.ok() && members.ok() && members_inline.ok());
  for (const Trace* t : {&*helper, &*inline_, &*members, &*members_inline}) {
    ASSERT_EQ(t->events.size(), 50000u);
    EXPECT_EQ(t->stats.input_bytes, static_cast<int64_t>(big.size()));
    EXPECT_EQ(t->events[49999].ts_ns, 49999 * 3000);
    EXPECT_FALSE(t->stats.truncated);
  }
}

TEST(ReadTraceTest, TruncatedJsonKeepsCompleteEvents) {
  TempDir dir;
  std::string_view cut = kKinetoTrace.substr(0, kKinetoTrace.find("aten::mm") + 20);
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-2.json", cut));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(trace->stats.truncated);
  EXPECT_EQ(trace->stats.truncated_at_byte, static_cast<int64_t>(cut.size()));
  EXPECT_EQ(trace->events.size(), 3u);  // the step, the launch and the kernel
  EXPECT_EQ(trace->meta.rank, 3);       // distributedInfo came before the cut
  EXPECT_NE(DescribeReadProblems(*trace).find("truncated"), std::string::npos);
}

TEST(ReadTraceTest, TruncatedGzipKeepsWhatInflated) {
  TempDir dir;
  std::string big = "[";
  for (int i = 0; i < 20000; ++i) {
    big +=
        fmt::format(R"({{"name": "aten::op{}", "ph": "X", "ts": {}, "dur": 1, "tid": 1, "pid": 1}},)", i % 97, i * 3);
  }
  big.back() = ']';
  std::string full = WriteGzip(dir, "full.json.gz", big);
  std::string bytes;
  {
    std::ifstream in(full, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string cut = dir.Write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  for (bool helper : {true, false}) {
    StatusOr<Trace> trace = ReadTrace(cut, {.inflate_on_helper_thread = helper});
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_TRUE(trace->stats.truncated);
    EXPECT_GT(trace->events.size(), 1000u);
    EXPECT_LT(trace->events.size(), 20000u);
    EXPECT_NE(trace->stats.first_problem.find("gzip"), std::string::npos);
  }
}

// An empty .json.gz, a gzip of nothing and a gzip of a non-trace are one-line errors, not crashes.
TEST(ReadTraceTest, EmptyAndNonTraceGzipAreCleanErrors) {
  TempDir dir;
  for (const std::string& path : {dir.Write("empty.json.gz", ""), WriteGzip(dir, "nothing.json.gz", ""),
                                  WriteGzip(dir, "text.json.gz", "hello")}) {
    for (bool helper : {true, false}) {
      StatusOr<Trace> trace = ReadTrace(path, {.inflate_on_helper_thread = helper});
      ASSERT_FALSE(trace.ok()) << path;
      EXPECT_NE(trace.status().message().find(path), std::string::npos) << trace.status().message();
    }
  }
}

TEST(ReadTraceTest, UnusableInputIsAOneLineErrorNamingTheFile) {
  TempDir dir;
  struct Case {
    std::string name, contents, expected;
  };
  std::vector<Case> cases = {
      {"empty.json", "", "empty file"},
      {"blank.json", "  \n ", "empty file"},
      {"text.json", "hello", "not a JSON trace"},
      {"other.json", R"({"a": 1, "b": [1,2]})", "no traceEvents"},
      {"cut.json", R"({"schemaVersion": 1, "traceEv)", "truncated"},
      {"cut2.json", R"([{"name": "x", "ph": "X")", "truncated"},
  };
  for (const Case& c : cases) {
    StatusOr<Trace> trace = ReadTrace(dir.Write(c.name, c.contents));
    ASSERT_FALSE(trace.ok()) << c.name;
    EXPECT_NE(trace.status().message().find(c.name), std::string::npos) << trace.status().message();
    EXPECT_NE(trace.status().message().find(c.expected), std::string::npos) << trace.status().message();
    EXPECT_EQ(trace.status().message().find('\n'), std::string::npos);
  }
  EXPECT_FALSE(ReadTrace(dir.path() + "/missing.json").ok());
}

TEST(ReadTraceTest, BadFieldsAreCountedAndTheRestIsKept) {
  TempDir dir;
  std::string_view text = R"([
    {"name": "good", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1},
    {"name": "neg", "ph": "X", "ts": 1, "dur": -2, "pid": 1, "tid": 1},
    {"name": "strts", "ph": "X", "ts": "1", "dur": 2, "pid": 1, "tid": 1},
    {"name": "huge", "ph": "X", "ts": 1e400, "dur": 2, "pid": 1, "tid": 1},
    {"name": 5, "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1},
    {"name": "nodur", "ph": "X", "ts": 1, "pid": 1, "tid": 1},
    7,
    {"name": "good2", "ph": "X", "ts": 3, "dur": 2, "pid": {"a": 1}, "tid": 1},
    {"name": "good3", "ph": "X", "ts": 3, "dur": 2, "pid": 1, "tid": 1}
  ])";
  StatusOr<Trace> trace = ReadTrace(dir.Write("bad.json", text));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->events.size(), 2u);
  EXPECT_EQ(trace->stats.negative_duration, 1);
  EXPECT_EQ(trace->stats.absurd_timestamp, 2);
  EXPECT_EQ(trace->stats.missing_timestamp, 1);
  EXPECT_EQ(trace->stats.malformed_events, 3);
  EXPECT_FALSE(DescribeReadProblems(*trace).empty());
}

// Events are stored in 40 bytes: ids that do not fit 32 bits (a 64-bit thread id, a correlation
// past 2^31) and the rarer args live beside them, and read back as they were written.
TEST(ReadTraceTest, WideIdsAndRareArgsReadBackExactly) {
  TempDir dir;
  std::string_view text = R"([
    {"name": "a", "ph": "X", "ts": 1, "dur": 2, "pid": 7, "tid": 140234567890123, "args": {"correlation": 5000000000}},
    {"name": "b", "ph": "X", "ts": 2, "dur": 2, "pid": -5000000000, "tid": 140234567890123, "args": {"correlation": 12}},
    {"name": "c", "ph": "X", "ts": 3, "dur": 2, "pid": 7, "tid": 140234567890124, "args": {"bytes": 64, "Input Dims": [[2]]}},
    {"name": "d", "ph": "X", "ts": 4, "dur": 2, "pid": "Spans", "tid": 2147483647, "args": {"correlation": -7}},
    {"name": "e", "ph": "X", "ts": 5, "dur": 2, "pid": 1073741829, "tid": 1, "args": {}}
  ])";
  StatusOr<Trace> trace = ReadTrace(dir.Write("wide.json", text));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->events.size(), 5u);
  const Trace& t = *trace;
  EXPECT_EQ(t.IdValue(t.events[0].pid), 7);
  EXPECT_EQ(t.IdValue(t.events[0].tid), 140234567890123);
  EXPECT_EQ(t.Correlation(t.events[0]), 5000000000);
  EXPECT_EQ(t.Bytes(t.events[0]), -1);
  EXPECT_EQ(t.IdValue(t.events[1].pid), -5000000000);
  EXPECT_EQ(t.events[1].tid, t.events[0].tid);  // one number, one code: equality holds on codes
  EXPECT_NE(t.events[2].tid, t.events[0].tid);
  EXPECT_EQ(t.Correlation(t.events[1]), 12);
  EXPECT_EQ(t.events[1].extra, 0u);  // nothing rare: no side entry
  EXPECT_EQ(t.Bytes(t.events[2]), 64);
  EXPECT_EQ(t.Str(t.Shapes(t.events[2])), "[[2]]");
  EXPECT_EQ(t.Correlation(t.events[2]), -1);
  EXPECT_TRUE(IsStringPid(t.events[3].pid));
  EXPECT_EQ(t.Str(StringOfIdCode(t.events[3].pid)), "Spans");
  // A number where string ids' codes start (2^30 + 5) stays a number, apart from string id 5.
  EXPECT_FALSE(IsStringPid(t.events[4].pid));
  EXPECT_EQ(t.IdValue(t.events[4].pid), 1073741829);
  EXPECT_EQ(t.IdValue(t.events[3].tid), 2147483647);
  EXPECT_EQ(t.Correlation(t.events[3]), -7);
  EXPECT_EQ(t.extras.size(), 3u);
}

TEST(RankFromFileNameTest, Patterns) {
  EXPECT_EQ(RankFromFileName("/x/rank-3.json.gz"), 3);
  EXPECT_EQ(RankFromFileName("worker3.pt.trace.json"), 3);
  EXPECT_EQ(RankFromFileName("worker0_step_12.1694128201545.pt.trace.json"), 0);
  EXPECT_EQ(RankFromFileName("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"), 34);
  EXPECT_EQ(RankFromFileName("trace_17.json"), 17);
  EXPECT_EQ(RankFromFileName("trace.json"), -1);
}

// Every real trace in ../shared/traces reads without a skipped event, with the event counts
// SOURCES.md lists (counted there by Python's json module).
TEST(ReadTraceTest, EveryRealTraceReads) {
  std::filesystem::path root = std::filesystem::path(EROICA_SHARED_DIR) / "traces";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "no " << root;
  const std::map<std::string, int64_t> expected_events = {
      {"worker0_step_12.1694128201545.pt.trace.json", 3290},
      {"df_index_resolver.json.gz", 216092},
      {"rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 30},
      {"eager_trace.json.gz", 24656},
      {"train.json", 14240},
      {"resnet_act_checkpoint.json.gz", 56451},
  };
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.find(".json") == std::string::npos) continue;
    ++files;
    StatusOr<Trace> trace = ReadTrace(entry.path().string());
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->stats.skipped(), 0) << name << ": " << DescribeReadProblems(*trace);
    EXPECT_FALSE(trace->stats.truncated) << name;
    EXPECT_GT(trace->events.size(), 0u) << name;
    auto it = expected_events.find(name);
    if (it != expected_events.end()) {
      EXPECT_EQ(trace->stats.events_seen, it->second) << name;
    }
  }
  EXPECT_EQ(files, 26);
}

// The plain-JSON reader used to reserve ~0.56x the file's size up front: a sparse 200 GB file
// (`truncate -s 200G`) aborted it in 0.01 s.
TEST(ReadTraceTest, ASparseHugeFileIsACleanError) {
  TempDir dir;
  std::string path = dir.path() + "/rank0.json";
  { std::ofstream(path) << "{\"traceEvents\": ["; }
  if (::truncate(path.c_str(), int64_t{200} << 30) != 0) GTEST_SKIP() << "no sparse files here";
  auto start = std::chrono::steady_clock::now();
  StatusOr<Trace> trace = ReadTrace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("runs past"), std::string::npos) << trace.status().message();
  // It stops after the 256 MB one value may take (the old reader read on until bad_alloc).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// The same for a sparse .json.gz: every gzip streams now (none is inflated whole into memory
// its trailer claims), so the zeros after the header are a damaged stream, reported at once.
TEST(ReadTraceTest, ASparseHugeGzipIsACleanError) {
  TempDir dir;
  std::string path = dir.path() + "/rank0.json.gz";
  { std::ofstream(path, std::ios::binary) << std::string("\x1f\x8b\x08\0\0\0\0\0\0\x03", 10); }
  if (::truncate(path.c_str(), int64_t{200} << 30) != 0) GTEST_SKIP() << "no sparse files here";
  auto start = std::chrono::steady_clock::now();
  for (bool helper : {true, false}) {
    StatusOr<Trace> trace = ReadTrace(path, {.inflate_on_helper_thread = helper});
    ASSERT_FALSE(trace.ok());
    EXPECT_NE(trace.status().message().find("corrupt gzip data"), std::string::npos) << trace.status().message();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ReadTraceTest, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir.path() + "/rank0.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  StatusOr<Trace> trace = ReadTrace(fifo);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("FIFO"), std::string::npos);
}
}  // namespace
}  // namespace eroica
