#include "base/heap_reuse.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace eroica {
namespace {

constexpr size_t kHugeHeapBytes = size_t{48} << 20;
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr uintptr_t kChunkHeader = 2 * sizeof(size_t);  // glibc's, before each block

uintptr_t HugePageAbove(uintptr_t address) { return (address + kHugePage - 1) & ~(kHugePage - 1); }

// Never freed: the heap from its top chunk's start up to the first huge page boundary.
void* heap_cover = nullptr;

}  // namespace

bool KeepFreedMemoryForReuse() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  if (heap_cover != nullptr) return false;  // once a process
  // glibc takes a block from the start of its top chunk and writes a header at each end of it:
  // grown by one block and freed, the heap has every whole huge page in between untouched when
  // it is advised (a page touched before the advice keeps its 2 MB range in 4 KB pages).
  void* volatile grow = malloc(kHugeHeapBytes);  // volatile: a malloc freed unused is elided
  if (grow == nullptr) return false;
  uintptr_t top = reinterpret_cast<uintptr_t>(grow) - kChunkHeader;  // where the top chunk starts
  free(grow);
  // A block that is never freed covers the top chunk up to a huge page boundary, so the blocks
  // after it start on a huge page; its pages but the first are never touched. It is 1 MB or
  // more, so no free block left from the process's start-up can serve it instead of the top.
  uintptr_t begin = HugePageAbove(top + kChunkHeader + (uintptr_t{1} << 20));
  heap_cover = malloc(begin - kChunkHeader - top - sizeof(size_t));  // a block of exactly that
  if (heap_cover == nullptr || reinterpret_cast<uintptr_t>(heap_cover) != top + kChunkHeader) return false;
  uintptr_t end = (top + kHugeHeapBytes) & ~(kHugePage - 1);
  char* first_huge_page = static_cast<char*>(heap_cover) + (begin - top - kChunkHeader);
  return end > begin && madvise(first_huge_page, end - begin, MADV_HUGEPAGE) == 0;
}

}  // namespace eroica
