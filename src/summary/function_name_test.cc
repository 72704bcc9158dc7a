#include "summary/function_name.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(FunctionNameTest, KernelsLoseTemplatesAndParameters) {
  EXPECT_EQ(
      FunctionName(EventRole::kDeviceCompute,
                   "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)", "",
                   -1),
      "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(FunctionName(EventRole::kDeviceCompute,
                         "void (anonymous namespace)::elementwise_kernel_with_index<int>(int)", "", -1),
            "(anonymous namespace)::elementwise_kernel_with_index");
  EXPECT_EQ(FunctionName(EventRole::kDeviceCompute, "rotary_kernel", "", -1), "rotary_kernel");
}

TEST(FunctionNameTest, CollectivesByOperationAndSize) {
  EXPECT_EQ(FunctionName(EventRole::kDeviceComm, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "", -1),
            "allreduce");
  EXPECT_EQ(FunctionName(EventRole::kDeviceComm, "ncclDevKernel_AllGather_RING_LL(x)", "", 3000), "allgather 4KiB");
  EXPECT_EQ(FunctionName(EventRole::kDeviceComm, "ncclDevKernel_Generic(x)", "_allgather_base", 5 << 20),
            "allgather 16MiB");
  EXPECT_EQ(FunctionName(EventRole::kCpuComm, "gloo:all_reduce", "", -1), "allreduce");
  EXPECT_EQ(FunctionName(EventRole::kCpuComm, "c10d::allreduce_", "", -1), "allreduce");
  EXPECT_EQ(FunctionName(EventRole::kCpuComm, "nccl:_reduce_scatter_base", "", -1), "reducescatter");
  EXPECT_EQ(FunctionName(EventRole::kCpuComm, "c10d::alltoall_base_", "", -1), "alltoall");
}

TEST(FunctionNameTest, PythonFramesAsFileLineName) {
  EXPECT_EQ(FunctionName(EventRole::kPython, "torch/nn/modules/module.py(1775): _call_impl", "", -1),
            "torch/nn/modules/module.py:1775(_call_impl)");
  EXPECT_EQ(FunctionName(EventRole::kPython, "nn.Module: Linear_0", "", -1), "nn.Module: Linear_0");
}

TEST(SizeBucketTest, PowersOfFour) {
  EXPECT_EQ(SizeBucket(1), "1B");
  EXPECT_EQ(SizeBucket(1024), "1KiB");
  EXPECT_EQ(SizeBucket(1025), "4KiB");
  EXPECT_EQ(SizeBucket(1 << 20), "1MiB");
}

}  // namespace
}  // namespace eroica
