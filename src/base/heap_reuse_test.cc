#include "base/heap_reuse.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define EROICA_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EROICA_OWN_ALLOCATOR 1
#endif
#endif

namespace eroica {
namespace {

// The VmFlags line of the mapping that holds `address`, from /proc/self/smaps.
std::string VmFlagsAt(const void* address) {
  auto at = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t low = 0, high = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> low >> dash >> high && dash == '-') inside = low <= at && at < high;
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

int64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

std::string TransparentHugePages() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  return text;
}

// glibc's heap after the call: small blocks come from memory advised to use huge pages, so
// touching 8 MB of them faults a few times instead of 2,048 times (4 KB pages).
TEST(HeapReuseTest, SmallBlocksAfterwardLieOnHugePages) {
#ifdef EROICA_OWN_ALLOCATOR
  EXPECT_FALSE(KeepFreedMemoryForReuse());  // a sanitizer's allocator is not glibc's heap
  GTEST_SKIP() << "the sanitizer's allocator replaces glibc's heap";
#endif
  ASSERT_TRUE(KeepFreedMemoryForReuse());
  EXPECT_FALSE(KeepFreedMemoryForReuse()) << "once a process";
  void* first = std::malloc(2000);
  EXPECT_NE(VmFlagsAt(first).find(" hg"), std::string::npos) << VmFlagsAt(first);
  if (TransparentHugePages().find("[never]") != std::string::npos) GTEST_SKIP() << "huge pages are off here";
  std::vector<char*> blocks;
  int64_t before = MinorFaults();
  for (int i = 0; i < 4096; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(2048)));
    std::memset(blocks.back(), 1, 2048);
  }
  EXPECT_LT(MinorFaults() - before, 64) << "8 MB of small blocks touched";
  for (char* block : blocks) std::free(block);
  std::free(first);
}

}  // namespace
}  // namespace eroica
