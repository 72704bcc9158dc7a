#include "cli/run_package.h"

#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace eroica {
namespace {

namespace fs = std::filesystem;

bool HoldsPackage(const fs::path& dir) {
  std::error_code error;
  return fs::is_regular_file(dir / "eroica" / "__main__.py", error);
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code error;
  return !a.empty() && !b.empty() && fs::equivalent(a, b, error);
}

}  // namespace

StatusOr<std::string> FindPythonPackage(const PackageSearch& search) {
  // An explicit folder is the only candidate: silently using another would hide the mistake.
  if (!search.env_dir.empty()) {
    if (HoldsPackage(search.env_dir)) return search.env_dir;
    return ErrorStatus("the Python package is not in EROICA_PYTHON_DIR={} (no eroica/__main__.py)", search.env_dir);
  }
  std::vector<std::string> looked;
  if (!search.self_exe.empty()) {
    fs::path installed = fs::path(search.self_exe).parent_path().parent_path() / "lib" / "python3" / "dist-packages";
    if (HoldsPackage(installed)) return installed.string();
    looked.push_back(installed.string());
  }
  if (SameFile(search.self_exe, search.build_exe)) {
    if (HoldsPackage(search.source_python)) return search.source_python;
    looked.push_back(search.source_python);
  }
  std::string where;
  for (const std::string& dir : looked) where += (where.empty() ? "" : ", ") + dir;
  return ErrorStatus("the Python package is not installed beside this eroica (looked in {}); set EROICA_PYTHON_DIR",
                     where.empty() ? "nothing" : where);
}

PackageSearch ThisProcessPackageSearch() {
  PackageSearch search;
  if (const char* dir = std::getenv("EROICA_PYTHON_DIR")) search.env_dir = dir;
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) search.self_exe = self.string();
  search.build_exe = EROICA_BUILD_EXE;
  search.source_python = std::string(EROICA_SOURCE_DIR) + "/python";
  return search;
}

}  // namespace eroica
