#include "cli/run_package.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/temp_dir.h"

namespace eroica {
namespace {

namespace fs = std::filesystem;

// Makes DIR/eroica/__main__.py (a package folder) and returns DIR.
std::string MakePackage(const TempDir& root, const std::string& dir) {
  fs::create_directories(root.path() + "/" + dir + "/eroica");
  root.Write(dir + "/eroica/__main__.py", "");
  return root.path() + "/" + dir;
}

std::string MakeExe(const TempDir& root, const std::string& path) {
  fs::create_directories(fs::path(root.path() + "/" + path).parent_path());
  return root.Write(path, "binary");
}

TEST(RunPackageTest, InstalledBinaryFindsThePackageBesideIt) {
  TempDir root;
  std::string installed = MakePackage(root, "usr/lib/python3/dist-packages");
  std::string source = MakePackage(root, "src/python");
  PackageSearch search{"", MakeExe(root, "usr/bin/eroica"), MakeExe(root, "src/build/eroica"), source};
  StatusOr<std::string> found = FindPythonPackage(search);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, installed);
}

TEST(RunPackageTest, OnlyTheBuildTreesBinaryUsesTheSourceTree) {
  TempDir root;
  std::string source = MakePackage(root, "src/python");
  std::string build_exe = MakeExe(root, "src/build/eroica");
  StatusOr<std::string> found = FindPythonPackage({"", build_exe, build_exe, source});
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, source);
  // A copy installed elsewhere, without its package: an error, not the checkout's package.
  StatusOr<std::string> copy = FindPythonPackage({"", MakeExe(root, "opt/bin/eroica"), build_exe, source});
  ASSERT_FALSE(copy.ok());
  EXPECT_NE(copy.status().message().find("set EROICA_PYTHON_DIR"), std::string::npos);
  EXPECT_EQ(copy.status().message().find(source), std::string::npos) << copy.status().message();
}

TEST(RunPackageTest, TheEnvironmentWinsAndIsNeverSecondGuessed) {
  TempDir root;
  MakePackage(root, "usr/lib/python3/dist-packages");
  std::string chosen = MakePackage(root, "elsewhere");
  std::string exe = MakeExe(root, "usr/bin/eroica");
  StatusOr<std::string> found = FindPythonPackage({chosen, exe, "", ""});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, chosen);
  StatusOr<std::string> wrong = FindPythonPackage({root.path() + "/empty", exe, "", ""});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("EROICA_PYTHON_DIR=" + root.path() + "/empty"), std::string::npos);
}

}  // namespace
}  // namespace eroica
