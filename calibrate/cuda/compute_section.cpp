// compute: the bf16 GEMM rate cuBLAS reaches (cublasGemmEx, bf16 in/out, fp32 accumulate,
// random operands: zeros run faster), and the share of it kept while a pinned H2D copy runs
// on another stream (compute.gemm_kept_with_copy). cuBLAS is dlopen'ed (libcublas.so.13),
// so the binary needs no cuBLAS at link time. Events time the GEMMs; median of trials.
#include <cublas_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "calibrate/cuda/cuda_util.hpp"
#include "calibrate/cuda/kernels.hpp"
#include "calibrate/duty_pacing.hpp"
#include "calibrate/gpu.hpp"
#include "calibrate/sections.hpp"
#include "calibrate/stats.hpp"
#include "models/cost_models.hpp"

namespace pipeplan::calibrate {

namespace {

using namespace cuda;

// The few cuBLAS entry points used, resolved from the dlopen'ed library.
struct Cublas {
  using Create = cublasStatus_t(cublasHandle_t*);
  using Destroy = cublasStatus_t(cublasHandle_t);
  using SetStream = cublasStatus_t(cublasHandle_t, cudaStream_t);
  using GemmEx = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  std::unique_ptr<DynLib> lib;
  Create* create = nullptr;
  Destroy* destroy = nullptr;
  SetStream* set_stream = nullptr;
  GemmEx* gemm_ex = nullptr;
};

Outcome<Cublas> load_cublas() {
  Cublas c;
  std::string why;
  c.lib = DynLib::open_first(cublas_candidates(), why);
  if (!c.lib) return Problem::unavailable("cuBLAS not found (libcublas.so.13; set PIPEPLAN_CUBLAS_LIBRARY): " + why);
  c.create = c.lib->symbol<Cublas::Create>("cublasCreate_v2");
  c.destroy = c.lib->symbol<Cublas::Destroy>("cublasDestroy_v2");
  c.set_stream = c.lib->symbol<Cublas::SetStream>("cublasSetStream_v2");
  c.gemm_ex = c.lib->symbol<Cublas::GemmEx>("cublasGemmEx");
  if (!c.create || !c.destroy || !c.set_stream || !c.gemm_ex)
    return Problem::failed("cuBLAS at " + c.lib->path() + " lacks cublasCreate_v2/cublasSetStream_v2/cublasGemmEx");
  return c;
}

// Owns a cublasHandle_t.
class CublasHandle {
 public:
  CublasHandle(const Cublas& api, cublasHandle_t h) : api_(api), h_(h) {}
  ~CublasHandle() { api_.destroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  const Cublas& api_;
  cublasHandle_t h_;
};

}  // namespace

SectionOutcome run_compute(const RunContext& ctx) {
  if (const std::string why = gpu::unavailable_reason(); !why.empty()) return Problem::unavailable(why);
  PP_CUDA_TRY(cudaSetDevice(0));
  auto api_or = load_cublas();
  if (!api_or.ok()) return api_or.problem();
  const Cublas& api = api_or.value();
  ctx.log("compute: cuBLAS from " + api.lib->path());

  const int n = 8192;  // 2 n^3 = 1.1e12 flop, ~1.4 ms on an H200: long enough for events
  const std::size_t matrix_bytes = static_cast<std::size_t>(n) * n * 2;
  const int gemms_per_trial = ctx.by_scale(2, 10, 20);
  const int trials = ctx.by_scale(2, 3, 5);
  auto a = device_buffer(matrix_bytes);
  auto b = device_buffer(matrix_bytes);
  auto c = device_buffer(matrix_bytes);
  auto gemm_stream = Stream::create();
  auto copy_stream = Stream::create();
  auto e0 = Event::create(), e1 = Event::create(), e2 = Event::create(), e3 = Event::create();
  auto flag = SpinFlag::create();
  for (const Problem* p : {a.ok() ? nullptr : &a.problem(), b.ok() ? nullptr : &b.problem(), c.ok() ? nullptr : &c.problem(),
                           gemm_stream.ok() ? nullptr : &gemm_stream.problem(), copy_stream.ok() ? nullptr : &copy_stream.problem(),
                           e0.ok() ? nullptr : &e0.problem(), e1.ok() ? nullptr : &e1.problem(), e2.ok() ? nullptr : &e2.problem(),
                           e3.ok() ? nullptr : &e3.problem(), flag.ok() ? nullptr : &flag.problem()})
    if (p) return *p;
  const cudaStream_t gs = gemm_stream.value().get();
  const cudaStream_t cs = copy_stream.value().get();
  PP_CUDA_TRY(kernels::launch_fill_bf16(gs, a.value().get(), static_cast<std::size_t>(n) * n, 1));
  PP_CUDA_TRY(kernels::launch_fill_bf16(gs, b.value().get(), static_cast<std::size_t>(n) * n, 2));

  cublasHandle_t raw = nullptr;
  if (api.create(&raw) != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasCreate failed");
  CublasHandle handle(api, raw);
  if (api.set_stream(handle.get(), gs) != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasSetStream failed");
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&]() {
    return api.gemm_ex(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.value().get(), CUDA_R_16BF, n,
                       b.value().get(), CUDA_R_16BF, n, &beta, c.value().get(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
  };
  const double flop_per_gemm = 2.0 * n * static_cast<double>(n) * n;
  // Warm-up long enough for clocks to settle (a few GEMMs were not: the first full run on the
  // H200 read 699 TFLOP/s alone, then 794 beside a copy).
  if (gemm() != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasGemmEx (bf16, 8192^3) failed");
  for (const double warm_until = now_s() + ctx.by_scale(0.05, 0.3, 0.5); now_s() < warm_until;) {
    for (int i = 0; i < 10; ++i)
      if (gemm() != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasGemmEx failed in the warm-up");
    PP_CUDA_TRY(cudaStreamSynchronize(gs));
  }

  const std::size_t chunk = ctx.by_scale<std::size_t>(16u << 20, 256u << 20, 256u << 20);
  auto host = pinned_buffer(chunk);
  auto dev = device_buffer(chunk);
  if (!host.ok()) return host.problem();
  if (!dev.ok()) return dev.problem();
  std::memset(host.value().get(), 1, chunk);

  // Trials alternate alone / beside pinned H2D copies that outlast the GEMMs (both streams
  // released together by the spin flag), so drift affects both alike.
  std::vector<double> alone, beside;
  int chunks = 0;
  for (int t = 0; t < trials; ++t) {
    if (ctx.interrupted()) return Problem::interrupted();
    PP_CUDA_TRY(cudaEventRecord(e0.value().get(), gs));
    for (int i = 0; i < gemms_per_trial; ++i)
      if (gemm() != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasGemmEx failed in a timed trial");
    PP_CUDA_TRY(cudaEventRecord(e1.value().get(), gs));
    auto s_alone = elapsed_s(e0.value(), e1.value());
    if (!s_alone.ok()) return s_alone.problem();
    alone.push_back(flop_per_gemm * gemms_per_trial / s_alone.value());

    if (chunks == 0) {  // size the copy run on the first trial: the GEMMs' time at ~50 GB/s, plus two chunks
      const double copy_rate_guess = 50e9;
      chunks = static_cast<int>(std::ceil(s_alone.value() * copy_rate_guess / static_cast<double>(chunk))) + 2;
    }
    flag.value().reset();
    PP_CUDA_TRY(flag.value().hold(cs));
    PP_CUDA_TRY(flag.value().hold(gs));
    PP_CUDA_TRY(cudaEventRecord(e2.value().get(), cs));
    for (int i = 0; i < chunks; ++i)
      PP_CUDA_TRY(cudaMemcpyAsync(dev.value().get(), host.value().get(), chunk, cudaMemcpyHostToDevice, cs));
    PP_CUDA_TRY(cudaEventRecord(e3.value().get(), cs));
    PP_CUDA_TRY(cudaEventRecord(e0.value().get(), gs));
    for (int i = 0; i < gemms_per_trial; ++i)
      if (gemm() != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasGemmEx failed in a timed trial");
    PP_CUDA_TRY(cudaEventRecord(e1.value().get(), gs));
    flag.value().release();
    auto s = elapsed_s(e0.value(), e1.value());
    auto copy_s = elapsed_s(e2.value(), e3.value());
    if (!s.ok()) return s.problem();
    if (!copy_s.ok()) return copy_s.problem();
    if (copy_s.value() < s.value())
      ctx.log(strf("compute: note: copies (%.2f ms) ended before the GEMMs (%.2f ms)", copy_s.value() * 1e3, s.value() * 1e3));
    beside.push_back(flop_per_gemm * gemms_per_trial / s.value());
  }
  const double flops_alone = median(alone);
  const double kept = median(beside) / flops_alone;
  ctx.log(strf("compute: bf16 GEMM %dx%dx%d: %.1f TFLOP/s alone, %.1f beside an H2D copy (kept %.3f)", n, n, n,
               flops_alone / 1e12, median(beside) / 1e12, kept));

  SectionReport report;
  report.profile_keys["compute"] = {{"bf16_gemm_flops_per_s", flops_alone}, {"gemm_kept_with_copy", kept}};

  // The GPU's duty (compute.step_vs_gpu_duty): a GPU holds its boost clock while it rests. The H200 ran
  // a 25 ms matmul step in 25.0 ms after a rest and 29.9 ms back to back, and in between inside real
  // input-bound loops (validation run 12). A "step" of GEMMs (about 25 ms) is launched again and again, the
  // host sleeping between (the GPU idle) as long as keeps the window at its duty (rest_for_duty_s, since
  // run 47: a fixed period overshot once the step heated); the last half of each duty's window
  // is timed by events; duty 0 is one step after 0.3 s of rest. Relative to that isolated step.
  // Never costs the section: a failure leaves a note.
  const double gemm_s = flop_per_gemm / flops_alone;
  const int per_step = std::max(1, static_cast<int>(std::lround(0.025 / gemm_s)));
  double duty_iso_s = 0.0;  // the rested step, set by duty_curve
  auto duty_curve = [&]() -> Outcome<nlohmann::json> {
    auto step_s = [&]() -> Outcome<double> {
      PP_CUDA_TRY(cudaEventRecord(e0.value().get(), gs));
      for (int i = 0; i < per_step; ++i)
        if (gemm() != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasGemmEx failed in the duty run");
      PP_CUDA_TRY(cudaEventRecord(e1.value().get(), gs));
      return elapsed_s(e0.value(), e1.value());  // waits for the step
    };
    std::vector<double> rested;
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      auto t = step_s();
      if (!t.ok()) return t.problem();
      rested.push_back(t.value());
    }
    const double iso_s = median(rested);
    duty_iso_s = iso_s;
    nlohmann::json points = nlohmann::json::array({{{"duty", 0.0}, {"relative_time", 1.0}}});
    // Between half and back to back each duty is held 3 s, all but its first 0.6 s timed: there the GPU's clock
    // humps once a second for about a quarter of it (validation-runs.md run 45, finding 2), and half a second
    // caught part of one hump or none. 0.9 since run 46's plan, for where the humps stop. Each point keeps its
    // median step (relative_time) and its p90 (relative_p90_time).
    for (const double target : {0.25, 0.5, 0.75, 0.9, 1.0}) {
      if (ctx.interrupted()) return Problem::interrupted();
      const bool humps_possible = target > 0.5 && target < 1.0;
      const double window_s = humps_possible ? ctx.by_scale(1.2, 3.0, 3.0) : ctx.by_scale(0.3, 1.0, 1.5);
      const double settle_s = humps_possible ? std::min(0.6, window_s / 2) : window_s / 2;
      std::vector<double> times;
      double busy_s = 0.0, span_s = 0.0;
      double run_busy_s = 0.0;  // GPU time of every step in this duty's window, the settling ones too
      const double start = now_s();
      while (now_s() - start < window_s) {
        const double a0 = now_s();
        auto t = step_s();
        if (!t.ok()) return t.problem();
        run_busy_s += t.value();
        // paced on the steps' achieved time, not the rested one (rest_for_duty_s says why)
        const double rest_s = rest_for_duty_s(run_busy_s, now_s() - start, target);
        if (rest_s > 0.0) std::this_thread::sleep_for(std::chrono::duration<double>(rest_s));
        if (a0 - start >= settle_s) {  // the clock settled to this duty
          times.push_back(t.value());
          busy_s += t.value();
          span_s += now_s() - a0;
        }
      }
      if (times.size() < 3 || span_s <= 0.0) return Problem::failed("too few steps in the duty run");
      const double duty = std::min(1.0, busy_s / span_s);
      const double p90_s = percentile(times, 90);
      points.push_back({{"duty", duty}, {"relative_time", median(times) / iso_s}, {"relative_p90_time", p90_s / iso_s}});
      ctx.log(strf("compute: GEMM step of %.1f ms (%d GEMMs) at GPU duty %.2f: %.2f ms (%.3f of rested), p90 %.2f ms "
                   "(%zu steps)", iso_s * 1e3, per_step, duty, median(times) * 1e3, median(times) / iso_s, p90_s * 1e3,
                   times.size()));
    }
    return points;
  };
  // The burst ramp (compute.step_burst_after_rest): inside input-bound loops the H200 ran the first step after a
  // wait near its rested time and the third near its back-to-back time (validation run 14, finding 11). Three
  // bursts of 8 GEMM steps back to back, each after 0.3 s of rest, CUDA events between the steps; median per
  // position, relative to the rested step. With the duty curve it gives the GPU's duty time constant
  // (compute.gpu_duty_time_constant_s, fit_gpu_duty_time_constant). Never costs the section.
  auto burst_ramp = [&]() -> Outcome<std::vector<double>> {
    constexpr int kSteps = 8;
    std::vector<Event> ev;
    for (int j = 0; j <= kSteps; ++j) {
      auto e = Event::create();
      if (!e.ok()) return e.problem();
      ev.push_back(std::move(e.value()));
    }
    std::vector<std::vector<double>> by_position(kSteps);
    for (int burst = 0; burst < 3; ++burst) {
      if (ctx.interrupted()) return Problem::interrupted();
      PP_CUDA_TRY(cudaStreamSynchronize(gs));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      PP_CUDA_TRY(cudaEventRecord(ev[0].get(), gs));
      for (int j = 0; j < kSteps; ++j) {
        for (int i = 0; i < per_step; ++i)
          if (gemm() != CUBLAS_STATUS_SUCCESS) return Problem::failed("cublasGemmEx failed in the burst run");
        PP_CUDA_TRY(cudaEventRecord(ev[j + 1].get(), gs));
      }
      for (int j = 0; j < kSteps; ++j) {
        auto t = elapsed_s(ev[j], ev[j + 1]);
        if (!t.ok()) return t.problem();
        by_position[j].push_back(t.value());
      }
    }
    std::vector<double> relative;
    for (auto& v : by_position) relative.push_back(median(v) / duty_iso_s);
    return relative;
  };
  auto duty = duty_curve();
  if (duty.ok()) {
    report.profile_keys["compute"]["step_vs_gpu_duty"] = duty.value();
    auto ramp = burst_ramp();
    if (ramp.ok()) {
      nlohmann::json pts = nlohmann::json::array();
      std::vector<RelativeDutyPoint> shape;
      for (const auto& q : duty.value()) shape.push_back({q["duty"].get<double>(), q["relative_time"].get<double>()});
      std::string line;
      for (std::size_t k = 0; k < ramp.value().size(); ++k) {
        pts.push_back({{"position", static_cast<int>(k)}, {"relative_time", ramp.value()[k]}});
        line += strf("%s%.3f", k ? " " : "", ramp.value()[k]);
      }
      report.profile_keys["compute"]["step_burst_after_rest"] = pts;
      const double tau = fit_gpu_duty_time_constant(shape, ramp.value(), duty_iso_s);
      if (tau > 0.0) report.profile_keys["compute"]["gpu_duty_time_constant_s"] = tau;
      ctx.log(strf("compute: %d-GEMM steps back to back after 0.3 s rest, relative to rested: %s -> duty time "
                   "constant %.1f ms", per_step, line.c_str(), tau * 1e3));
    } else {
      if (ramp.problem().kind == Problem::Kind::interrupted) return ramp.problem();
      report.notes.push_back("compute: step_burst_after_rest not measured: " + ramp.problem().reason);
    }
  } else {
    if (duty.problem().kind == Problem::Kind::interrupted) return duty.problem();
    report.notes.push_back("compute: step_vs_gpu_duty not measured: " + duty.problem().reason);
  }
  return report;
}

}  // namespace pipeplan::calibrate
