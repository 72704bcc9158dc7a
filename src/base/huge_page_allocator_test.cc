#include "base/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace eroica {
namespace {

// Growing across the 2 MB line moves the elements from heap memory to a mapping and back
// (shrink_to_fit); every element survives each move, and each block goes back the way it came
// (the sanitizer build would catch a heap block unmapped or a mapping freed).
TEST(HugePageAllocatorTest, ElementsSurviveMovesBetweenHeapAndMappedBlocks) {
  BigVector<int64_t> values;
  const int64_t count = 1 << 20;  // 8 MB of int64
  for (int64_t i = 0; i < count; ++i) values.push_back(i * 3);
  for (int64_t i = 0; i < count; i += 4099) ASSERT_EQ(values[i], i * 3);
  EXPECT_GE(values.capacity() * sizeof(int64_t), size_t{2} << 20);
  values.resize(100);
  values.shrink_to_fit();
  EXPECT_LT(values.capacity() * sizeof(int64_t), size_t{2} << 20);
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(values[i], i * 3);
  BigVector<int64_t> copy = values;
  EXPECT_EQ(copy, values);
}

}  // namespace
}  // namespace eroica
