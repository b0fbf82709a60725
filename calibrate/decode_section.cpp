// decode: CPU JPEG decode with libjpeg-turbo (what torchvision/PIL workers spend most of
// their time on) and how per-core speed falls as more cores decode at once. The JPEGs are
// generated here (smooth gradients + texture + noise, quality 90, 4:2:0 like most photo
// datasets), so no data set is needed. The scaling curve becomes cpu.speed_vs_busy_cores, and
// running 2x cores threads gives cpu.oversubscription_cost (formula in calibrate/stats.hpp).
#include <pthread.h>
#include <sched.h>
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/gpu.hpp"
#include "calibrate/sections.hpp"
#include "calibrate/stats.hpp"
#include "calibrate/wander_log.hpp"

namespace pipeplan::calibrate {

namespace {

struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

struct Jpeg {
  int width = 0, height = 0;
  std::vector<unsigned char> bytes;
};

// A photo-like RGB image: large smooth gradients, mid-frequency texture and sensor-like noise,
// so the entropy coder sees a realistic mix (a flat image decodes unrealistically fast).
std::vector<unsigned char> synthetic_rgb(int w, int h, std::uint32_t seed) {
  std::vector<unsigned char> rgb(static_cast<std::size_t>(w) * h * 3);
  std::uint32_t x = seed * 2654435761u + 1;
  for (int y = 0; y < h; ++y) {
    for (int i = 0; i < w; ++i) {
      const double u = static_cast<double>(i) / w, v = static_cast<double>(y) / h;
      for (int c = 0; c < 3; ++c) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        const double noise = static_cast<double>(x % 25) - 12.0;
        const double base = 128.0 + 70.0 * std::sin(3.0 * u + 2.0 * c) * std::cos(2.5 * v - c) +
                            25.0 * std::sin(40.0 * u * (1.0 + c) + 25.0 * v) * std::sin(30.0 * v * (2.0 - v));
        rgb[(static_cast<std::size_t>(y) * w + i) * 3 + c] =
            static_cast<unsigned char>(std::clamp(base + noise, 0.0, 255.0));
      }
    }
  }
  return rgb;
}

Outcome<Jpeg> make_jpeg(int w, int h, std::uint32_t seed) {
  TjHandle tj(tjInitCompress());
  if (!tj) return Problem::failed(std::string("tjInitCompress: ") + tjGetErrorStr2(nullptr));
  auto rgb = synthetic_rgb(w, h, seed);
  unsigned char* out = nullptr;
  unsigned long out_bytes = 0;
  if (tjCompress2(tj.get(), rgb.data(), w, 0, h, TJPF_RGB, &out, &out_bytes, TJSAMP_420, 90, 0) != 0)
    return Problem::failed(std::string("tjCompress2: ") + tjGetErrorStr2(tj.get()));
  Jpeg j{w, h, std::vector<unsigned char>(out, out + out_bytes)};
  tjFree(out);
  return j;
}

// Decodes one image to RGB the way PIL/torchvision do (accurate integer DCT, no fast flags).
class Decoder {
 public:
  explicit Decoder(const Jpeg& jpeg) : jpeg_(jpeg), tj_(tjInitDecompress()) {
    rgb_.resize(static_cast<std::size_t>(jpeg.width) * jpeg.height * 3);
  }
  bool ready() const { return static_cast<bool>(tj_); }
  bool decode() {
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    if (tjDecompressHeader3(tj_.get(), jpeg_.bytes.data(), jpeg_.bytes.size(), &w, &h, &subsamp, &colorspace) != 0)
      return false;
    return tjDecompress2(tj_.get(), jpeg_.bytes.data(), jpeg_.bytes.size(), rgb_.data(), w, 0, h, TJPF_RGB, 0) == 0;
  }
  std::string error() const { return tjGetErrorStr2(tj_.get()); }

 private:
  Jpeg jpeg_;  // each decoder its own copy, as each worker has its own files
  TjHandle tj_;
  std::vector<unsigned char> rgb_;
};

// One thread of a scaling run. All threads share one window: it opens when the first thread
// passes the start latch and closes `duration_s` later, so a thread the scheduler starts late
// (oversubscription) cannot take a core to itself after the others have stopped.
struct WindowShare {
  long images = 0;
  double first_s = 0.0, last_s = 0.0;  // this thread's start and its last completion
  bool ok = true;
};

void decode_in_window(const Jpeg& jpeg, double duration_s, std::latch& start, std::atomic<double>& deadline_s,
                      WindowShare& out) {
  Decoder d(jpeg);
  d.decode();  // warm-up: tables, caches, output buffer pages
  start.arrive_and_wait();
  out.first_s = now_s();
  double unset = 0.0;
  deadline_s.compare_exchange_strong(unset, out.first_s + duration_s);
  const double deadline = deadline_s.load();
  double t = out.first_s;
  while (t < deadline) {
    if (!d.decode()) {
      out.ok = false;
      return;
    }
    ++out.images;
    t = now_s();
  }
  out.last_s = t;
}

// Per-thread decode rate with `threads` threads decoding at once: all images decoded in the
// shared window, divided by the window's length and by the thread count. `spread` gets the
// spread of the threads' own rates (each over its own start to last completion).
double per_thread_rate(const Jpeg& jpeg, int threads, double duration_s, bool& ok, double* spread = nullptr) {
  std::vector<WindowShare> shares(static_cast<std::size_t>(threads));
  std::latch start(threads);
  std::atomic<double> deadline_s{0.0};
  {
    std::vector<std::jthread> pool;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back(decode_in_window, std::cref(jpeg), duration_s, std::ref(start), std::ref(deadline_s),
                        std::ref(shares[static_cast<std::size_t>(i)]));
  }
  long images = 0;
  double first = shares.front().first_s, last = shares.front().last_s;
  std::vector<double> own_rates;
  for (const auto& s : shares) {
    if (s.last_s > s.first_s && s.images > 0) own_rates.push_back(static_cast<double>(s.images) / (s.last_s - s.first_s));
    ok = ok && s.ok;
    images += s.images;
    first = std::min(first, s.first_s);
    last = std::max(last, s.last_s);
  }
  if (spread != nullptr) *spread = spread_cv(own_rates);
  return static_cast<double>(images) / (last - first) / threads;
}

// The CPUs this process may run on (its affinity mask), in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// One thread's decode rate on each CPU in turn (pinned there for `slice_s`), for the scaling curve's
// one-core reference. The cores of a VM differ and wander (threads 1.04-1.53x apart for seconds, run 12),
// so one unpinned thread samples whichever core it lands on and lifts or drops the whole curve
// (0.78-1.11 at 2 busy cores over 8 calls); the many-thread points already average over cores, and so
// does this mean. `per_cpu` gets each CPU's rate and `pinned_cpus` its CPU id, in the same order; a CPU the
// thread could not be pinned to is left out of both.
double one_thread_rate_across_cpus(const Jpeg& jpeg, const std::vector<int>& cpus, double slice_s, bool& ok,
                                   std::vector<double>& per_cpu, std::vector<int>& pinned_cpus) {
  per_cpu.clear();
  pinned_cpus.clear();
  for (int cpu : cpus) {
    WindowShare share;
    bool pinned = false;
    {
      std::latch start(1);
      std::atomic<double> deadline_s{0.0};
      std::jthread t([&] {
        pinned = pin_this_thread(cpu);
        decode_in_window(jpeg, slice_s, start, deadline_s, share);
      });
    }
    ok = ok && share.ok;
    if (pinned && share.last_s > share.first_s && share.images > 0) {
      per_cpu.push_back(static_cast<double>(share.images) / (share.last_s - share.first_s));
      pinned_cpus.push_back(cpu);
    }
  }
  if (per_cpu.empty()) return 0.0;
  double sum = 0.0;
  for (double r : per_cpu) sum += r;
  return sum / static_cast<double>(per_cpu.size());
}

// The core-speed wander: `threads` threads decode `jpeg` for `duration_s`, each timing every
// chunk of `chunk_images` images (about 50 ms of work), so a slow or fast spell of a core shows
// as a run of slow or fast chunks of the thread on it.
// pause_s > 0: each thread sleeps that long after each chunk (not timed), as a DataLoader worker waits
// between batches, which lets the scheduler place it on another core when it wakes.
std::vector<std::vector<double>> chunk_durations(const Jpeg& jpeg, int threads, int chunk_images, double duration_s,
                                                 bool& ok, double pause_s = 0.0) {
  std::vector<std::vector<double>> out(static_cast<std::size_t>(threads));
  std::vector<char> thread_ok(static_cast<std::size_t>(threads), 1);
  std::latch start(threads);
  {
    std::vector<std::jthread> pool;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&, i] {
        Decoder d(jpeg);
        d.decode();
        start.arrive_and_wait();
        const double end = now_s() + duration_s;
        double t0 = now_s();
        while (t0 < end) {
          for (int k = 0; k < chunk_images; ++k)
            if (!d.decode()) {
              thread_ok[static_cast<std::size_t>(i)] = 0;
              return;
            }
          const double t1 = now_s();
          out[static_cast<std::size_t>(i)].push_back(t1 - t0);
          t0 = t1;
          if (pause_s > 0.0) {
            std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
            t0 = now_s();
          }
        }
      });
  }
  for (char c : thread_ok) ok = ok && c;
  return out;
}

// The slow part of the threads' own wander (fit_own_wander), as one log line that names what was measured.
void log_slow_wander(const RunContext& ctx, const std::vector<std::vector<double>>& chunks, int lag_chunks,
                     double window_s, const std::string& what, double gap_s = 0.0) {
  const auto own = fit_own_wander(chunks, lag_chunks, window_s, gap_s);
  if (!own || !own->slow) return;
  const CoreWander* fast = &own->fast;
  const SlowWander* slow = &*own->slow;
  ctx.log(strf("decode: core speed slow wander over %s, each thread's own (logged, not used): slow cv %.4f, "
               "slow correlation time %.2f s (fast part: cv %.3f, correlation time %.2f s; %d windows of %.1f s, "
               "variance %.3g, adjacent covariance %.3g); the threads' window means correlate %.2f from one window "
               "to the next",
               what.c_str(), slow->cv, slow->correlation_s, fast->cv, fast->correlation_s, slow->windows,
               slow->window_s, slow->window_variance, slow->adjacent_covariance,
               slow->across_threads_adjacent_correlation.value_or(0.0)));
}

}  // namespace

SectionOutcome run_decode(const RunContext& ctx) {
  struct Size {
    int w, h;
  };
  const std::vector<Size> sizes = {{256, 256}, {500, 375}, {1024, 768}};
  const double single_s = ctx.by_scale(0.1, 0.3, 1.0);
  // The scaling curve drives every CPU stage of the simulation: quick measures it as the full
  // run does (0.4 s windows put 8 busy cores at 0.84 of one on the H200 where 1 s windows said 0.96).
  const double scaling_s = ctx.by_scale(0.15, 1.0, 1.0);
  const int trials = ctx.by_scale(1, 3, 3);
  const int cores = static_cast<int>(ctx.cores);

  std::vector<Jpeg> jpegs;
  for (const auto& s : sizes) {
    auto j = make_jpeg(s.w, s.h, static_cast<std::uint32_t>(s.w * 7 + s.h));
    if (!j.ok()) return j.problem();
    jpegs.push_back(std::move(j.value()));
  }

  nlohmann::json cpu_jpeg = nlohmann::json::array();
  for (const auto& j : jpegs) {
    if (ctx.interrupted()) return Problem::interrupted();
    Decoder d(j);
    if (!d.ready() || !d.decode()) return Problem::failed("tjDecompress2: " + d.error());
    std::vector<double> per_image_s;
    const double t_end = now_s() + single_s;
    while (now_s() < t_end || per_image_s.size() < 5) {
      const double t0 = now_s();
      d.decode();
      per_image_s.push_back(now_s() - t0);
    }
    const double s = median(per_image_s);
    cpu_jpeg.push_back({{"width", j.width}, {"height", j.height}, {"bytes", j.bytes.size()}, {"quality", 90}, {"s_per_image", s}});
    ctx.log(strf("decode: %4dx%-4d %7zu bytes: %.3f ms/image (1 thread, median of %zu)", j.width, j.height,
                 j.bytes.size(), s * 1e3, per_image_s.size()));
  }

  // Scaling on the ImageNet-typical 500x375 image: 1, 2, 4, ... cores threads, then 2x cores.
  const Jpeg& typical = jpegs[1];
  std::vector<int> thread_counts;
  for (int t = 1; t < cores; t *= 2) thread_counts.push_back(t);
  thread_counts.push_back(cores);
  thread_counts.push_back(2 * cores);

  // Rounds interleave the thread counts (1, 2, ..., 2x cores, then again), so a slow spell of
  // the machine or a clock ramp does not land on one count; median per count. A discarded
  // 1-thread run first warms the clocks.
  // The 1-thread point is one thread pinned to each allowed CPU in turn (slices of at least 0.1 s),
  // their mean rate: the reference the many-thread points are divided by (since run 14).
  bool ok = true;
  per_thread_rate(typical, 1, scaling_s / 2, ok);
  const std::vector<int> cpus = allowed_cpus();
  const bool reference_across_cpus = cpus.size() >= 2;
  const double slice_s = reference_across_cpus ? std::max(0.1, scaling_s / static_cast<double>(cpus.size())) : 0.0;
  std::vector<std::vector<double>> rates(thread_counts.size()), spreads(thread_counts.size());
  // each round's 1-thread rate per CPU (since run 15): do the same CPUs come out slow every round?
  std::vector<std::vector<double>> per_cpu_by_round;
  std::vector<int> per_cpu_ids;
  for (int round = 0; round < trials; ++round) {
    for (std::size_t i = 0; i < thread_counts.size(); ++i) {
      if (ctx.interrupted()) return Problem::interrupted();
      double spread = 0.0;
      if (thread_counts[i] == 1 && reference_across_cpus) {
        std::vector<double> per_cpu;
        std::vector<int> pinned_cpus;
        const double mean_rate = one_thread_rate_across_cpus(typical, cpus, slice_s, ok, per_cpu, pinned_cpus);
        if (per_cpu.size() >= 2) {
          if (per_cpu_by_round.empty()) per_cpu_ids = pinned_cpus;
          // a round that pinned a different set of CPUs cannot be lined up with the first
          if (pinned_cpus == per_cpu_ids) per_cpu_by_round.push_back(per_cpu);
          const auto [lo, hi] = std::minmax_element(per_cpu.begin(), per_cpu.end());
          spread = spread_cv(per_cpu);
          // logged beside it, not used: what the unpinned reference would have been this round
          const double unpinned_rate = per_thread_rate(typical, 1, scaling_s, ok);
          ctx.log(strf("decode: round %d, 1 thread pinned to each of %zu CPUs for %.2f s: mean %.1f images/s, "
                       "slowest %.1f, fastest %.1f (%.2fx), cv %.3f; unpinned %.1f",
                       round + 1, per_cpu.size(), slice_s, mean_rate, *lo, *hi, *hi / *lo, spread, unpinned_rate));
          rates[i].push_back(mean_rate);
          spreads[i].push_back(spread);
          continue;
        }
        // pinning refused everywhere (a seccomp filter, a cpuset that changed under us): the unpinned
        // thread, as before
      }
      rates[i].push_back(per_thread_rate(typical, thread_counts[i], scaling_s, ok, &spread));
      spreads[i].push_back(spread);
    }
  }
  if (!ok) return Problem::failed("a decode failed in the scaling run");

  nlohmann::json scaling = nlohmann::json::array();
  nlohmann::json speed = nlohmann::json::array();
  const double rate_1 = median(rates[0]);
  double aggregate_at_cores = 0.0, aggregate_at_2x = 0.0;
  ctx.log("decode: threads  images/s  images/s/thread  relative_speed  spread_across_threads");
  for (std::size_t i = 0; i < thread_counts.size(); ++i) {
    const int threads = thread_counts[i];
    const double per_thread = median(rates[i]);
    const double relative = per_thread / rate_1;
    const double aggregate = per_thread * threads;
    if (threads == cores) aggregate_at_cores = aggregate;
    if (threads == 2 * cores) aggregate_at_2x = aggregate;
    const double spread = median(spreads[i]);
    scaling.push_back({{"threads", threads},
                       {"images_per_s", aggregate},
                       {"images_per_s_per_thread", per_thread},
                       {"relative_speed", relative},
                       {"rate_cv_across_threads", spread}});
    if (threads <= cores) speed.push_back({{"busy_cores", threads}, {"relative_speed", relative}});
    ctx.log(strf("decode: %7d %9.1f %16.1f %15.3f %22.3f", threads, aggregate, per_thread, relative, spread));
  }
  const double oversub = oversubscription_cost(aggregate_at_cores, aggregate_at_2x, cores, 2 * cores);
  ctx.log(strf("decode: oversubscription_cost %.4f (aggregate %.1f images/s at %d threads, %.1f at %d)", oversub,
               aggregate_at_cores, cores, aggregate_at_2x, 2 * cores));

  SectionReport report;
  report.profile_keys["decode"] = {{"cpu_jpeg", cpu_jpeg}, {"cpu_jpeg_scaling", scaling}};
  if (!per_cpu_by_round.empty()) {
    nlohmann::json per_cpu = nlohmann::json::array();
    for (std::size_t i = 0; i < per_cpu_ids.size(); ++i) {
      nlohmann::json by_round = nlohmann::json::array();
      for (const auto& round : per_cpu_by_round) by_round.push_back(round[i]);
      per_cpu.push_back({{"cpu", per_cpu_ids[i]}, {"images_per_s", by_round}});
    }
    report.profile_keys["decode"]["cpu_jpeg_one_thread_per_cpu"] = per_cpu;
    if (const auto r = round_to_round_correlation(per_cpu_by_round)) {
      report.profile_keys["decode"]["cpu_jpeg_per_cpu_round_correlation"] = *r;
      ctx.log(strf("decode: the CPUs' 1-thread rates from round to round correlate %.2f over %zu CPUs and %zu rounds "
                   "(near 1: fixed fast and slow CPUs; near 0: the machine's wander in time)",
                   *r, per_cpu_ids.size(), per_cpu_by_round.size()));
    }
  }
  // The cores' wandering speed (cpu.core_speed_cv, core_speed_correlation_s): half the cores
  // decode for a few seconds, each timing 50 ms chunks; spread and the correlation 0.3 s apart
  // (about one DataLoader batch) give the simulator's Ornstein-Uhlenbeck model of it. Validation
  // run 8 saw cv 0.12-0.15 and a correlation time near 0.7 s in real workers on the H200 VM.
  const int wander_threads = std::max(1, cores / 2);
  const double image_s = 1.0 / std::max(rate_1, 1e-9);
  const int chunk_images = std::max(1, static_cast<int>(std::lround(0.05 / image_s)));
  const double wander_s = ctx.by_scale(0.5, 1.5, 6.0);
  const auto chunks = chunk_durations(typical, wander_threads, chunk_images, wander_s, ok);
  if (!ok) return Problem::failed("a decode failed in the core-speed run");
  const double chunk_s = chunk_images * image_s;
  const int lag_chunks = std::max(1, static_cast<int>(std::lround(0.3 / chunk_s)));
  const auto wander = fit_core_wander(chunks, lag_chunks);
  nlohmann::json cpu = {{"cores", cores}, {"speed_vs_busy_cores", speed}, {"oversubscription_cost", oversub}};
  if (wander) {
    cpu["core_speed_cv"] = wander->cv;
    cpu["core_speed_correlation_s"] = wander->correlation_s;
    ctx.log(strf("decode: core speed wander over %d threads x %.1f s (chunks of %d images): cv %.3f, "
                 "autocorrelation %.2f at %.2f s -> correlation time %.2f s",
                 wander_threads, wander_s, chunk_images, wander->cv, wander->lag_autocorrelation, wander->lag_s,
                 wander->correlation_s));
    // Each thread's own wander, what all threads share at the same time removed (logged, not used): the
    // simulator's wander is per worker and independent, and run 11's four calls on one lease read cv
    // 0.078-0.165 and correlation 0.4-2.9 s with the shared part in; the next runs compare the two
    // against the cases' timelines. The raw chunk times follow, for the same comparison offline.
    if (const auto own = chunks.size() > 1 ? fit_core_wander(without_common_mode(chunks), lag_chunks) : std::nullopt) {
      ctx.log(strf("decode: core speed wander, each thread's own (shared part removed; logged, not used): cv %.3f, "
                   "autocorrelation %.2f at %.2f s -> correlation time %.2f s",
                   own->cv, own->lag_autocorrelation, own->lag_s, own->correlation_s));
      log_slow_wander(ctx, chunks, lag_chunks, kSlowWindowNoPauseS, strf("%d threads x %.1f s, no pause", wander_threads, wander_s));
    }
    for (std::size_t t = 0; t < chunks.size(); ++t) {
      std::string line = strf("decode: wander chunk seconds, thread %zu:", t);
      for (double d : chunks[t]) line += strf(" %.4f", d);
      ctx.log(line);
    }
    // The slower part of the wander (logged, not used; validation run 39, finding 6): in the cases the workers'
    // mean batch times correlate 0.30 between the halves of a window where the one-part model gives 0.06, and
    // the 6 s logs above (99 calls, read afterwards) keep each thread's own speed from one 1.5 s window to the
    // next at 0.70 across threads (slow cv 0.068, median). Threads that never sleep stay on their cores; a worker
    // sleeps between batches and may wake on another, so this log pauses 2 ms after each chunk, as a worker
    // does, for 12 s (4 windows of 3 s a thread). Its chunk times follow as the `paused` lines. Run 41 read it
    // 24 s long on three calls: slow cv 0.003-0.039 beside a fast cv of 0.08-0.11, and the cases scored no
    // better with it (docs/validation-runs.md, run 41), so it stays a logged measurement, cut to 12 s for
    // calibrate's time (139-145 s of the validation script's 150 s cap at 24 s).
    if (wander_threads > 1) {
      const double paused_s = ctx.by_scale(0.5, 1.5, 12.0);
      bool ok_paused = true;
      const auto paused = chunk_durations(typical, wander_threads, chunk_images, paused_s, ok_paused,
                                            kWanderLogPauseS);
      if (ok_paused) {
        log_slow_wander(ctx, paused, lag_chunks, kSlowWindowPausedS,
                        strf("%d threads x %.1f s, 2 ms pause after each chunk", wander_threads, paused_s),
                        kWanderLogPauseS);
        for (std::size_t t = 0; t < paused.size(); ++t) {
          std::string line = strf("decode: wander chunk seconds paused, thread %zu:", t);
          for (double d : paused[t]) line += strf(" %.4f", d);
          ctx.log(line);
        }
      }
    }
  } else {
    report.notes.push_back("core speed wander not measured (too few chunks)");
  }
  // Dropped in the thirty-sixth session, for the time the paused log takes: every core busy (run 10's question,
  // whether a fuller machine wanders more; 98 calls read cv 0.10-0.11 both ways). Its code is in git.
  report.profile_keys["cpu"] = cpu;
  // the same images decoded on the GPU (nvJPEG), where there is one: what moving decode off the workers costs it
  std::vector<gpu::EncodedJpeg> encoded;
  for (const auto& j : jpegs) encoded.push_back({j.width, j.height, &j.bytes});
  const auto on_gpu = gpu::measure_gpu_jpeg_decode(ctx, encoded);
  if (on_gpu.ok()) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& q : on_gpu.value())
      points.push_back({{"width", q.width}, {"height", q.height}, {"bytes", q.bytes}, {"s_per_image", q.s_per_image},
                        {"batched_s_per_image", q.batched_s_per_image}, {"batch", q.batch}});
    report.profile_keys["decode"]["gpu_nvjpeg"] = points;
  } else if (on_gpu.problem().kind == Problem::Kind::interrupted) {
    return Problem::interrupted();
  } else {
    report.notes.push_back("gpu_nvjpeg not measured: " + on_gpu.problem().reason);
    ctx.log("decode: GPU (nvJPEG) not measured: " + on_gpu.problem().reason);
  }
  return report;
}

}  // namespace pipeplan::calibrate
