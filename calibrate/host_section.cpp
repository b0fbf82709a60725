// host: what a DataLoader costs on the host side besides decode: one thread's memcpy rate
// (default_collate stacking samples; pageable -> pageable) and the pin thread's copy
// (pageable -> pinned), plus what making pinned memory costs (cudaHostAlloc/Register).
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "calibrate/gpu.hpp"
#include "calibrate/host_memcpy.hpp"
#include "calibrate/sections.hpp"

namespace pipeplan::calibrate {

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<char, FreeDeleter>;

// Page-aligned and touched, so the timed copies see no first-touch faults.
HostBuffer touched_buffer(std::size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) return HostBuffer{};
  std::memset(p, 1, bytes);
  return HostBuffer{static_cast<char*>(p)};
}

// Aggregate memcpy bandwidth with `threads` threads copying at once, each between its own
// touched buffers of `bytes`, for `window_s`: memory-bound work (collate, tensor loading, pin
// copies) slows as more of it runs, and the decode curve does not show that.
double concurrent_memcpy_bytes_per_s(unsigned threads, std::size_t bytes, double window_s, bool& ok) {
  std::vector<HostBuffer> buffers;
  for (unsigned t = 0; t < 2 * threads; ++t) {
    buffers.push_back(touched_buffer(bytes));
    if (!buffers.back()) {
      ok = false;
      return 0.0;
    }
  }
  std::atomic<bool> go{false};
  std::vector<double> copied(threads, 0.0);
  std::vector<std::thread> pool;
  double start = 0.0;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t]() {
      while (!go.load(std::memory_order_acquire)) {
      }
      const double end = start + window_s;
      double n = 0.0;
      while (now_s() < end) {
        std::memcpy(buffers[2 * t].get(), buffers[2 * t + 1].get(), bytes);
        n += static_cast<double>(bytes);
      }
      copied[t] = n;
    });
  }
  start = now_s();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double elapsed = now_s() - start;
  double total = 0.0;
  for (double c : copied) total += c;
  ok = true;
  return total / elapsed;
}

}  // namespace

SectionOutcome run_host(const RunContext& ctx) {
  const std::size_t large_bytes = ctx.by_scale<std::size_t>(16u << 20, 64u << 20, 256u << 20);
  const int trials = ctx.by_scale(3, 5, 7);
  SectionReport report;
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json points = nlohmann::json::array();

  HostBuffer src = touched_buffer(large_bytes);
  HostBuffer dst = touched_buffer(large_bytes);
  if (!src || !dst) return Problem::failed("cannot allocate 2 x " + std::to_string(large_bytes) + " bytes");

  double memcpy_large = 0.0;
  std::vector<std::size_t> sizes = {std::size_t{1} << 20};
  if (large_bytes > (std::size_t{16} << 20)) sizes.push_back(std::size_t{16} << 20);
  sizes.push_back(large_bytes);
  for (std::size_t bytes : sizes) {
    if (ctx.interrupted()) return Problem::interrupted();
    const double rate = median_memcpy_bytes_per_s(dst.get(), src.get(), bytes, trials);
    points.push_back({{"what", "memcpy"}, {"bytes", bytes}, {"bytes_per_s", rate}});
    memcpy_large = rate;  // the largest size wins: collate copies are batch-sized
    ctx.log(strf("host: memcpy %zu MiB: %.2f GB/s", bytes >> 20, rate / 1e9));
  }
  host["memcpy_bytes_per_s"] = memcpy_large;

  if (ctx.interrupted()) return Problem::interrupted();
  const auto pinned = gpu::measure_pinned_host(ctx);
  if (pinned.ok()) {
    const auto& c = pinned.value();
    host["pin_copy_bytes_per_s"] = c.pin_copy_bytes_per_s;
    host["host_alloc_s_per_mib"] = c.host_alloc_s_per_mib;
    host["host_register_s_per_mib"] = c.host_register_s_per_mib;
    for (const auto& p : c.points) points.push_back(p);
  } else if (pinned.problem().kind == Problem::Kind::interrupted) {
    return Problem::interrupted();
  } else {
    // No CUDA: the pin thread's copy into page-locked memory is approximated with mlock.
    const bool locked = ::mlock(dst.get(), large_bytes) == 0;
    const double rate = median_memcpy_bytes_per_s(dst.get(), src.get(), large_bytes, trials);
    if (locked) ::munlock(dst.get(), large_bytes);
    host["pin_copy_bytes_per_s"] = rate;
    points.push_back({{"what", locked ? "pin_copy_mlock" : "pin_copy_pageable"}, {"bytes", large_bytes}, {"bytes_per_s", rate}});
    report.notes.push_back(std::string("no pinned memory (") + pinned.problem().reason + "): pin_copy measured into " +
                           (locked ? "mlock'ed memory" : "plain memory (mlock refused)") +
                           "; host_alloc/host_register not measured");
  }
  host["points"] = points;

  // Memory bandwidth as threads are added (1, 2, 4, ... up to the cores).
  const std::size_t scaling_bytes = ctx.by_scale<std::size_t>(4u << 20, 32u << 20, 64u << 20);  // beyond the L3 share
  const double window_s = ctx.by_scale(0.05, 0.15, 0.3);
  std::vector<unsigned> counts;
  for (unsigned t = 1; t < ctx.cores; t *= 2) counts.push_back(t);
  counts.push_back(std::max(1u, ctx.cores));
  nlohmann::json scaling = nlohmann::json::array();
  double one_thread = 0.0;
  for (unsigned t : counts) {
    if (ctx.interrupted()) return Problem::interrupted();
    bool ok = false;
    const double rate = concurrent_memcpy_bytes_per_s(t, scaling_bytes, window_s, ok);
    if (!ok) {
      report.notes.push_back("memcpy scaling stopped at " + std::to_string(t) + " threads: cannot allocate buffers");
      break;
    }
    if (t == 1) one_thread = rate;
    const double relative = one_thread > 0 ? rate / t / one_thread : 0.0;
    scaling.push_back({{"threads", t}, {"bytes_per_s", rate}, {"relative_speed", relative}});
    ctx.log(strf("host: memcpy with %2u threads at once: %6.2f GB/s in all, %.2f of one thread's rate each", t, rate / 1e9,
                 relative));
  }
  host["memcpy_scaling"] = scaling;
  report.profile_keys["host"] = host;
  return report;
}

}  // namespace pipeplan::calibrate
