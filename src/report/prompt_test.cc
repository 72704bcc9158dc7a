#include "report/prompt.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/temp_dir.h"
#include "localize/hang.h"
#include "report/report_test_util.h"

namespace eroica {
namespace {

constexpr std::string_view kTrainPy = R"py(import threading

LOCK = threading.Lock()


def log_metrics(step):
    with LOCK:
        write(step)


def write(step):
    with LOCK:  # taken again: deadlock
        print(step)
)py";

std::string StackJson(int rank, const std::string& file, int line, const std::string& code, const char* waiting) {
  nlohmann::json frames = nlohmann::json::array();
  frames.push_back(
      {{"file", "/usr/lib/python3.11/runpy.py"}, {"line", 198}, {"function", "_run_module_as_main"}, {"code", ""}});
  frames.push_back({{"file", file}, {"line", 7}, {"function", "log_metrics"}, {"code", "with LOCK:"}});
  frames.push_back({{"file", file}, {"line", line}, {"function", "write"}, {"code", code}});
  if (waiting != nullptr) {
    frames.push_back({{"file", "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"},
                      {"line", 2050},
                      {"function", "all_reduce"},
                      {"code", "work.wait()"}});
  }
  nlohmann::json doc = {
      {"rank", rank}, {"world_size", 3}, {"iteration", 60}, {"threads", {{{"is_main", true}, {"frames", frames}}}}};
  doc["waiting_in"] = waiting != nullptr ? nlohmann::json(waiting) : nlohmann::json();
  return doc.dump();
}

FunctionPattern PythonFunction(const std::string& name, double beta) {
  FunctionPattern f;
  f.name = name;
  f.category = Category::kHost;
  f.host_kind = HostKind::kPython;
  f.beta = beta;
  return f;
}

TEST(PromptTest, HangNamesTheLineShowsTheSourceAndAsksForAPatch) {
  TempDir dir;
  std::string train = dir.Write("train.py", kTrainPy);
  setenv("EROICA_TEST_SECRET_TOKEN", "do-not-copy-me", 1);
  LocalizeInput input;
  for (int rank = 0; rank < 3; ++rank) {
    std::string path = dir.Write("stacks-rank-" + std::to_string(rank) + ".json",
                                 rank == 1 ? StackJson(1, train, 12, "with LOCK:  # taken again: deadlock", nullptr)
                                           : StackJson(rank, train, 99, "loss.backward()", "all_reduce"));
    StatusOr<StackDump> dump = ReadStackDump(path);
    ASSERT_TRUE(dump.ok()) << dump.status().message();
    input.stacks.push_back(*dump);
  }
  Diagnosis d;
  d.workers = 3;
  d.world_size = 3;
  d.findings = FindHang(input.stacks, 3);
  ASSERT_EQ(d.findings.size(), 1u);
  ASSERT_EQ(d.findings[0].workers, std::vector<int>{1});
  SessionInfo session;
  session.has_session = true;
  session.reason = "hang";
  session.ranks.push_back({0, "node-a", "2.3.0", "3.11.2", {}, {}, "", ""});
  session.best_mean_s = 0.1;
  session.current_mean_s = 0.112;
  session.best_cpu_s = 0.033;
  session.current_cpu_s = 0.045;
  std::string prompt = RenderPrompt(d, input, session, {{dir.path()}, 5, 5});

  EXPECT_NE(prompt.find("# Fix a hang"), std::string::npos);
  EXPECT_NE(prompt.find("`" + train + ":12` in `write` — where rank 1 is stuck"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("> 12 |     with LOCK:  # taken again: deadlock"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("   7 |     with LOCK:"), std::string::npos);  // ±5 lines of context
  EXPECT_NE(prompt.find("the collective the other ranks wait in (`all_reduce`)"), std::string::npos);
  EXPECT_NE(prompt.find("propose a patch that removes the blocking"), std::string::npos);
  EXPECT_NE(prompt.find("PyTorch: 2.3.0"), std::string::npos);
  EXPECT_NE(prompt.find("World size: 3"), std::string::npos);
  EXPECT_NE(prompt.find("its training thread's own CPU time per iteration 45.0 ms against a best of 33.0 ms"),
            std::string::npos)
      << prompt;
  // Library frames are named by package, never quoted, never with this machine's paths.
  EXPECT_NE(prompt.find("`python3.11/runpy.py:198`"), std::string::npos);
  EXPECT_EQ(prompt.find("/usr/lib"), std::string::npos);
  EXPECT_EQ(prompt.find("site-packages"), std::string::npos);
  EXPECT_EQ(prompt.find("do-not-copy-me"), std::string::npos);
  unsetenv("EROICA_TEST_SECRET_TOKEN");
}

TEST(PromptTest, WithStackPythonFramesBecomeTheCodeLocation) {
  TempDir dir;
  std::string loader =
      dir.Write("data.py", "import time\n\n\ndef collate(batch):\n    time.sleep(0.05)\n    return batch\n");
  std::string frame = loader + ":5(collate)";
  std::vector<WorkerPattern> workers = TestWorkers(4, 3);
  workers[3].functions.push_back(PythonFunction(frame, 0.20));
  for (int r = 0; r < 3; ++r) workers[r].functions.push_back(PythonFunction(frame, 0.01));
  LocalizeInput input;
  input.workers = workers;
  Diagnosis d = TestDiagnosis(4);
  std::string prompt = RenderPrompt(d, input, SessionInfo{}, {{}, 5, 5});
  EXPECT_NE(
      prompt.find("`" + loader + ":5` in `collate` — Python frame that owns 38.0 ms more of rank 3's critical path"),
      std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("> 5 |     time.sleep(0.05)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Rank 3's data loader takes 50.0 ms more per iteration"), std::string::npos);
  EXPECT_NE(prompt.find("starting from `" + loader + ":5`"), std::string::npos);
}

TEST(PromptTest, NoStacksSaysHowToGetThem) {
  LocalizeInput input;
  input.workers = TestWorkers();
  std::string prompt = RenderPrompt(TestDiagnosis(), input, SessionInfo{}, {});
  EXPECT_NE(prompt.find("the traces carry no Python stacks"), std::string::npos);
  EXPECT_NE(prompt.find("β): 0.3000 on rank 3 vs 0.0500 median of its peers"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("## What I need from you"), std::string::npos);
}

// Healthy in the job, slower for a node it came to share: the prompt says so and asks about the
// node, not for a longer profile.
TEST(PromptTest, AHealthyJobSlowedFromOutsideAsksAboutTheNode) {
  LocalizeInput input;
  input.workers = TestWorkers();
  Diagnosis d;
  d.workers = 4;
  d.slowed_by = "+54% a step since the baseline: its node vm is shared";
  std::string prompt = RenderPrompt(d, input, SessionInfo{}, {});
  EXPECT_NE(prompt.find("no problem in the job on 4 workers, but it is slower: +54% a step since the baseline"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("find the other processes on that node"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("outside the profiled window"), std::string::npos) << prompt;
}

TEST(PromptTest, EveryCategoryHasAPreciseRequest) {
  Diagnosis d = TestDiagnosis();
  for (int c = 0; c < kFindingCategoryCount; ++c) {
    for (FindingScope scope : {FindingScope::kLocal, FindingScope::kGlobal}) {
      Finding f = TestFinding();
      f.category = static_cast<FindingCategory>(c);
      f.scope = scope;
      std::string request = FindingRequest(f, d, "/app/x.py:3", "");
      std::string_view name = Name(f.category);
      EXPECT_GT(request.size(), 120u) << name << " " << Name(scope);
      EXPECT_TRUE(request.find("atch") != std::string::npos || request.find("commands") != std::string::npos)
          << name << " " << Name(scope) << ": " << request;
    }
  }
}

}  // namespace
}  // namespace eroica
