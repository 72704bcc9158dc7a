#include "summary/classify.h"

#include <gtest/gtest.h>

namespace eroica {
namespace {

TEST(ClassifyEventTest, KernelsByNcclGeneration) {
  EXPECT_EQ(ClassifyEvent("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), EventRole::kDeviceComm);
  EXPECT_EQ(ClassifyEvent("kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            EventRole::kDeviceComm);
  EXPECT_EQ(ClassifyEvent("kernel", "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), EventRole::kDeviceComm);
  EXPECT_EQ(ClassifyEvent("kernel", "void dpsk::ep::internode::dispatch<false, 8>(int4*)"), EventRole::kDeviceComm);
  EXPECT_EQ(ClassifyEvent("kernel", "void at::native::vectorized_elementwise_kernel<4>(int)"),
            EventRole::kDeviceCompute);
  EXPECT_EQ(ClassifyEvent("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"), EventRole::kDeviceMemory);
  EXPECT_EQ(ClassifyEvent("gpu_memset", "Memset (Device)"), EventRole::kDeviceMemory);
}

TEST(ClassifyEventTest, CpuSideRanges) {
  EXPECT_EQ(ClassifyEvent("user_annotation", "ProfilerStep#12"), EventRole::kStepMarker);
  EXPECT_EQ(ClassifyEvent("", "ProfilerStep#3"), EventRole::kStepMarker);
  EXPECT_EQ(ClassifyEvent("gpu_user_annotation", "ProfilerStep#3"), EventRole::kIgnore);
  EXPECT_EQ(ClassifyEvent("", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), EventRole::kDataloader);
  EXPECT_EQ(ClassifyEvent("user_annotation", "Optimizer.step#SGD.step"), EventRole::kOptimizer);
  EXPECT_EQ(ClassifyEvent("", "eroica::gc"), EventRole::kGc);
  EXPECT_EQ(ClassifyEvent("", "gloo:all_reduce"), EventRole::kCpuComm);
  EXPECT_EQ(ClassifyEvent("cpu_op", "c10d::allreduce_"), EventRole::kCpuComm);
  EXPECT_EQ(ClassifyEvent("cpu_op", "record_param_comms"), EventRole::kCpuComm);
  EXPECT_EQ(ClassifyEvent("user_annotation", "nccl:all_reduce"), EventRole::kCpuComm);
  EXPECT_EQ(ClassifyEvent("cpu_op", "aten::mm"), EventRole::kCpuOp);
  EXPECT_EQ(ClassifyEvent("", "aten::mm"), EventRole::kCpuOp);
  EXPECT_EQ(ClassifyEvent("", "AddmmBackward0"), EventRole::kCpuOp);
  EXPECT_EQ(ClassifyEvent("python_function", "train.py(180): main"), EventRole::kPython);
  EXPECT_EQ(ClassifyEvent("cuda_runtime", "cudaLaunchKernel"), EventRole::kLaunch);
  EXPECT_EQ(ClassifyEvent("cuda_runtime", "cudaStreamSynchronize"), EventRole::kSync);
  EXPECT_EQ(ClassifyEvent("cuda_driver", "cuLaunchKernelEx"), EventRole::kLaunch);
  EXPECT_EQ(ClassifyEvent("Trace", "PyTorch Profiler (0)"), EventRole::kIgnore);
  EXPECT_EQ(ClassifyEvent("user_annotation", "## forward ##"), EventRole::kAnnotation);
}

// torch.distributed.nn.functional's autograd functions wait for their collective: plain ranges, so
// that the backend's range paints that time as the collective's, not their node's compute.
TEST(ClassifyEventTest, DistributedAutogradFunctionsAreRangesNotCompute) {
  for (std::string_view cat : {"", "cpu_op"}) {
    EXPECT_EQ(ClassifyEvent(cat, "_AlltoAllSingle"), EventRole::kAnnotation);
    EXPECT_EQ(ClassifyEvent(cat, "_AlltoAllSingleBackward"), EventRole::kAnnotation);
    EXPECT_EQ(ClassifyEvent(cat, "autograd::engine::evaluate_function: _AlltoAllSingleBackward"),
              EventRole::kAnnotation);
    EXPECT_EQ(ClassifyEvent(cat, "_AllReduceBackward0"), EventRole::kAnnotation);
    EXPECT_EQ(ClassifyEvent(cat, "_Reduce_ScatterBackward"), EventRole::kAnnotation);
  }
  // Autograd nodes of ops that only share a word stay compute.
  EXPECT_EQ(ClassifyEvent("", "GatherBackward0"), EventRole::kCpuOp);
  EXPECT_EQ(ClassifyEvent("", "autograd::engine::evaluate_function: ScatterAddBackward0"), EventRole::kCpuOp);
  EXPECT_EQ(ClassifyEvent("", "_AllReduceFusedBackward"), EventRole::kCpuOp);
  EXPECT_EQ(ClassifyEvent("cpu_op", "_GatherBackwardX"), EventRole::kCpuOp);
}

}  // namespace
}  // namespace eroica
