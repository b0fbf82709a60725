// The few kernels calibration needs: a spin-on-flag kernel (nvbandwidth's method), an
// FMA-bound kernel for overlap tests, and buffer fills.
#include <cuda_bf16.h>

#include "calibrate/cuda/kernels.hpp"

namespace pipeplan::calibrate::kernels {

namespace {

__device__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void wait_for_flag_kernel(const volatile int* flag, int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = global_timer_ns();
  while (*flag == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

__global__ void busy_fma_kernel(long long iterations, float* sink) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = 1.0f + 1e-7f * i, b = 0.999999f, c = 1e-7f, d = 0.5f;
  for (long long k = 0; k < iterations; ++k) {
    a = fmaf(a, b, c);  // two independent chains keep the FMA pipes busy
    d = fmaf(d, b, c);
  }
  sink[i] = a + d;
}

__global__ void fill_bf16_kernel(__nv_bfloat16* data, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    data[i] = __float2bfloat16(static_cast<float>(x & 0xffffu) / 32768.0f - 1.0f);
  }
}

__global__ void fill_f32_kernel(float* data, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = value;
}

}  // namespace

cudaError_t launch_wait_for_flag(cudaStream_t stream, const volatile int* flag, int* timed_out,
                                 unsigned long long timeout_ns) {
  wait_for_flag_kernel<<<1, 1, 0, stream>>>(flag, timed_out, timeout_ns);
  return cudaGetLastError();
}

cudaError_t launch_busy_fma(cudaStream_t stream, int blocks, long long iterations, float* sink) {
  busy_fma_kernel<<<blocks, 256, 0, stream>>>(iterations, sink);
  return cudaGetLastError();
}

cudaError_t launch_fill_bf16(cudaStream_t stream, void* data, std::size_t n, unsigned seed) {
  fill_bf16_kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n, seed);
  return cudaGetLastError();
}

cudaError_t launch_fill_f32(cudaStream_t stream, float* data, std::size_t n, float value) {
  fill_f32_kernel<<<1024, 256, 0, stream>>>(data, n, value);
  return cudaGetLastError();
}

}  // namespace pipeplan::calibrate::kernels
