// An allocator for the few arrays that grow with a trace (its events, the summarizer's
// per-event arrays). Blocks of 2 MB and more are mapped with transparent huge pages
// requested: a fresh process otherwise faults their memory in 4 KB at a time, which on a VM
// cost as much as a fifth of reading a trace. Smaller blocks come from the heap, which the eroica
// command puts on huge pages too (`heap_reuse.h`).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <vector>

namespace eroica {

// A transparent huge page: mappings are rounded to it so their pages can stay whole.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    void* p = mmap(nullptr, Rounded(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, Rounded(bytes), MADV_HUGEPAGE);  // a hint: without it, 4 KB pages as before
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      ::operator delete(p);
    } else {
      munmap(p, Rounded(bytes));
    }
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }

 private:
  static constexpr size_t kHuge = kHugePageBytes;
  static size_t Rounded(size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }
};

template <typename T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace eroica
