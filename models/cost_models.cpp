#include "models/cost_models.hpp"

#include <algorithm>
#include <cmath>


namespace pipeplan {

bool unpinned_copy_from_fresh_mapping(const Profile& p) {
  return p.copy.h2d_pageable_fresh_mapping.has_value() && p.ipc.release_s_per_byte.has_value();
}

double unpinned_receive_s(const Profile& p, double bytes) {
  const double per_byte_s = unpinned_copy_from_fresh_mapping(p) ? *p.ipc.release_s_per_byte : p.ipc.receive_s_per_byte;
  return p.ipc.receive_s_per_batch + bytes * per_byte_s;
}

double unpinned_map_s(const Profile& p, double bytes) {
  return unpinned_copy_from_fresh_mapping(p) ? p.ipc.receive_s_per_batch : unpinned_receive_s(p, bytes);
}

double receive_gil_held_s(const Profile& p) {
  if (p.ipc.receive_gil_s_per_batch) return *p.ipc.receive_gil_s_per_batch;
  return p.ipc.receive_s_per_batch * p.ipc.receive_gil_share;
}

PinReceiveParts pin_receive_parts(const Profile& p, double bytes) {
  const double fixed_s = p.ipc.receive_s_per_batch;
  PinReceiveParts parts;
  parts.held_s = receive_gil_held_s(p);
  parts.free_s = std::max(0.0, fixed_s - parts.held_s);
  const double per_byte_s = std::max(0.0, bytes * p.ipc.receive_s_per_byte - std::max(0.0, parts.held_s - fixed_s));
  if (p.ipc.release_holds_gil && p.ipc.release_s_per_byte)
    parts.release_s = std::min(per_byte_s, bytes * *p.ipc.release_s_per_byte);
  parts.map_s = per_byte_s - parts.release_s;
  return parts;
}

double unpinned_release_s(const Profile& p, double bytes) {
  return unpinned_copy_from_fresh_mapping(p) ? bytes * *p.ipc.release_s_per_byte : 0.0;
}

double unpinned_worker_batch_copy_s(const Profile& p, double bytes) {
  return copy_time_s(unpinned_copy_from_fresh_mapping(p) ? *p.copy.h2d_pageable_fresh_mapping : p.copy.h2d_pageable,
                     bytes);
}

int gil_slices(double host_s, bool shared) {
  if (!shared || host_s <= kGilSwitchIntervalS) return 1;
  return static_cast<int>(std::min(1000.0, std::ceil(host_s / kGilSwitchIntervalS - 1e-9)));  // 30 ms: 6, not 7
}

double memory_map_interval_s(double host_s_per_step, double needs_per_step) {
  return needs_per_step > 0.0 && host_s_per_step > 0.0 ? host_s_per_step / needs_per_step : kMemoryMapCheckIntervalS;
}

double memory_map_stall_s(double hold_s, double interval_s, double wait_s) {
  if (wait_s <= 0.0) return hold_s;
  return hold_s * wait_s / (std::max(interval_s, 0.0) + wait_s);
}

int memory_map_chunks(double slice_s, bool shared, double interval_s) {
  if (!shared || interval_s <= 0.0 || slice_s <= interval_s) return 1;
  return static_cast<int>(std::min(1000.0, std::ceil(slice_s / interval_s - 1e-9)));
}

double h2d_batch_copy_s(const Profile& p, double bytes, bool pinned, bool from_workers) {
  if (pinned) return copy_time_s(p.copy.h2d_pinned, bytes);
  return from_workers ? unpinned_worker_batch_copy_s(p, bytes) : copy_time_s(p.copy.h2d_pageable, bytes);
}

double stream_read_rate(double stream_bytes_per_s, const std::vector<ReaderSharePoint>& vs_readers, double readers) {
  return stream_bytes_per_s *
         piecewise_linear(vs_readers, readers, &ReaderSharePoint::readers, &ReaderSharePoint::relative_rate, 1.0);
}

double copy_time_s(const CopyCurve& curve, double bytes) {
  if (bytes <= 0.0) return 0.0;
  const auto& p = curve.points;
  if (p.empty() || bytes < p.front().bytes) return curve.latency_s + bytes / curve.bytes_per_s;
  if (bytes >= p.back().bytes) return bytes / p.back().bytes_per_s;
  auto upper = std::upper_bound(p.begin(), p.end(), bytes, [](double b, const RatePoint& q) { return b < q.bytes; });
  const RatePoint& hi = *upper;
  const RatePoint& lo = *(upper - 1);
  const double t = (std::log(bytes) - std::log(lo.bytes)) / (std::log(hi.bytes) - std::log(lo.bytes));
  const double rate = lo.bytes_per_s + t * (hi.bytes_per_s - lo.bytes_per_s);
  return bytes / rate;
}

double relative_core_speed(const std::vector<SpeedPoint>& curve, double busy) {
  return piecewise_linear(curve, busy, &SpeedPoint::busy_cores, &SpeedPoint::relative_speed, 1.0);
}

double gpu_busy_share_after(double share, double dt_s, bool busy, double time_constant_s) {
  const double keep = std::exp(-std::max(0.0, dt_s) / time_constant_s);
  return busy ? 1.0 - (1.0 - share) * keep : share * keep;
}

double clock_hump_factor(double t_s, double amplitude, double period_s, double high_share) {
  if (amplitude <= 0.0 || period_s <= 0.0 || high_share <= 0.0 || high_share >= 1.0) return 1.0;
  const double phase = std::fmod(std::max(t_s, 0.0), period_s) / period_s;
  return 1.0 + amplitude * ((phase < high_share ? 1.0 : 0.0) - high_share);
}

double share_at_step_start(double duty, double step_s, double time_constant_s) {
  if (duty >= 1.0) return 1.0;
  if (duty <= 0.0 || step_s <= 0.0 || time_constant_s <= 0.0) return 0.0;
  const double a = std::exp(-step_s / time_constant_s);
  const double b = std::exp(-step_s * (1.0 - duty) / duty / time_constant_s);
  return b * (1.0 - a) / (1.0 - a * b);
}

std::vector<RelativeDutyPoint> shape_at_step_start(const std::vector<RelativeDutyPoint>& shape, double iso_s,
                                                   double time_constant_s) {
  std::vector<RelativeDutyPoint> out;
  for (const auto& q : shape) out.push_back({share_at_step_start(q.duty, iso_s * q.relative_time, time_constant_s), q.relative_time});
  std::sort(out.begin(), out.end(), [](const RelativeDutyPoint& a, const RelativeDutyPoint& b) { return a.duty < b.duty; });
  return out;
}

double fit_gpu_duty_time_constant(const std::vector<RelativeDutyPoint>& shape, const std::vector<double>& ramp_relative,
                                  double iso_s) {
  if (shape.size() < 2 || ramp_relative.size() < 3 || iso_s <= 0.0) return 0.0;
  double best_tau = 0.0, best_err = 0.0;
  for (int k = 0; k <= 120; ++k) {
    const double tau = 0.005 * std::pow(400.0, k / 120.0);
    const auto at_start = shape_at_step_start(shape, iso_s, tau);
    double err = 0.0, busy_s = 0.0;
    for (const double rel : ramp_relative) {
      const double share = 1.0 - std::exp(-busy_s / tau);
      const double predicted = piecewise_linear(at_start, share, &RelativeDutyPoint::duty, &RelativeDutyPoint::relative_time, 1.0);
      err += (predicted - rel) * (predicted - rel);
      busy_s += iso_s * rel;
    }
    if (k == 0 || err < best_err - 1e-15) {
      best_err = err;
      best_tau = tau;
    }
  }
  return best_tau;
}

double peak_relative_speed(const std::vector<SpeedPoint>& curve) {
  double peak = 1.0;
  for (const auto& point : curve) peak = std::max(peak, point.relative_speed);
  return peak;
}

double cpu_capacity_cores(const CpuProfile& cpu, int cores, int runnable) {
  if (runnable <= 0) return 0.0;
  const int busy = std::min(runnable, cores);
  double capacity = busy * relative_core_speed(cpu.speed_vs_busy_cores, busy);
  if (runnable > cores) {
    const double extra_per_core = static_cast<double>(runnable - cores) / cores;
    capacity /= 1.0 + cpu.oversubscription_cost * extra_per_core;
  }
  return capacity;
}

double wander_log_speed(double x, double dt_s, double tau_s, double sigma_ln, double z) {
  const double rho = (tau_s > 0.0 && dt_s >= 0.0) ? std::exp(-dt_s / tau_s) : 0.0;
  return rho * x + std::sqrt(std::max(0.0, 1.0 - rho * rho)) * sigma_ln * z;
}

double lognormal_sigma(double cv) { return std::sqrt(std::log1p(cv * cv)); }

double split_wander_mean_exp(double sigma_fast, double sigma_slow) {
  const auto phi = [](double v) { return 0.5 * std::erfc(-v / std::sqrt(2.0)); };  // standard normal CDF
  return std::exp(0.5 * sigma_fast * sigma_fast) * phi(sigma_fast) +
         std::exp(0.5 * sigma_slow * sigma_slow) * phi(-sigma_slow);
}

double split_wander_time_factor(double z, double sigma_fast, double sigma_slow, double mean_exp) {
  const double d = z > 0.0 ? sigma_fast * z : sigma_slow * z;
  return mean_exp * std::exp(-d);
}

double split_wander_time_factor(double z, double sigma_fast, double sigma_slow) {
  return split_wander_time_factor(z, sigma_fast, sigma_slow, split_wander_mean_exp(sigma_fast, sigma_slow));
}

double wander_time_factor(double x, double cv) {
  const double s = lognormal_sigma(cv);
  return std::exp(x + 0.5 * s * s);
}

double all_reduce_bus_factor(int ranks) { return ranks <= 1 ? 0.0 : 2.0 * (ranks - 1) / ranks; }
double all_gather_bus_factor(int ranks) { return ranks <= 1 ? 0.0 : static_cast<double>(ranks - 1) / ranks; }

double collective_time_s(const CollectiveModel& model, double bytes, double bus_factor) {
  if (bytes <= 0.0 || bus_factor <= 0.0) return 0.0;
  return model.latency_s + bytes * bus_factor / model.bus_bytes_per_s;
}

std::vector<double> ddp_bucket_bytes(double gradient_bytes, double first_bucket_bytes, double cap_bytes) {
  std::vector<double> buckets;
  double left = gradient_bytes;
  double next = first_bucket_bytes;
  while (left > 0.0) {
    const double b = std::min(left, next);
    buckets.push_back(b);
    left -= b;
    next = cap_bytes;
  }
  return buckets;
}

std::vector<double> ddp_bucket_bytes_by_parameter(const std::vector<double>& parameter_bytes, double first_bucket_bytes,
                                                  double cap_bytes) {
  std::vector<double> buckets;
  double open = 0.0;
  double limit = first_bucket_bytes;
  for (double bytes : parameter_bytes) {
    open += bytes;
    if (open >= limit) {
      buckets.push_back(open);
      open = 0.0;
      limit = cap_bytes;
    }
  }
  if (open > 0.0) buckets.push_back(open);
  return buckets;
}

}  // namespace pipeplan
