#include "report/html_report.h"

#include <gtest/gtest.h>

#include "diff/pattern_diff.h"
#include "report/heatmap.h"
#include "report/html_escape.h"
#include "report/report_test_util.h"
#include "report/text_report.h"
#include "report/verdict.h"

namespace eroica {
namespace {

TEST(HtmlEscapeTest, EscapesMarkupQuotesAndBadBytes) {
  EXPECT_EQ(EscapeHtml("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;");
  EXPECT_EQ(EscapeHtml("ok \xff\xfe end"), "ok \xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_EQ(EscapeHtml("a\x01"
                       "b\tc"),
            "ab\tc");
  EXPECT_EQ(EscapeHtml("β μ σ"), "β μ σ");
}

TEST(HtmlEscapeTest, EllipsizeCountsCharactersNotBytes) {
  EXPECT_EQ(Ellipsize("short", 10), "short");
  EXPECT_EQ(Ellipsize("abcdefgh", 5), "abcd\u2026");
  EXPECT_EQ(Ellipsize("ββββββ", 3), "ββ\u2026");
}

TEST(VerdictTest, OneSentenceSaysWhoWhatHowMuch) {
  Diagnosis d = TestDiagnosis();
  EXPECT_EQ(FindingSentence(d.findings[0], 8),
            "Rank 3 loses 50.0 ms per iteration in the data loader "
            "(enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__); the other 7 ranks wait for it.");
  Finding hang;
  hang.scope = FindingScope::kLocal;
  hang.category = FindingCategory::kHang;
  hang.workers = {1};
  hang.location = "/app/train.py:88";
  EXPECT_EQ(FindingSentence(hang, 4), "Rank 1 is stuck at /app/train.py:88; the other ranks wait for it.");
  Finding global = d.findings[0];
  global.scope = FindingScope::kGlobal;
  global.workers = {0, 1, 2, 3};
  EXPECT_EQ(WorkersPhrase(global, 4), "All 4 ranks");
  // A program point's name is already in parentheses: not wrapped twice.
  global.category = FindingCategory::kHost;
  global.function = "(python between aten::mm and aten::add)";
  EXPECT_EQ(FindingSentence(global, 4),
            "All 4 ranks lose 50.0 ms per iteration in host (Python) code (python between aten::mm and aten::add).");
}

TEST(HtmlReportTest, VerdictFirstThenEvidenceChartsAndWarnings) {
  Diagnosis d = TestDiagnosis();
  d.warnings.push_back("rank 9: trace truncated at byte 100");
  std::string html = RenderHtmlReport(d, TestWorkers(), SessionInfo{}, {"/runs/x", ""});
  size_t verdict = html.find("id=\"verdict\"");
  size_t evidence = html.find("id=\"finding-1\"");
  size_t heatmap = html.find("id=\"heatmap\"");
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(verdict, evidence);
  EXPECT_LT(evidence, heatmap);
  EXPECT_NE(html.find("Rank 3 loses 50.0 ms per iteration"), std::string::npos);
  EXPECT_NE(html.find("Next: Check rank 3"), std::string::npos);
  EXPECT_NE(html.find("class=\"strip\""), std::string::npos);
  EXPECT_NE(html.find("class=\"linechart\""), std::string::npos);  // per-iteration persistence
  EXPECT_NE(html.find("trace truncated at byte 100"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no fetches, only the SVG namespace
  EXPECT_EQ(html.find("id=\"series\""), std::string::npos);                  // no session, no iteration-time chart
}

// A job healthy in itself that a node's other processes made slower: every verdict says why.
TEST(TextReportTest, AHealthyJobSlowedFromOutsideSaysWhyInItsVerdict) {
  Diagnosis d;
  d.workers = 4;
  d.slowed_by = "+54% a step since the baseline: its node <vm> is shared";
  EXPECT_EQ(OneLineVerdict(d),
            "healthy: no problem found on 4 workers in the job, but slower: +54% a step since the baseline: its node "
            "<vm> is shared");
  EXPECT_EQ(FormatTextReport(d).substr(0, FormatTextReport(d).find('\n')),
            "eroica: healthy — no problem found on 4 workers in the job, but slower: +54% a step since the baseline: "
            "its node <vm> is shared");
  std::string html = RenderHtmlReport(d, TestWorkers(), SessionInfo{}, {"/runs/x", ""});
  EXPECT_NE(html.find("on 4 workers in the job, but slower: +54% a step since the baseline: its node &lt;vm&gt; is"),
            std::string::npos);
  d.slowed_by.clear();
  EXPECT_EQ(OneLineVerdict(d), "healthy: no problem found on 4 workers");
}

TEST(HtmlReportTest, TraceTextCannotInjectMarkup) {
  const std::string evil = "<script>alert(1)</script><img src=x onerror=alert(2)>";
  std::vector<WorkerPattern> workers = TestWorkers();
  for (WorkerPattern& w : workers) w.functions[0].name = evil;
  Diagnosis d = TestDiagnosis();
  d.findings[0].function = evil;
  d.findings[0].evidence = evil;
  d.findings[0].location = "\"><svg onload=alert(3)>";
  d.warnings.push_back(evil);
  SessionInfo session;
  session.has_session = true;
  session.session_id = evil;
  std::string html = RenderHtmlReport(d, workers, session, {evil, ""});
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

TEST(HtmlReportTest, HealthyRunSaysSo) {
  Diagnosis d;
  d.workers = 8;
  std::string html = RenderHtmlReport(d, TestWorkers(8, -1), SessionInfo{}, {"/runs/ok", ""});
  EXPECT_NE(html.find("Healthy: no problem found on 8 workers."), std::string::npos);
  EXPECT_NE(html.find("No warnings"), std::string::npos);
}

TEST(HtmlReportTest, BaselineSectionListsWhatChangedEscaped) {
  std::vector<WorkerPattern> base = TestWorkers(4, -1), now = TestWorkers(4, -1);
  for (WorkerPattern& w : now) {
    FunctionPattern f;
    f.name = "<decode>";
    f.category = Category::kDataloader;
    f.beta = 0.5;
    f.calls_per_iter = 1;
    f.mean_duration_us = w.iteration_s * 1e6;
    w.iteration_s *= 2;
    w.functions.push_back(f);
  }
  PatternDiff diff = DiffPatterns(base, now);
  ASSERT_FALSE(diff.functions.empty());
  std::string html = RenderHtmlReport(Diagnosis{}, now, SessionInfo{}, {"/runs/b", "", &diff});
  EXPECT_NE(html.find("<h2>Against the baseline</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;decode&gt;</td><td>dataloader</td><td>appeared</td><td>ranks 0-3</td>"),
            std::string::npos);
  EXPECT_EQ(RenderHtmlReport(Diagnosis{}, now, SessionInfo{}, {"/runs/b", ""}).find("Against the baseline"),
            std::string::npos);
}

TEST(HtmlReportTest, OnlineSessionShowsIterationTimesAroundTheTrigger) {
  SessionInfo s;
  s.has_session = true;
  s.session_id = "job-1";
  s.reason = "degradation";
  s.trigger_rank = 3;
  s.detected_iteration = 120;
  s.target_iteration = 124;
  s.capture_iterations = 5;
  s.best_mean_s = 0.2;
  s.threshold = 1.05;
  for (int i = 0; i < 60; ++i) s.iteration_times_s.push_back(i < 40 ? 0.2 : 0.25);
  s.iteration_times_first_id = 61;
  std::string html = RenderHtmlReport(TestDiagnosis(), TestWorkers(), s, {"/runs/s", ""});
  EXPECT_NE(html.find("id=\"series\""), std::string::npos);
  EXPECT_NE(html.find(">trigger</text>"), std::string::npos);
  EXPECT_NE(html.find(">profiled</text>"), std::string::npos);
  EXPECT_NE(html.find("detected by rank 3 at iteration 120"), std::string::npos);
}

TEST(HtmlReportTest, TwentyThousandWorkersStayASmallPage) {
  std::vector<WorkerPattern> workers = TestWorkers(20000, 3);
  std::string html = RenderHtmlReport(TestDiagnosis(20000), workers, SessionInfo{}, {"/runs/big", ""});
  EXPECT_LT(html.size(), 400'000u);
  EXPECT_NE(html.find("20000 workers: suspects keep their own rows"), std::string::npos);
  EXPECT_NE(html.find("class=\"bar\""), std::string::npos);  // the distribution became a histogram
  EXPECT_NE(html.find("▶ rank 3<"), std::string::npos);
}

TEST(HeatmapTest, SmallJobOneRowPerWorkerFindingColumnFirst) {
  Heatmap map = BuildHeatmap(TestWorkers(), TestDiagnosis());
  ASSERT_EQ(map.rows.size(), 8u);
  EXPECT_FALSE(map.banded);
  EXPECT_EQ(map.columns[0].name, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  EXPECT_TRUE(map.columns[0].from_finding);
  EXPECT_TRUE(map.rows[3].suspect);
  EXPECT_NEAR(map.rows[3].cells[0].deviation, 0.30 - 0.052, 1e-6);
  EXPECT_NEAR(map.columns[0].scale, 0.248, 1e-6);
}

TEST(HeatmapTest, ThousandsOfWorkersAreBandedAndTheOutlierSurvives) {
  std::vector<WorkerPattern> workers = TestWorkers(5000, 4321);
  workers[77].functions[2].beta = 0.9;  // an unreported oddity deep inside a band
  Heatmap map = BuildHeatmap(workers, TestDiagnosis(5000));
  EXPECT_TRUE(map.banded);
  EXPECT_LE(map.rows.size(), 16u + 48u + 1u);
  // The finding names rank 3 (a normal worker here) ...
  EXPECT_EQ(map.rows[0].label, "rank 3");
  // ... and the band holding rank 77 shows it as its most extreme worker.
  bool found = false;
  for (const HeatmapRow& row : map.rows) {
    for (const HeatmapCell& cell : row.cells) found = found || (cell.rank == 77 && cell.deviation > 0.5);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace eroica
