// host section, GPU part: what making pinned memory costs (cudaHostAlloc, cudaHostRegister
// per MiB, fitted over sizes) and the pin thread's copy rate into cudaHostAlloc'd memory.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "calibrate/cuda/cuda_util.hpp"
#include "calibrate/gpu.hpp"
#include "calibrate/host_memcpy.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate::gpu {

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

Outcome<PinnedHostCosts> measure_pinned_host(const RunContext& ctx) {
  if (const std::string why = unavailable_reason(); !why.empty()) return Problem::unavailable(why);
  PP_CUDA_TRY(cudaSetDevice(0));
  PP_CUDA_TRY(cudaFree(nullptr));  // create the context outside any timing
  PinnedHostCosts costs;
  const std::size_t large_bytes = ctx.by_scale<std::size_t>(16u << 20, 64u << 20, 256u << 20);
  const int trials = ctx.by_scale(3, 5, 7);

  // The pin thread's copy: pageable (a worker's batch, already touched) -> pinned.
  {
    auto pinned = cuda::pinned_buffer(large_bytes);
    if (!pinned.ok()) return pinned.problem();
    std::unique_ptr<void, FreeDeleter> src(std::aligned_alloc(4096, large_bytes));
    if (!src) return Problem::failed("cannot allocate the pageable source");
    std::memset(src.get(), 1, large_bytes);
    std::memset(pinned.value().get(), 0, large_bytes);
    costs.pin_copy_bytes_per_s = median_memcpy_bytes_per_s(pinned.value().get(), src.get(), large_bytes, trials);
    costs.points.push_back({{"what", "pin_copy"}, {"bytes", large_bytes}, {"bytes_per_s", costs.pin_copy_bytes_per_s}});
    ctx.log(strf("host: pin copy (pageable -> cudaHostAlloc) %zu MiB: %.2f GB/s", large_bytes >> 20,
                 costs.pin_copy_bytes_per_s / 1e9));
  }

  // Allocation and registration costs over sizes; fitted s = a + s_per_byte * bytes.
  std::vector<std::size_t> sizes = {4u << 20, 16u << 20, 64u << 20};
  if (ctx.scale != Scale::tiny) sizes.push_back(256u << 20);
  if (ctx.scale == Scale::full) sizes.push_back(std::size_t{1} << 30);
  std::vector<double> xs, alloc_s, register_s;
  for (const std::size_t bytes : sizes) {
    if (ctx.interrupted()) return Problem::interrupted();
    std::vector<double> a_trials, r_trials;
    for (int t = 0; t < trials; ++t) {
      void* p = nullptr;
      const double t0 = now_s();
      PP_CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
      a_trials.push_back(now_s() - t0);
      PP_CUDA_TRY(cudaFreeHost(p));

      std::unique_ptr<void, FreeDeleter> plain(std::aligned_alloc(4096, bytes));
      if (!plain) return Problem::failed("cannot allocate a buffer to register");
      std::memset(plain.get(), 1, bytes);  // an existing, touched tensor is what gets registered
      const double t1 = now_s();
      PP_CUDA_TRY(cudaHostRegister(plain.get(), bytes, cudaHostRegisterDefault));
      r_trials.push_back(now_s() - t1);
      PP_CUDA_TRY(cudaHostUnregister(plain.get()));
    }
    const double a = median(a_trials), r = median(r_trials);
    xs.push_back(static_cast<double>(bytes));
    alloc_s.push_back(a);
    register_s.push_back(r);
    costs.points.push_back({{"what", "host_alloc"}, {"bytes", bytes}, {"s", a}, {"bytes_per_s", bytes / a}});
    costs.points.push_back({{"what", "host_register"}, {"bytes", bytes}, {"s", r}, {"bytes_per_s", bytes / r}});
    ctx.log(strf("host: %5zu MiB: cudaHostAlloc %.2f ms, cudaHostRegister %.2f ms", bytes >> 20, a * 1e3, r * 1e3));
  }
  constexpr double kMiB = 1048576.0;
  const auto per_mib = [&](const std::vector<double>& s) {
    const auto fit = fit_affine_relative(xs, s);
    return fit ? fit->slope * kMiB : s.back() / (xs.back() / kMiB);  // no sane fit: the largest size's average
  };
  costs.host_alloc_s_per_mib = per_mib(alloc_s);
  costs.host_register_s_per_mib = per_mib(register_s);
  ctx.log(strf("host: cudaHostAlloc %.1f us/MiB, cudaHostRegister %.1f us/MiB", costs.host_alloc_s_per_mib * 1e6,
               costs.host_register_s_per_mib * 1e6));
  return costs;
}

}  // namespace pipeplan::calibrate::gpu
