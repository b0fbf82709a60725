// Device kernels the GPU sections need, callable from host C++ (implemented in kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace pipeplan::calibrate::kernels {

// nvbandwidth's spin kernel: one thread waits until *flag != 0 (host-mapped memory), so the
// copies queued behind it start back to back and enqueue cost stays out of the timing. Gives
// up after timeout_ns and then sets *timed_out = 1 (the measurement is then suspect).
cudaError_t launch_wait_for_flag(cudaStream_t stream, const volatile int* flag, int* timed_out,
                                 unsigned long long timeout_ns);

// A compute-bound kernel: `blocks` x 256 threads, `iterations` dependent FMAs each, result
// written to sink[blocks * 256] so it is not optimised away. Its time is linear in iterations.
cudaError_t launch_busy_fma(cudaStream_t stream, int blocks, long long iterations, float* sink);

// Fills n bf16 values with uniform pseudo-random numbers in [-1, 1) (GEMM operands).
cudaError_t launch_fill_bf16(cudaStream_t stream, void* data, std::size_t n, unsigned seed);

// Fills n floats with `value` (NCCL buffers).
cudaError_t launch_fill_f32(cudaStream_t stream, float* data, std::size_t n, float value);

}  // namespace pipeplan::calibrate::kernels
