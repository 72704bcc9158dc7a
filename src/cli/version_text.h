// What `eroica --version` prints: the version and every file format this eroica reads and
// writes, with the format version of each, so that a fleet's mixed versions can be checked.
#pragma once

#include <string>

namespace eroica {

std::string VersionText();

}  // namespace eroica
