// An array of plain values that grows without copying: its memory is one private anonymous
// mapping that mremap enlarges (the kernel moves page tables, not bytes). A std::vector that
// doubles holds the old and the new buffer at once while it copies, so a trace's events peaked
// at 1.5x their size just as the last doubling copied them; here the peak is what was written.
// Pages are touched only as values are appended, so a large capacity costs address space only.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "base/huge_page_allocator.h"

namespace eroica {

template <typename T>
class GrowableArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "the values are moved by remapping their pages");

 public:
  GrowableArray() = default;
  GrowableArray(const GrowableArray&) = delete;
  GrowableArray& operator=(const GrowableArray&) = delete;
  GrowableArray(GrowableArray&& other) noexcept { Take(&other); }
  GrowableArray& operator=(GrowableArray&& other) noexcept {
    if (this != &other) {
      Release();
      Take(&other);
    }
    return *this;
  }
  ~GrowableArray() { Release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& value) {
    if (size_ == capacity_) Grow(size_ + 1);
    data_[size_++] = value;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  // Room for `n` values: address space only until they are written.
  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  // `n` values; the new ones are zero.
  void resize(size_t n) {
    if (n > capacity_) Grow(n);
    if (n > size_) std::memset(static_cast<void*>(data_ + size_), 0, (n - size_) * sizeof(T));
    size_ = n;
  }
  // The first `n` values will not be read again: their whole pages go back to the system now
  // (a slice index consumed front to back no longer adds to the peak). Reading them gives zeros.
  void ReleaseFront(size_t n) {
    if (data_ == nullptr) return;
    auto begin = reinterpret_cast<uintptr_t>(data_);
    // Whole pages of the system's size only: madvise rounds the length up, so rounding down to a
    // 4 KB page where pages are 64 KB would drop values not yet read.
    static const auto kSystemPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t end = (begin + std::min(n, size_) * sizeof(T)) / kSystemPage * kSystemPage;
    if (end > begin) madvise(data_, end - begin, MADV_DONTNEED);  // data_ is page-aligned (mmap)
  }
  // Returns the memory past size() to the system (a trace read to its end keeps no slack).
  void shrink_to_fit() {
    size_t keep = Rounded(size_ * sizeof(T));
    if (data_ == nullptr || keep >= mapped_) return;
    if (keep == 0) {
      Release();
      return;
    }
    munmap(reinterpret_cast<char*>(data_) + keep, mapped_ - keep);
    mapped_ = keep;
    capacity_ = mapped_ / sizeof(T);
  }

 private:
  static constexpr size_t kPage = kHugePageBytes;  // growth keeps huge pages whole
  static size_t Rounded(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

  void Grow(size_t at_least) {
    size_t want = capacity_ == 0 ? at_least : capacity_;
    while (want < at_least) want *= 2;
    if (want > SIZE_MAX / 2 / sizeof(T)) throw std::bad_alloc();
    size_t bytes = Rounded(want * sizeof(T));
    void* p = data_ == nullptr ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : mremap(data_, mapped_, bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KB pages
    data_ = static_cast<T*>(p);
    mapped_ = bytes;
    capacity_ = bytes / sizeof(T);
  }
  void Release() {
    if (data_ != nullptr) munmap(data_, mapped_);
    data_ = nullptr;
    size_ = capacity_ = mapped_ = 0;
  }
  void Take(GrowableArray* other) {
    data_ = std::exchange(other->data_, nullptr);
    size_ = std::exchange(other->size_, 0);
    capacity_ = std::exchange(other->capacity_, 0);
    mapped_ = std::exchange(other->mapped_, 0);
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_ = 0;
};

}  // namespace eroica
