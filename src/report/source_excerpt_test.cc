#include "report/source_excerpt.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/temp_dir.h"
#include "report/code_location.h"

namespace eroica {
namespace {

std::string Lines(int n) {
  std::string text;
  for (int i = 1; i <= n; ++i) text += "line_" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  return text;
}

TEST(SourceExcerptTest, ShowsTheLinesAroundTheLocation) {
  TempDir dir;
  std::string file = dir.Write("train.py", Lines(20));
  StatusOr<SourceExcerpt> e = ReadSourceExcerpt(file, 10, 5, {});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->first_line, 5);
  ASSERT_EQ(e->lines.size(), 11u);
  EXPECT_EQ(e->lines[5], "line_10 = 10");
  std::string md = FormatExcerptMarkdown(*e);
  EXPECT_NE(md.find("> 10 | line_10 = 10\n"), std::string::npos);
  EXPECT_NE(md.find("   5 | line_5 = 5\n"), std::string::npos);
  EXPECT_TRUE(md.starts_with("```python\n"));
  // Near the start and the end of the file.
  EXPECT_EQ(ReadSourceExcerpt(file, 2, 5, {})->first_line, 1);
  EXPECT_EQ(ReadSourceExcerpt(file, 19, 5, {})->lines.size(), 7u);
  EXPECT_FALSE(ReadSourceExcerpt(file, 21, 5, {}).ok());
}

TEST(SourceExcerptTest, RelativePathsResolveUnderTheRoots) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/pkg");
  dir.Write("pkg/model.py", Lines(3));
  EXPECT_FALSE(ReadSourceExcerpt("pkg/model.py", 2, 1, {"/nonexistent"}).ok());
  EXPECT_TRUE(ReadSourceExcerpt("pkg/model.py", 2, 1, {"/nonexistent", dir.path()}).ok());
}

TEST(SourceExcerptTest, NeverReadsOutsideTheJobsCode) {
  EXPECT_FALSE(IsJobSourcePath("/usr/lib/python3.11/threading.py"));
  EXPECT_FALSE(IsJobSourcePath("/opt/venv/lib/python3.10/site-packages/torch/nn/modules/module.py"));
  EXPECT_FALSE(IsJobSourcePath("/app/.venv/dist-packages/x.py"));
  EXPECT_FALSE(IsJobSourcePath("<frozen importlib._bootstrap>"));
  EXPECT_FALSE(IsJobSourcePath("/etc/passwd"));
  EXPECT_FALSE(IsJobSourcePath("/app/config.yaml"));  // only Python sources
  EXPECT_TRUE(IsJobSourcePath("/app/train.py"));
  EXPECT_EQ(ShortLibraryPath("/opt/venv/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py"),
            "torch/distributed/distributed_c10d.py");
  EXPECT_EQ(ShortLibraryPath("/usr/lib/python3.11/threading.py"), "python3.11/threading.py");
  // A symlink named like job code that points into the system is refused.
  TempDir dir;
  std::filesystem::create_symlink("/usr/lib/os-release", dir.path() + "/innocent.py");
  StatusOr<SourceExcerpt> e = ReadSourceExcerpt(dir.path() + "/innocent.py", 1, 1, {});
  EXPECT_FALSE(e.ok());
}

TEST(SourceExcerptTest, CredentialsAreRedactedAndFencesHoldBackticks) {
  EXPECT_EQ(RedactCredentials("API_KEY = \"sk-123\"  # prod"), "API_KEY = \"<redacted>\"  # prod");
  EXPECT_EQ(RedactCredentials("conn(password='hunter2', user='bob')"),
            "conn(password='<redacted>', user='<redacted>')");
  EXPECT_EQ(RedactCredentials("x = 'plain'"), "x = 'plain'");
  SourceExcerpt e{"/app/a.py", 1, 1, {"s = '```'"}};
  EXPECT_TRUE(FormatExcerptMarkdown(e).starts_with("````python\n"));
}

TEST(CodeLocationTest, ParsesTheForms) {
  std::optional<CodeLocation> a = ParseCodeLocation("/app/train.py:88");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->file, "/app/train.py");
  EXPECT_EQ(a->line, 88);
  std::optional<CodeLocation> b = ParseCodeLocation("models/net.py:12(forward)");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->function, "forward");
  std::optional<CodeLocation> c = ParseCodeLocation("models/net.py(12): forward");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->file, "models/net.py");
  EXPECT_EQ(c->line, 12);
  EXPECT_FALSE(ParseCodeLocation("aten::addmm"));
  EXPECT_FALSE(ParseCodeLocation("x.py:abc"));
  EXPECT_FALSE(ParseCodeLocation(""));
}

}  // namespace
}  // namespace eroica
