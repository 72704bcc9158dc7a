// Where `eroica run` finds the Python package it puts on PYTHONPATH: the folder that holds
// eroica/__main__.py. In this order:
//   1. $EROICA_PYTHON_DIR, when set;
//   2. installed beside the binary: <prefix>/lib/python3/dist-packages for <prefix>/bin/eroica
//      (where the .deb puts both);
//   3. the source tree's python/, only for the binary the build tree made, so that an installed
//      copy never reaches back into a checkout that happens to be on the machine.
#pragma once

#include <string>

#include "base/status.h"

namespace eroica {

struct PackageSearch {
  std::string env_dir;        // $EROICA_PYTHON_DIR ("" when unset)
  std::string self_exe;       // this binary, resolved (/proc/self/exe)
  std::string build_exe;      // the binary the build tree makes
  std::string source_python;  // the source tree's python/
};

// The first candidate that holds the package; else an error listing where it looked.
StatusOr<std::string> FindPythonPackage(const PackageSearch& search);

// The search for this process: the environment, /proc/self/exe and the build's own paths.
PackageSearch ThisProcessPackageSearch();

}  // namespace eroica
