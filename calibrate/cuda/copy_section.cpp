// copy: host<->device copies as nvbandwidth measures them (host_to_device_memcpy_ce, ...):
// pinned copies are queued behind a spin kernel that holds the stream until all are
// enqueued, then timed with CUDA events (enqueue cost kept out); pageable copies are
// synchronous for the host, so they are timed on the host clock, each followed by a stream
// synchronize as PyTorch's blocking .to('cuda') does. One warm-up trial, median of the rest.
// Also: both directions at once, a copy beside an FMA-bound kernel on another stream (share
// of each one's rate kept), a default-stream copy after a kernel (did it wait?), and the
// number of copy engines. Fit per curve: time = latency_s + bytes / bytes_per_s.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "calibrate/cuda/cuda_util.hpp"
#include "calibrate/cuda/kernels.hpp"
#include "calibrate/gpu.hpp"
#include "calibrate/sections.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate {

namespace {

using namespace cuda;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

enum class Dir { h2d, d2h };

// A shared-memory segment of `bytes` whose pages exist (written through a first mapping, since unmapped)
// and a second mapping of it that has touched none of them: a batch a DataLoader worker wrote into shared
// memory, as the main process maps it on receipt. Closed and unmapped on destruction.
class FreshSharedMapping {
 public:
  static Outcome<std::unique_ptr<FreshSharedMapping>> create(std::size_t bytes) {
    auto m = std::make_unique<FreshSharedMapping>();
    m->bytes_ = bytes;
    m->fd_ = memfd_create("pipeplan-batch", 0);
    if (m->fd_ < 0) return Problem::unavailable(std::string("memfd_create: ") + std::strerror(errno));
    if (ftruncate(m->fd_, static_cast<off_t>(bytes)) != 0)
      return Problem::unavailable(std::string("ftruncate: ") + std::strerror(errno));
    void* w = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd_, 0);
    if (w == MAP_FAILED) return Problem::unavailable(std::string("mmap: ") + std::strerror(errno));
    std::memset(w, 1, bytes);  // the worker's write: the pages now exist in shared memory
    munmap(w, bytes);
    m->map_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd_, 0);
    if (m->map_ == MAP_FAILED) {
      m->map_ = nullptr;
      return Problem::unavailable(std::string("mmap: ") + std::strerror(errno));
    }
    return m;
  }
  FreshSharedMapping() = default;
  FreshSharedMapping(const FreshSharedMapping&) = delete;
  FreshSharedMapping& operator=(const FreshSharedMapping&) = delete;
  ~FreshSharedMapping() {
    if (map_ != nullptr) munmap(map_, bytes_);
    if (fd_ >= 0) close(fd_);
  }
  void* data() const { return map_; }

 private:
  std::size_t bytes_ = 0;
  int fd_ = -1;
  void* map_ = nullptr;
};

struct CopySetup {
  std::size_t max_bytes = 0;
  std::size_t target_bytes_per_trial = 0;  // small copies are repeated up to this many bytes
  int trials = 3;
};

// Owns the buffers, streams, events and the spin flag of the copy section.
class CopyBench {
 public:
  static Outcome<std::unique_ptr<CopyBench>> create(const CopySetup& setup, std::size_t side_bytes) {
    auto b = std::make_unique<CopyBench>();
    b->setup_ = setup;
    auto dev = device_buffer(setup.max_bytes);
    auto dev2 = device_buffer(side_bytes);
    auto pinned = pinned_buffer(setup.max_bytes);
    auto pinned2 = pinned_buffer(side_bytes);
    auto s1 = Stream::create();
    auto s2 = Stream::create();
    auto e0 = Event::create();
    auto e1 = Event::create();
    auto e2 = Event::create();
    auto e3 = Event::create();
    auto flag = SpinFlag::create();
    for (const Problem* p : {dev.ok() ? nullptr : &dev.problem(), dev2.ok() ? nullptr : &dev2.problem(),
                             pinned.ok() ? nullptr : &pinned.problem(), pinned2.ok() ? nullptr : &pinned2.problem(),
                             s1.ok() ? nullptr : &s1.problem(), s2.ok() ? nullptr : &s2.problem(),
                             e0.ok() ? nullptr : &e0.problem(), e1.ok() ? nullptr : &e1.problem(),
                             e2.ok() ? nullptr : &e2.problem(), e3.ok() ? nullptr : &e3.problem(),
                             flag.ok() ? nullptr : &flag.problem()})
      if (p) return *p;
    b->dev_ = std::move(dev.value());
    b->dev2_ = std::move(dev2.value());
    b->pinned_ = std::move(pinned.value());
    b->pinned2_ = std::move(pinned2.value());
    b->s1_.emplace(std::move(s1.value()));
    b->s2_.emplace(std::move(s2.value()));
    b->e0_.emplace(std::move(e0.value()));
    b->e1_.emplace(std::move(e1.value()));
    b->e2_.emplace(std::move(e2.value()));
    b->e3_.emplace(std::move(e3.value()));
    b->flag_.emplace(std::move(flag.value()));
    b->pageable_.reset(std::aligned_alloc(4096, setup.max_bytes));
    if (!b->pageable_) return Problem::failed("cannot allocate the pageable buffer");
    std::memset(b->pageable_.get(), 1, setup.max_bytes);  // first touch outside the timing
    std::memset(b->pinned_.get(), 1, setup.max_bytes);
    std::memset(b->pinned2_.get(), 1, side_bytes);
    PP_CUDA_TRY(cudaMemset(b->dev_.get(), 0, setup.max_bytes));
    PP_CUDA_TRY(cudaMemset(b->dev2_.get(), 0, side_bytes));
    PP_CUDA_TRY(cudaDeviceSynchronize());
    return b;
  }

  int loops_for(std::size_t bytes) const {
    const auto n = static_cast<long>((setup_.target_bytes_per_trial + bytes - 1) / bytes);
    return static_cast<int>(std::clamp<long>(n, 3, 200));  // <= 200: the queue must not fill behind the spin
  }

  // Seconds per copy, pinned host buffer, events around copies held by the spin kernel.
  Outcome<double> pinned_copy_s(Dir dir, std::size_t bytes) {
    const int loops = loops_for(bytes);
    std::vector<double> per_copy;
    for (int t = 0; t < setup_.trials + 1; ++t) {
      flag_->reset();
      PP_CUDA_TRY(flag_->hold(s1()));
      PP_CUDA_TRY(cudaEventRecord(e0_->get(), s1()));
      for (int i = 0; i < loops; ++i) PP_CUDA_TRY(copy(dir, bytes, s1(), pinned_.get(), dev_.get()));
      PP_CUDA_TRY(cudaEventRecord(e1_->get(), s1()));
      flag_->release();
      auto s = elapsed_s(*e0_, *e1_);
      if (!s.ok()) return s.problem();
      if (flag_->timed_out()) spin_timed_out_ = true;
      if (t > 0) per_copy.push_back(s.value() / loops);
    }
    return median(per_copy);
  }

  // Seconds per copy from a pageable host buffer, host clock, synchronised after each copy.
  Outcome<double> pageable_copy_s(Dir dir, std::size_t bytes) {
    const int loops = loops_for(bytes);
    std::vector<double> per_copy;
    for (int t = 0; t < setup_.trials + 1; ++t) {
      PP_CUDA_TRY(cudaStreamSynchronize(s1()));
      const double t0 = now_s();
      for (int i = 0; i < loops; ++i) {
        PP_CUDA_TRY(copy(dir, bytes, s1(), pageable_.get(), dev_.get()));
        PP_CUDA_TRY(cudaStreamSynchronize(s1()));
      }
      if (t > 0) per_copy.push_back((now_s() - t0) / loops);
    }
    return median(per_copy);
  }

  // Seconds per pageable H2D copy from a freshly mapped shared-memory segment (FreshSharedMapping), as
  // PyTorch's .to('cuda') of an unpinned batch a worker handed over: the copy's reads fault the pages into
  // this mapping. Host clock, synchronised, as pageable_copy_s; a new segment per copy (its set-up untimed).
  // Runs 11-14 found the unpinned loops paying 2-5 ms less per 38.5 MB batch than the receive's first touch
  // plus the resident pageable copy (docs/validation-runs.md, run 14). Unavailable where memfd or mmap is refused.
  Outcome<double> pageable_fresh_mapping_copy_s(std::size_t bytes) {
    std::vector<double> per_copy;
    for (int t = 0; t < setup_.trials + 1; ++t) {
      auto m = FreshSharedMapping::create(bytes);
      if (!m.ok()) return m.problem();
      PP_CUDA_TRY(cudaStreamSynchronize(s1()));
      const double t0 = now_s();
      PP_CUDA_TRY(copy(Dir::h2d, bytes, s1(), m.value()->data(), dev_.get()));
      PP_CUDA_TRY(cudaStreamSynchronize(s1()));
      if (t > 0) per_copy.push_back(now_s() - t0);
    }
    return median(per_copy);
  }

  // Total bytes/s with H2D on one stream and D2H on another, both held by the spin kernel.
  Outcome<double> bidirectional_bytes_per_s(std::size_t bytes) {
    const int loops = std::max(3, loops_for(bytes));
    std::vector<double> rates;
    for (int t = 0; t < setup_.trials + 1; ++t) {
      flag_->reset();
      PP_CUDA_TRY(flag_->hold(s1()));
      PP_CUDA_TRY(cudaEventRecord(e0_->get(), s1()));
      PP_CUDA_TRY(cudaStreamWaitEvent(s2(), e0_->get(), 0));
      for (int i = 0; i < loops; ++i) {
        PP_CUDA_TRY(copy(Dir::h2d, bytes, s1(), pinned_.get(), dev_.get()));
        PP_CUDA_TRY(copy(Dir::d2h, bytes, s2(), pinned2_.get(), dev2_.get()));
      }
      PP_CUDA_TRY(cudaEventRecord(e2_->get(), s2()));
      PP_CUDA_TRY(cudaStreamWaitEvent(s1(), e2_->get(), 0));
      PP_CUDA_TRY(cudaEventRecord(e1_->get(), s1()));
      flag_->release();
      auto s = elapsed_s(*e0_, *e1_);
      if (!s.ok()) return s.problem();
      if (t > 0) rates.push_back(2.0 * static_cast<double>(bytes) * loops / s.value());
    }
    return median(rates);
  }

  struct Overlap {
    double copy_kept = 0.0, compute_kept = 0.0;
    bool default_stream_serialized = false;
    double copy_alone_s = 0.0, kernel_alone_s = 0.0, copy_with_s = 0.0, kernel_with_s = 0.0, serial_total_s = 0.0;
  };

  // `chunks` pinned H2D copies of `chunk` bytes vs an FMA kernel sized to last as long.
  Outcome<Overlap> overlap(std::size_t chunk, int chunks, int sm_count) {
    const int blocks = 4 * sm_count;
    auto sink = device_buffer(static_cast<std::size_t>(blocks) * 256 * sizeof(float));
    if (!sink.ok()) return sink.problem();
    auto* sink_f = static_cast<float*>(sink.value().get());
    Overlap o;

    auto time_copies = [&](cudaStream_t s, const Event& a, const Event& b) -> cudaError_t {
      cudaError_t e = cudaEventRecord(a.get(), s);
      for (int i = 0; i < chunks && e == cudaSuccess; ++i) e = copy(Dir::h2d, chunk, s, pinned_.get(), dev_.get());
      return e == cudaSuccess ? cudaEventRecord(b.get(), s) : e;
    };
    auto time_kernel = [&](cudaStream_t s, long long iters, const Event& a, const Event& b) -> cudaError_t {
      cudaError_t e = cudaEventRecord(a.get(), s);
      if (e == cudaSuccess) e = kernels::launch_busy_fma(s, blocks, iters, sink_f);
      return e == cudaSuccess ? cudaEventRecord(b.get(), s) : e;
    };

    // Alone: copies, then a kernel calibrated to last as long.
    std::vector<double> copy_alone;
    for (int t = 0; t < 3; ++t) {
      PP_CUDA_TRY(time_copies(s1(), *e0_, *e1_));
      auto s = elapsed_s(*e0_, *e1_);
      if (!s.ok()) return s.problem();
      copy_alone.push_back(s.value());
    }
    o.copy_alone_s = median(copy_alone);
    long long iters = 1 << 14;
    PP_CUDA_TRY(time_kernel(s1(), iters, *e0_, *e1_));  // warm-up
    PP_CUDA_TRY(time_kernel(s1(), iters, *e0_, *e1_));
    auto probe = elapsed_s(*e0_, *e1_);
    if (!probe.ok()) return probe.problem();
    // Scale the iterations to the copy's duration, twice: the first probe is short enough
    // for launch effects to distort it.
    for (int refine = 0; refine < 2; ++refine) {
      iters = std::max(1LL, static_cast<long long>(static_cast<double>(iters) * o.copy_alone_s / probe.value()));
      PP_CUDA_TRY(time_kernel(s1(), iters, *e0_, *e1_));
      probe = elapsed_s(*e0_, *e1_);
      if (!probe.ok()) return probe.problem();
    }
    std::vector<double> kernel_alone;
    for (int t = 0; t < 3; ++t) {
      PP_CUDA_TRY(time_kernel(s1(), iters, *e0_, *e1_));
      auto s = elapsed_s(*e0_, *e1_);
      if (!s.ok()) return s.problem();
      kernel_alone.push_back(s.value());
    }
    o.kernel_alone_s = median(kernel_alone);

    // Together: both streams held by the spin flag, then released at once.
    std::vector<double> copy_with, kernel_with;
    for (int t = 0; t < 3; ++t) {
      flag_->reset();
      PP_CUDA_TRY(flag_->hold(s1()));
      PP_CUDA_TRY(flag_->hold(s2()));
      PP_CUDA_TRY(time_copies(s1(), *e0_, *e1_));
      PP_CUDA_TRY(time_kernel(s2(), iters, *e2_, *e3_));
      flag_->release();
      auto c = elapsed_s(*e0_, *e1_);
      auto k = elapsed_s(*e2_, *e3_);
      if (!c.ok()) return c.problem();
      if (!k.ok()) return k.problem();
      copy_with.push_back(c.value());
      kernel_with.push_back(k.value());
    }
    o.copy_with_s = median(copy_with);
    o.kernel_with_s = median(kernel_with);
    o.copy_kept = o.copy_alone_s / o.copy_with_s;
    o.compute_kept = o.kernel_alone_s / o.kernel_with_s;

    // Default stream: a kernel on a blocking stream, then a copy on the legacy default stream
    // (stream 0, where PyTorch's default-stream work goes). The legacy stream waits for
    // blocking streams, so a serialized copy ends about kernel + copy after the kernel start.
    auto blocking = Stream::create(cudaStreamDefault);
    if (!blocking.ok()) return blocking.problem();
    PP_CUDA_TRY(cudaDeviceSynchronize());
    PP_CUDA_TRY(cudaEventRecord(e0_->get(), blocking.value().get()));
    PP_CUDA_TRY(kernels::launch_busy_fma(blocking.value().get(), blocks, iters, sink_f));
    for (int i = 0; i < chunks; ++i) PP_CUDA_TRY(copy(Dir::h2d, chunk, nullptr, pinned_.get(), dev_.get()));
    PP_CUDA_TRY(cudaEventRecord(e1_->get(), nullptr));
    auto total = elapsed_s(*e0_, *e1_);
    if (!total.ok()) return total.problem();
    o.serial_total_s = total.value();
    o.default_stream_serialized = o.serial_total_s >= 0.9 * (o.kernel_alone_s + o.copy_alone_s);
    PP_CUDA_TRY(cudaDeviceSynchronize());
    return o;
  }

  bool spin_timed_out() const { return spin_timed_out_; }

 private:
  cudaStream_t s1() const { return s1_->get(); }
  cudaStream_t s2() const { return s2_->get(); }
  static cudaError_t copy(Dir dir, std::size_t bytes, cudaStream_t s, void* host, void* dev) {
    return dir == Dir::h2d ? cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s)
                           : cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s);
  }

  CopySetup setup_;
  DeviceBuffer dev_, dev2_;
  PinnedBuffer pinned_, pinned2_;
  std::unique_ptr<void, FreeDeleter> pageable_;
  std::optional<Stream> s1_, s2_;
  std::optional<Event> e0_, e1_, e2_, e3_;
  std::optional<SpinFlag> flag_;
  bool spin_timed_out_ = false;
};

nlohmann::json curve_json(const std::vector<double>& bytes, const std::vector<double>& time_s) {
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < bytes.size(); ++i)
    points.push_back({{"bytes", bytes[i]}, {"bytes_per_s", bytes[i] / time_s[i]}, {"time_s", time_s[i]}});
  nlohmann::json c = {{"points", points}};
  if (const auto fit = fit_latency_bandwidth(bytes, time_s)) {
    c["latency_s"] = fit->latency_s;
    c["bytes_per_s"] = fit->bytes_per_s;
    c["rel_rmse"] = fit->rel_rmse;
  } else {  // cannot happen with positive times over several sizes; keep the file valid anyway
    c["latency_s"] = 0.0;
    c["bytes_per_s"] = bytes.back() / time_s.back();
    c["rel_rmse"] = 0.0;
  }
  return c;
}

}  // namespace

SectionOutcome run_copy(const RunContext& ctx) {
  if (const std::string why = gpu::unavailable_reason(); !why.empty()) return Problem::unavailable(why);
  PP_CUDA_TRY(cudaSetDevice(0));
  cudaDeviceProp prop{};
  PP_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));

  CopySetup setup;
  setup.max_bytes = ctx.by_scale<std::size_t>(16u << 20, 256u << 20, std::size_t{1} << 30);
  setup.target_bytes_per_trial = ctx.by_scale<std::size_t>(16u << 20, 128u << 20, 256u << 20);
  setup.trials = ctx.by_scale(2, 3, 5);
  const std::size_t side_bytes = std::min<std::size_t>(setup.max_bytes, 256u << 20);
  auto bench_or = CopyBench::create(setup, side_bytes);
  if (!bench_or.ok()) return bench_or.problem();
  CopyBench& bench = *bench_or.value();

  // Sizes 4 KiB .. max by x4 (x16 in quick), always ending at the largest.
  std::vector<double> sizes = geometric_sizes(4096, static_cast<double>(setup.max_bytes), ctx.scale == Scale::full ? 4 : 16);
  if (sizes.back() != static_cast<double>(setup.max_bytes)) sizes.push_back(static_cast<double>(setup.max_bytes));

  const char* names[4] = {"h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"};
  std::vector<double> times[4];
  ctx.log(strf("copy: %s, %d copy engines; GB/s (1e9 B/s):", prop.name, prop.asyncEngineCount));
  ctx.log("copy:        bytes  h2d_pinned h2d_pageable  d2h_pinned d2h_pageable");
  for (const double b : sizes) {
    if (ctx.interrupted()) return Problem::interrupted();
    const auto bytes = static_cast<std::size_t>(b);
    Outcome<double> r[4] = {bench.pinned_copy_s(Dir::h2d, bytes), bench.pageable_copy_s(Dir::h2d, bytes),
                            bench.pinned_copy_s(Dir::d2h, bytes), bench.pageable_copy_s(Dir::d2h, bytes)};
    for (int i = 0; i < 4; ++i) {
      if (!r[i].ok()) return r[i].problem();
      times[i].push_back(r[i].value());
    }
    ctx.log(strf("copy: %12zu %11.2f %12.2f %11.2f %12.2f", bytes, b / r[0].value() / 1e9, b / r[1].value() / 1e9,
                 b / r[2].value() / 1e9, b / r[3].value() / 1e9));
  }

  // An unpinned batch's copy from its fresh shared-memory mapping, beside the resident pageable rate at
  // the same size (a DataLoader batch is 1-200 MB); a refusal leaves the key out, not the section.
  std::vector<double> fresh_sizes, fresh_times;
  std::string fresh_skipped;
  for (const std::size_t mib : {4u, 16u, 64u, 256u}) {
    if (ctx.interrupted()) return Problem::interrupted();
    const std::size_t bytes = std::size_t{mib} << 20;
    if (bytes > setup.max_bytes) break;
    auto fresh = bench.pageable_fresh_mapping_copy_s(bytes);
    if (!fresh.ok()) {
      if (fresh.problem().kind != Problem::Kind::unavailable) return fresh.problem();
      fresh_skipped = fresh.problem().reason;
      break;
    }
    // the resident rate at this size: the sweep's where it ran this size (full scale), else measured now
    const auto swept = std::find(sizes.begin(), sizes.end(), static_cast<double>(bytes));
    auto resident = swept != sizes.end() ? Outcome<double>(times[1][static_cast<std::size_t>(swept - sizes.begin())])
                                         : bench.pageable_copy_s(Dir::h2d, bytes);
    if (!resident.ok()) return resident.problem();
    fresh_sizes.push_back(static_cast<double>(bytes));
    fresh_times.push_back(fresh.value());
    ctx.log(strf("copy: pageable H2D of %s from a fresh shared-memory mapping %.2f ms (%.2f GB/s); from resident "
                 "memory %.2f ms (%.2f GB/s)",
                 human_bytes(bytes).c_str(), fresh.value() * 1e3, bytes / fresh.value() / 1e9, resident.value() * 1e3,
                 bytes / resident.value() / 1e9));
  }

  if (ctx.interrupted()) return Problem::interrupted();
  auto bidir = bench.bidirectional_bytes_per_s(side_bytes);
  if (!bidir.ok()) return bidir.problem();
  ctx.log(strf("copy: both directions at once, %s each: %.2f GB/s in total", human_bytes(side_bytes).c_str(),
               bidir.value() / 1e9));

  if (ctx.interrupted()) return Problem::interrupted();
  const std::size_t chunk = std::min<std::size_t>(setup.max_bytes, 64u << 20);
  auto overlap = bench.overlap(chunk, ctx.by_scale(2, 8, 16), prop.multiProcessorCount);
  if (!overlap.ok()) return overlap.problem();
  const auto& o = overlap.value();
  ctx.log(strf("copy: side stream: copy %.2f ms alone / %.2f ms beside an FMA kernel (kept %.3f); kernel %.2f / %.2f ms "
               "(kept %.3f)",
               o.copy_alone_s * 1e3, o.copy_with_s * 1e3, o.copy_kept, o.kernel_alone_s * 1e3, o.kernel_with_s * 1e3,
               o.compute_kept));
  ctx.log(strf("copy: default stream: kernel + copy took %.2f ms (alone %.2f + %.2f): %s", o.serial_total_s * 1e3,
               o.kernel_alone_s * 1e3, o.copy_alone_s * 1e3, o.default_stream_serialized ? "serialized" : "overlapped"));

  nlohmann::json copy = {{"copy_engines", prop.asyncEngineCount}};
  for (int i = 0; i < 4; ++i) {
    copy[names[i]] = curve_json(sizes, times[i]);
    ctx.log(strf("copy: %-12s fit latency %.2f us, %.2f GB/s, rel_rmse %.3f", names[i],
                 copy[names[i]]["latency_s"].get<double>() * 1e6, copy[names[i]]["bytes_per_s"].get<double>() / 1e9,
                 copy[names[i]]["rel_rmse"].get<double>()));
  }
  if (fresh_sizes.size() >= 2) copy["h2d_pageable_fresh_mapping"] = curve_json(fresh_sizes, fresh_times);
  copy["bidirectional_bytes_per_s"] = bidir.value();
  copy["overlap"] = {{"side_stream_copy_kept", o.copy_kept},
                     {"side_stream_compute_kept", o.compute_kept},
                     {"default_stream_serialized", o.default_stream_serialized}};
  SectionReport report;
  report.profile_keys["copy"] = copy;
  if (!fresh_skipped.empty())
    report.notes.push_back("copy.h2d_pageable_fresh_mapping not measured (" + fresh_skipped + ")");
  if (bench.spin_timed_out())
    report.notes.push_back("the spin kernel timed out before all copies were queued: small pinned sizes include enqueue cost");
  return report;
}

}  // namespace pipeplan::calibrate
