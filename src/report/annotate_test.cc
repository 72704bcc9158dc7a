#include "report/annotate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "report/diagnosis_json.h"
#include "report/diagnosis_json_reader.h"
#include "report/report_test_util.h"
#include "trace/byte_source.h"

namespace eroica {
namespace {

// CPU-only training, two iterations; the data loader owns [100, 400) and [1100, 1400) µs.
constexpr std::string_view kBareTrace = R"json([
 {"ph":"X","name":"ProfilerStep#12","pid":"CPU functions","tid":1,"ts":0,"dur":1000,"args":{}},
 {"ph":"X","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":"CPU functions","tid":1,"ts":100,"dur":300,"args":{}},
 {"ph":"X","name":"aten::addmm","pid":"CPU functions","tid":1,"ts":500,"dur":400,"args":{}},
 {"ph":"X","name":"ProfilerStep#13","pid":"CPU functions","tid":1,"ts":1000,"dur":1000,"args":{}},
 {"ph":"X","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":"CPU functions","tid":1,"ts":1100,"dur":300,"args":{}},
 {"ph":"X","name":"aten::addmm","pid":"CPU functions","tid":1,"ts":1500,"dur":400.5,"args":{"note":"<b>\u00e9</b>"}}
])json";

nlohmann::json ReadJson(const std::string& path) {
  StatusOr<std::unique_ptr<ByteSource>> source = OpenByteSource(path);  // inflates .gz too
  EXPECT_TRUE(source.ok());
  std::string text;
  char buffer[4096];
  while (true) {
    StatusOr<size_t> n = (*source)->Read(buffer, sizeof(buffer));
    if (!n.ok() || *n == 0) break;
    text.append(buffer, *n);
  }
  return nlohmann::json::parse(text);
}

std::vector<nlohmann::json> Added(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("pid", nlohmann::json()) == kEroicaPid) out.push_back(e);
  }
  return out;
}

TEST(AnnotateTest, CopiesEveryEventAndMarksTheCulpritsCriticalPath) {
  TempDir dir;
  std::string trace = dir.Write("rank-3.json", kBareTrace);
  StatusOr<AnnotationPlan> plan = PlanAnnotationForTrace(trace, TestDiagnosis());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->rank, 3);
  ASSERT_EQ(plan->findings.size(), 1u);
  EXPECT_TRUE(plan->findings[0].names_this_rank);
  EXPECT_TRUE(plan->findings[0].by_function);
  EXPECT_EQ(plan->findings[0].owned_ns, 600'000);

  std::string out = dir.path() + "/annotated.json";
  StatusOr<AnnotateResult> result = WriteAnnotatedTrace(trace, *plan, 8, out);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->events_copied, 6);
  nlohmann::json doc = ReadJson(out);
  ASSERT_EQ(doc["traceEvents"].size(), 6u + static_cast<size_t>(result->events_added));
  EXPECT_EQ(doc["traceEvents"][5]["dur"].get<double>(), 400.5);  // copied byte for byte
  EXPECT_EQ(doc["traceEvents"][5]["args"]["note"], "<b>\u00e9</b>");
  std::vector<nlohmann::json> added = Added(doc);
  std::vector<std::pair<double, double>> marks;
  bool instant = false, named = false;
  for (const auto& e : added) {
    if (e["ph"] == "X") marks.push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    if (e["ph"] == "i")
      instant = e["s"] == "g" && e["name"].get<std::string>().find("Rank 3 loses 50.0 ms") != std::string::npos;
    if (e["ph"] == "M" && e["name"] == "process_name") named = e["args"]["name"] == "eroica";
  }
  EXPECT_TRUE(instant);
  EXPECT_TRUE(named);
  EXPECT_EQ(marks, (std::vector<std::pair<double, double>>{{100, 300}, {1100, 300}}));
}

TEST(AnnotateTest, KeepsKinetoMetadataAndItsTimeBase) {
  TempDir dir;
  std::string trace = dir.Write("w.json", R"json({"schemaVersion": 1, "distributedInfo": {"rank": 2, "world_size": 4},
    "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#5","pid":10,"tid":1,"ts":0,"dur":1000},
    {"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":10,"tid":1,"ts":10.5,"dur":500}
  ], "traceName": "x"})json");
  Diagnosis d = TestDiagnosis();
  d.findings[0].workers = {2};
  StatusOr<AnnotationPlan> plan = PlanAnnotationForTrace(trace, d);
  ASSERT_TRUE(plan.ok());
  std::string out = dir.path() + "/annotated.json.gz";
  ASSERT_TRUE(WriteAnnotatedTrace(trace, *plan, 8, out).ok());
  nlohmann::json doc = ReadJson(out);
  EXPECT_EQ(doc["distributedInfo"]["rank"], 2);
  EXPECT_EQ(doc["baseTimeNanoseconds"], 1700000000000000000);
  EXPECT_EQ(doc["traceName"], "x");
  bool mark = false;
  for (const auto& e : Added(doc))
    mark = mark || (e["ph"] == "X" && e["ts"].get<double>() == 10.5 && e["dur"] == 500.0);
  EXPECT_TRUE(mark);
}

TEST(AnnotateTest, APeerTraceGetsTheFindingFlaggedAsAboutOtherRanks) {
  TempDir dir;
  std::string trace = dir.Write("rank-0.json", kBareTrace);
  StatusOr<AnnotationPlan> plan = PlanAnnotationForTrace(trace, TestDiagnosis());
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->findings.size(), 1u);
  EXPECT_FALSE(plan->findings[0].names_this_rank);
  int64_t count = 0;
  EXPECT_NE(AnnotationEventsJson(*plan, 8, &count).find("the finding is about other ranks"), std::string::npos);
}

TEST(AnnotateTest, TruncatedInputStillGivesValidJson) {
  TempDir dir;
  std::string cut(kBareTrace.substr(0, kBareTrace.find("ProfilerStep#13") + 40));
  std::string trace = dir.Write("rank-3.json", cut);
  StatusOr<AnnotationPlan> plan = PlanAnnotationForTrace(trace, TestDiagnosis());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::string out = dir.path() + "/annotated.json";
  StatusOr<AnnotateResult> result = WriteAnnotatedTrace(trace, *plan, 8, out);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->input_truncated);
  EXPECT_EQ(ReadJson(out)["traceEvents"].size(), 3u + static_cast<size_t>(result->events_added));
}

TEST(AnnotateTest, MarksAreBounded) {
  std::vector<Span> spans;
  for (int i = 0; i < 1000; ++i) spans.push_back({i * 10'000LL, i * 10'000LL + 5'000, 0});
  EXPECT_EQ(MergeMarks(spans, 2000).size(), 1000u);
  std::vector<Span> merged = MergeMarks(spans, 100);
  EXPECT_LE(merged.size(), 100u);
  EXPECT_EQ(merged.front().start_ns, 0);
  EXPECT_EQ(merged.back().end_ns, 999 * 10'000LL + 5'000);
}

TEST(DiagnosisJsonReaderTest, RoundTripsTheV1Document) {
  Diagnosis d = TestDiagnosis();
  d.warnings.push_back("rank 9 missing");
  StatusOr<Diagnosis> back = DiagnosisFromJsonText(DiagnosisToJson(d).dump());
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->findings.size(), 1u);
  EXPECT_EQ(back->findings[0].workers, std::vector<int>{3});
  EXPECT_EQ(back->findings[0].function, d.findings[0].function);
  EXPECT_DOUBLE_EQ(back->findings[0].impact_s_per_iter, 0.05);
  EXPECT_EQ(back->warnings, d.warnings);
  EXPECT_EQ(back->slowed_by, "");
  Diagnosis shared;
  shared.slowed_by = "+54% a step since the baseline: its node vm is shared";
  StatusOr<Diagnosis> healthy = DiagnosisFromJsonText(DiagnosisToJson(shared).dump());
  ASSERT_TRUE(healthy.ok());
  EXPECT_EQ(healthy->slowed_by, shared.slowed_by);
  EXPECT_FALSE(DiagnosisFromJsonText("{\"schema\": \"other\"}").ok());
  EXPECT_FALSE(DiagnosisFromJsonText("not json").ok());
}

// A later schema is refused in one line naming the file and both schemas, not read as v1.
TEST(DiagnosisJsonReaderTest, NewerSchemaIsOneLineNamingTheFile) {
  nlohmann::json doc = DiagnosisToJson(TestDiagnosis());
  doc["schema"] = "eroica.diagnosis/v2";
  TempDir dir;
  std::string path = dir.Write("next.json", doc.dump());
  StatusOr<Diagnosis> read = ReadDiagnosisFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), path +
                                         ": diagnosis format \"eroica.diagnosis/v2\" is not one this eroica "
                                         "reads (eroica.diagnosis/v1); a newer eroica may read it");
  doc["schema"] = "eroica.diagnosis/v1\nforged line";
  read = DiagnosisFromJsonText(doc.dump());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message().find('\n'), std::string::npos) << read.status().message();
}

}  // namespace
}  // namespace eroica
