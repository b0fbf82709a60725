// Cost models: small pure functions that turn profile and scenario numbers into times.
// Each is tested against a hand calculation in tests/models_test.cpp.
#pragma once

#include <cstddef>
#include <vector>

#include "models/profile.hpp"

namespace pipeplan {

// Time of one copy of `bytes` on `curve`: interpolates the measured rate against log(bytes)
// between points, uses the latency + bandwidth fit below the first point, holds the last
// point's rate beyond the last.
double copy_time_s(const CopyCurve& curve, double bytes);

// An unpinned batch of `bytes` handed over by a worker: the main thread maps it, its .to('cuda') copies
// from the fresh mapping, whose pages the copy touches first, and dropping the batch after the step
// releases the mapping. calibrate's receive (ipc.receive_s_per_byte) times map, touch and release
// together. With the fresh-mapping curve (copy.h2d_pageable_fresh_mapping) and the release measured apart
// (ipc.release_s_per_byte) the touch is inside that copy and the receive is the mapping plus the release;
// otherwise the receive carries its whole per-byte cost and the copy runs at the resident pageable rate
// (the fresh curve alone would drop the release with the touch: run 15's unpinned cases +11 to +25%).
bool unpinned_copy_from_fresh_mapping(const Profile& p);
double unpinned_receive_s(const Profile& p, double bytes);

// The part of the pin thread's fixed receive (ipc.receive_s_per_batch) it runs holding the GIL, on one idle core:
// ipc.receive_gil_s_per_batch where given, else ipc.receive_gil_share of the receive.
double receive_gil_held_s(const Profile& p);

// The pin thread's receive of one batch as the simulator runs it, on one idle core: the GIL-held part (first), the
// rest of the fixed receive (GIL released), and the per-byte work on the worker's mapping (ipc.receive_s_per_byte x
// bytes, with the process's memory map held). A hold beyond receive_s_per_batch comes out of the per-byte part (the
// fixed receive is a difference of two measurements that can come out short; validation-runs.md run 62, finding 9),
// so the parts sum to the receive's whole cost unless the hold exceeds it.
//
// With ipc.release_holds_gil (default) and the release measured (ipc.release_s_per_byte), the release of the worker's
// batch (munmap + close, bytes x release_s_per_byte, at most the per-byte work) moves out of map_s into release_s:
// the pin thread runs it after pin_memory()'s copy, before the batch is handed to the loop, holding the GIL (and the
// memory map). Validation run 72 (finding 5): every loop step whose .item() wait took in a pin_memory() end returned
// 7.5-7.9 ms after that end (calibrate's release of the batch: 6.8 ms), none of the others did.
struct PinReceiveParts {
  double held_s = 0.0;
  double free_s = 0.0;
  double map_s = 0.0;
  double release_s = 0.0;
  double total_s() const { return held_s + free_s + map_s + release_s; }
};
PinReceiveParts pin_receive_parts(const Profile& p, double bytes);
double unpinned_worker_batch_copy_s(const Profile& p, double bytes);
// unpinned_receive_s split by where the main thread pays it: inside next() (the mapping) and when the batch is
// dropped after its step (the release, with the fresh-mapping path; 0 otherwise, the receive holding it all).
// The two sum to unpinned_receive_s. Validation run 19: the release lands after the step, outside next(), so
// the GPU's idle time there is the loop's, not the loader's.
double unpinned_map_s(const Profile& p, double bytes);
double unpinned_release_s(const Profile& p, double bytes);

// CPython's default switch interval (sys.getswitchinterval()): a thread running bytecode drops the GIL for a
// waiting one within this time (and the training loop drops it sooner, at every op it calls).
constexpr double kGilSwitchIntervalS = 0.005;

// How many slices the loop's `host_s` of Python holds the GIL in: one when no other thread wants it (no pin
// thread), else one per switch interval begun. The pin thread's receive does not wait for a slice's end (the loop
// drops the GIL at every op: the simulator suspends the loop's Python for it, validation run 38, finding 6); the
// slices pace the memory map's chunks and hand the lock over where the loop waits for the map with it held.
int gil_slices(double host_s, bool shared);

// How often a training loop that needs the main process's memory map (training.host_needs_memory_map: page
// faults, heap growth) needs it: while the pin thread maps, first-touches or unmaps a worker's batch the loop
// stalls at its next need. Validation run 17 (docs/validation-runs.md): a ResNet-50 loop beside a thread doing that
// work on each batch took 6-12 ms a step more than alone; beside the same copy from private, already-touched
// memory, 0-2 ms more; the pin-bound GEMM loops' host time in situ stayed 1.2-2.0 ms (0.8 alone) beside a pin
// thread busy all the time. Run 18 counted the needs: the ResNet-50 loop's thread took 50-61 minor page faults a
// step beside a thread doing the pin thread's work on workers' batches (1 alone, 1 beside the same work on private
// memory), one every 0.43-0.60 ms of its host time; this default is that. A scenario gives its own count with
// training.memory_map_needs_per_step.
constexpr double kMemoryMapCheckIntervalS = 0.0005;

// The loop's host time between two needs of the memory map: host_s_per_step over the scenario's needs per step
// where it gives them (training.memory_map_needs_per_step > 0), else kMemoryMapCheckIntervalS.
double memory_map_interval_s(double host_s_per_step, double needs_per_step);

// What the loop loses to the pin thread's `hold_s` of work on one batch's mapping, all of it inside the loop's host
// work: the whole of it when each need waits until that work ends (wait_s = 0); with training.memory_map_wait_s
// the loop alternates a piece of interval_s with a wait of wait_s while the work lasts, so it loses
// hold_s x wait_s / (interval_s + wait_s).
double memory_map_stall_s(double hold_s, double interval_s, double wait_s);

// How many pieces one GIL slice of `slice_s` runs in, each starting once the memory map is free: one when no
// pin thread works on mappings beside the loop, else one per `interval_s` begun (at most 1000).
int memory_map_chunks(double slice_s, bool shared, double interval_s = kMemoryMapCheckIntervalS);

// The H2D copy of one batch of `bytes`: from pinned memory; unpinned, from a worker's fresh mapping
// (unpinned_worker_batch_copy_s) or, loaded inline (num_workers=0), from the main process's resident memory.
double h2d_batch_copy_s(const Profile& p, double bytes, bool pinned, bool from_workers);

// The rate one synchronous reader waits for the device at with `readers` reading at once: the one-reader
// stream rate times its share at that count (storage.stream_read_vs_readers, linear between the measured
// counts, flat beyond; none: the stream rate whatever the count).
double stream_read_rate(double stream_bytes_per_s, const std::vector<ReaderSharePoint>& vs_readers, double readers);

// y at x on points sorted by x (members X and Y of P): linear between points, flat beyond the ends;
// `fallback` without points. The one lookup behind every measured curve (core speed, GPU duty).
template <class P>
double piecewise_linear(const std::vector<P>& points, double x, double P::*X, double P::*Y, double fallback) {
  if (points.empty()) return fallback;
  if (x <= points.front().*X) return points.front().*Y;
  if (x >= points.back().*X) return points.back().*Y;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (x <= points[i].*X) {
      const P& a = points[i - 1];
      const P& b = points[i];
      return a.*Y + (x - a.*X) / (b.*X - a.*X) * (b.*Y - a.*Y);
    }
  }
  return points.back().*Y;
}

// Per-core speed (relative to one busy core) when `busy` cores are busy: linear interpolation
// of the measured curve, flat beyond its ends.
double relative_core_speed(const std::vector<SpeedPoint>& curve, double busy);

// The GPU's recent busy share, an exponentially weighted average with time constant time_constant_s
// (training.gpu_duty_time_constant_s; kGpuDutyTimeConstantS by default), after dt_s more of busy
// (kernels running) or idle time: what sets a step's time on a curve training.step_s_vs_gpu_duty. A
// constant well above a step gives a periodic loop its long-run duty and sets only how fast the share
// follows a change; a short one (the H200's tens of ms) lets it climb within a burst of steps.
constexpr double kGpuDutyTimeConstantS = 1.0;
double gpu_busy_share_after(double share, double dt_s, bool busy, double time_constant_s = kGpuDutyTimeConstantS);

// The GPU clock's humps at a high duty (validation-runs.md run 45, finding 2: the H200 at duty 0.80-0.85 runs a
// step up to 1.2x its low for about 0.26 s of every 1.04 s, and not at 0.5 or below): the factor on a step that
// starts at t_s, 1 + amplitude x (w - high_share), w = 1 for the first high_share of each period_s and 0 after.
// Its mean over a period is 1, so the duty curve's mean holds; the high level is 1 + amplitude (1 - high_share),
// the low one 1 - amplitude high_share. 1 with no amplitude, period or high share.
double clock_hump_factor(double t_s, double amplitude, double period_s, double high_share);

// The busy share (the average above, with this time constant) each step of a steady periodic loop starts
// with: busy step_s, idle step_s (1 - duty) / duty; with a = exp(-step/tau), b = exp(-idle/tau),
// b (1 - a) / (1 - a b). The duty itself as tau grows; 0 and 1 at the ends. A curve measured at steady
// duties is read at these shares when the constant is short (validation run 14, finding 11).
double share_at_step_start(double duty, double step_s, double time_constant_s);

// calibrate's steady-duty shape (relative to a rested step) re-read at the share a step starts with under
// time_constant_s, a step of iso_s rested: each point's duty moves to share_at_step_start of it.
std::vector<RelativeDutyPoint> shape_at_step_start(const std::vector<RelativeDutyPoint>& shape, double iso_s,
                                                   double time_constant_s);

// The GPU's duty time constant that makes a burst of back-to-back steps after a rest climb as measured:
// before the step at position k the GPU was busy for the steps ahead of it (iso_s x their relative times),
// share 1 - exp(-busy/tau), and its relative time is the shape (re-read under tau) there. The tau of a log
// grid from 5 ms to 2 s with the least squared error; 0 without a shape of two points or a ramp of three.
double fit_gpu_duty_time_constant(const std::vector<RelativeDutyPoint>& shape, const std::vector<double>& ramp_relative,
                                  double iso_s);

// The curve's highest per-core speed, at least 1: the fastest one thread may run (a simulated
// host's per-core speed, which bounds each of its actions).
double peak_relative_speed(const std::vector<SpeedPoint>& curve);

// Total CPU capacity (in single-idle-core units) when `runnable` threads compete for `cores`:
// min(runnable, cores) x relative speed, less the oversubscription cost when runnable > cores.
double cpu_capacity_cores(const CpuProfile& cpu, int cores, int runnable);

// One step of a core's wandering deviation x (stationary Ornstein-Uhlenbeck, spread sigma_ln,
// correlation time tau_s) over dt_s, given a standard normal draw z; x > 0 is a slow spell (see
// wander_time_factor; the process is symmetric, the sign only names the direction):
//   x' = rho x + sqrt(1 - rho^2) sigma_ln z,  rho = exp(-dt_s / tau_s)  (rho = 0 when tau_s <= 0).
double wander_log_speed(double x, double dt_s, double tau_s, double sigma_ln, double z);

// The time factor of work done at log speed deviation x on a core whose speed spreads with
// coefficient of variation cv: 1 / speed, speed = exp(-x - sigma_ln^2 / 2), sigma_ln^2 =
// ln(1 + cv^2). The speed's mean over time is 1, so a worker running free does as much work
// per second as with a steady core (and a batch takes its measured mean time when spells last
// longer than a batch, as measured: workers make more batches while their core is fast).
double wander_time_factor(double x, double cv);
double lognormal_sigma(double cv);

// A wander of measured shape: its state z (standard normal, the Ornstein-Uhlenbeck above with sigma_ln 1) sets the
// log speed d = sigma_fast z above the median (z > 0) and sigma_slow z below it, a split normal whose p90 - median
// is 1.2816 sigma_fast and median - p10 1.2816 sigma_slow. The time factor 1 / speed with speed = exp(d) / E[exp(d)],
// E[exp(d)] = exp(sigma_fast^2 / 2) Phi(sigma_fast) + exp(sigma_slow^2 / 2) Phi(-sigma_slow), so the speed's mean
// over time is 1 as in wander_time_factor, which this is (x = -sigma z) when the two sigmas are equal.
double split_wander_time_factor(double z, double sigma_fast, double sigma_slow);
// Its two parts, for a caller that draws many factors of one shape: E[exp(d)] once, then each factor from it.
double split_wander_mean_exp(double sigma_fast, double sigma_slow);
double split_wander_time_factor(double z, double sigma_fast, double sigma_slow, double mean_exp);
// The standard normal's 0.9 quantile: a side (p90 - median) over it is the split normal's sigma on that side.
inline constexpr double kNormalP90 = 1.2815515655446004;

// nccl-tests bus-bandwidth factors (doc/PERFORMANCE.md).
double all_reduce_bus_factor(int ranks);
double all_gather_bus_factor(int ranks);

// Time of one collective of `bytes` (the whole buffer) over `ranks` ranks.
double collective_time_s(const CollectiveModel& model, double bytes, double bus_factor);
// Without a measured collective: 20 us and 100 GB/s of bus bandwidth (docs/model.md, DDP).
inline constexpr CollectiveModel kPlaceholderCollective{true, 2.0e-5, 1.0e11};

// DDP bucket sizes in bytes for `gradient_bytes` of gradients, in the order they are reduced:
// the first bucket `first_bucket_bytes`, then `cap_bytes` each, the last one the remainder.
// (Parameters are not modelled individually: buckets split the gradient bytes exactly.)
std::vector<double> ddp_bucket_bytes(double gradient_bytes, double first_bucket_bytes, double cap_bytes);

// PyTorch's rule (reducer.cpp, compute_bucket_assignment_by_size) over parameters' gradient
// sizes in backward order: each gradient joins the open bucket, which closes once its size
// reaches the limit (first_bucket_bytes, then cap_bytes); a parameter is never split, so a
// large one makes its bucket exceed the cap.
std::vector<double> ddp_bucket_bytes_by_parameter(const std::vector<double>& parameter_bytes, double first_bucket_bytes,
                                                  double cap_bytes);

}  // namespace pipeplan
