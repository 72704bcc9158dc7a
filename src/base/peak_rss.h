// The process's peak resident memory, for tests that check a reader allocates nothing for
// data a file only claims to have.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace eroica {

inline int64_t PeakRssBytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace eroica
