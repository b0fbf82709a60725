#include "calibrate/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>

namespace pipeplan::calibrate {

double median(std::vector<double> values) {
  const std::size_t n = values.size();
  std::sort(values.begin(), values.end());
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double t = rank - static_cast<double>(lo);
  return values[lo] + t * (values[hi] - values[lo]);
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

namespace {

double rel_rmse_of(const std::vector<double>& x, const std::vector<double>& y, double a, double b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = (a + b * x[i] - y[i]) / y[i];
    sum += r * r;
  }
  return std::sqrt(sum / static_cast<double>(x.size()));
}

}  // namespace

std::optional<AffineFit> fit_affine_relative(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  if (std::any_of(y.begin(), y.end(), [](double v) { return !(v > 0.0) || !std::isfinite(v); })) return std::nullopt;
  if (std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); })) return std::nullopt;

  // Divide each equation a + b x_i = y_i by y_i: ordinary least squares on relative error.
  const auto n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd rhs = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    A(i, 0) = 1.0 / y[i];
    A(i, 1) = x[i] / y[i];
  }
  const Eigen::Vector2d ab = A.colPivHouseholderQr().solve(rhs);
  double a = ab(0);
  double b = ab(1);
  if (a < 0.0) {  // refit through the origin: b = sum(x/y) / sum((x/y)^2)
    const Eigen::VectorXd col = A.col(1);
    a = 0.0;
    b = col.sum() / col.squaredNorm();
  }
  if (!(b > 0.0) || !std::isfinite(b)) return std::nullopt;
  return AffineFit{a, b, rel_rmse_of(x, y, a, b)};
}

std::optional<LatencyBandwidth> fit_latency_bandwidth(const std::vector<double>& bytes,
                                                      const std::vector<double>& time_s) {
  const auto fit = fit_affine_relative(bytes, time_s);
  if (!fit) return std::nullopt;
  return LatencyBandwidth{fit->intercept, 1.0 / fit->slope, fit->rel_rmse};
}

double bus_factor(Collective c, int ranks) {
  if (ranks <= 1) return 0.0;
  const double n = ranks;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1.0) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter: return (n - 1.0) / n;
  }
  return 0.0;
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
  }
  return "?";
}

double spread_cv(const std::vector<double>& rates) {
  if (rates.size() < 2) return 0.0;
  const double m = mean(rates);
  if (m <= 0.0) return 0.0;
  double ss = 0.0;
  for (double r : rates) ss += (r - m) * (r - m);
  return std::sqrt(ss / static_cast<double>(rates.size())) / m;
}

namespace {

// Pearson's r of two equal-length series; empty where either has no spread.
std::optional<double> pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = mean(a), mb = mean(b);
  double sab = 0.0, saa = 0.0, sbb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  if (saa <= 0.0 || sbb <= 0.0) return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

}  // namespace

std::optional<double> round_to_round_correlation(const std::vector<std::vector<double>>& rates_by_round) {
  if (rates_by_round.size() < 2) return std::nullopt;
  const std::size_t n = rates_by_round.front().size();
  if (n < 3) return std::nullopt;
  double sum = 0.0;
  for (std::size_t r = 1; r < rates_by_round.size(); ++r) {
    const std::vector<double>& a = rates_by_round[r - 1];
    const std::vector<double>& b = rates_by_round[r];
    if (a.size() != n || b.size() != n) return std::nullopt;
    const auto r_ab = pearson(a, b);
    if (!r_ab) return std::nullopt;
    sum += *r_ab;
  }
  return sum / static_cast<double>(rates_by_round.size() - 1);
}

std::optional<CoreWander> fit_core_wander(const std::vector<std::vector<double>>& chunk_durations_s, int lag_chunks,
                                          double gap_s) {
  if (lag_chunks < 1) return std::nullopt;
  std::vector<std::vector<double>> y;
  double sum = 0.0, seconds = 0.0;
  std::size_t n = 0;
  for (const auto& thread : chunk_durations_s) {
    std::vector<double> logs;
    for (double d : thread) {
      if (!(d > 0.0)) continue;
      logs.push_back(-std::log(d));  // log rate, up to the constant log(work)
      sum += logs.back();
      seconds += d;
      ++n;
    }
    y.push_back(std::move(logs));
  }
  if (n < static_cast<std::size_t>(2 * lag_chunks + 2)) return std::nullopt;
  const double m = sum / static_cast<double>(n);
  double ss = 0.0, lagged = 0.0, lag_base = 0.0;
  for (auto& thread : y) {
    for (double& v : thread) {
      v -= m;
      ss += v * v;
    }
    for (std::size_t t = 0; t + static_cast<std::size_t>(lag_chunks) < thread.size(); ++t) {
      lagged += thread[t] * thread[t + static_cast<std::size_t>(lag_chunks)];
      lag_base += thread[t] * thread[t];
    }
  }
  CoreWander w;
  const double var = ss / static_cast<double>(n);
  w.cv = std::sqrt(std::expm1(var));
  w.lag_s = lag_chunks * (seconds / static_cast<double>(n) + gap_s);
  w.lag_autocorrelation = lag_base > 0.0 ? lagged / lag_base : 0.0;
  if (w.lag_autocorrelation <= 0.0)
    w.correlation_s = 0.01;
  else if (w.lag_autocorrelation >= 1.0)
    w.correlation_s = 3600.0;
  else
    w.correlation_s = std::clamp(-w.lag_s / std::log(w.lag_autocorrelation), 0.01, 3600.0);
  return w;
}

std::vector<std::vector<double>> without_common_mode(const std::vector<std::vector<double>>& chunk_durations_s,
                                                     double gap_s) {
  // each thread's chunks as [start, end) intervals from the common start, with their log rate
  struct Chunk {
    double start_s, end_s, y;
  };
  std::vector<std::vector<Chunk>> threads(chunk_durations_s.size());
  double y_sum = 0.0;
  std::size_t n = 0;
  for (std::size_t t = 0; t < chunk_durations_s.size(); ++t) {
    double at_s = 0.0;
    for (double d : chunk_durations_s[t]) {
      if (!(d > 0.0)) continue;
      threads[t].push_back({at_s, at_s + d, -std::log(d)});
      y_sum += threads[t].back().y;
      ++n;
      at_s += d + gap_s;
    }
  }
  std::vector<std::vector<double>> out(threads.size());
  if (n == 0) return out;
  const double y_mean = y_sum / static_cast<double>(n);
  for (std::size_t t = 0; t < threads.size(); ++t) {
    for (const Chunk& c : threads[t]) {
      // the other threads' log rate over the same stretch of time, each weighted by its overlap
      double others_sum = 0.0;
      int others = 0;
      for (std::size_t u = 0; u < threads.size(); ++u) {
        if (u == t) continue;
        double wy = 0.0, w = 0.0;
        for (const Chunk& o : threads[u]) {
          if (o.start_s >= c.end_s) break;
          const double overlap_s = std::min(o.end_s, c.end_s) - std::max(o.start_s, c.start_s);
          if (overlap_s > 0.0) {
            wy += overlap_s * o.y;
            w += overlap_s;
          }
        }
        if (w > 0.0) {
          others_sum += wy / w;
          ++others;
        }
      }
      // y less the mean of m others has variance sigma^2 (1 + 1/m) for independent threads
      const double own = others > 0 ? (c.y - others_sum / others) * std::sqrt(others / (others + 1.0))
                                    : c.y - y_mean;
      out[t].push_back(std::exp(-(y_mean + own)));
    }
  }
  return out;
}

double ou_window_mean_variance(double x) {
  if (x < 1e-6) return 1.0 - x / 3.0;  // the series, where the formula loses its digits
  return 2.0 * (x - 1.0 + std::exp(-x)) / (x * x);
}

double ou_adjacent_window_covariance(double x) {
  if (x < 1e-6) return 1.0 - x;
  const double a = -std::expm1(-x) / x;
  return a * a;
}

namespace {

// x = T / tau with c(x) / g(x) = r, for 0 < r < 1 (the ratio falls from 1 at x -> 0 to 0), by bisection in log x.
double window_ratio_to_x(double r) {
  double lo = std::log(1e-6), hi = std::log(1e4);
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi), x = std::exp(mid);
    if (ou_adjacent_window_covariance(x) / ou_window_mean_variance(x) > r)
      lo = mid;
    else
      hi = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

}  // namespace

std::optional<SlowWander> fit_slow_wander(const std::vector<std::vector<double>>& chunk_durations_s, double window_s,
                                          double fast_tau_s, double gap_s) {
  if (!(window_s > 0.0)) return std::nullopt;
  // each thread's duration-weighted mean log rate in each whole window, and the chunks' log rates
  std::vector<std::vector<double>> window_means;
  std::vector<double> ys;
  for (const auto& thread : chunk_durations_s) {
    double total_s = 0.0;
    for (double d : thread)
      if (d > 0.0) total_s += d + gap_s;
    const auto whole = static_cast<std::size_t>(std::floor(total_s / window_s));
    std::vector<double> sum(whole, 0.0), weight(whole, 0.0);
    double at_s = 0.0;
    for (double d : thread) {
      if (!(d > 0.0)) continue;
      const auto k = static_cast<std::size_t>(std::floor((at_s + 0.5 * d) / window_s));  // by the chunk's middle
      at_s += d + gap_s;
      if (k >= whole) continue;
      sum[k] += -std::log(d) * d;
      weight[k] += d;
      ys.push_back(-std::log(d));
    }
    std::vector<double> means;
    for (std::size_t k = 0; k < whole && weight[k] > 0.0; ++k) means.push_back(sum[k] / weight[k]);
    window_means.push_back(std::move(means));
  }
  std::size_t windows = 0, pairs = 0;
  for (const auto& m : window_means) {
    windows += m.size();
    if (m.size() >= 2) pairs += m.size() - 1;
  }
  if (pairs == 0 || ys.size() < 4) return std::nullopt;
  const double m = mean(ys);
  double s = 0.0;
  for (double y : ys) s += (y - m) * (y - m);
  s /= static_cast<double>(ys.size());
  double v = 0.0, c = 0.0;
  for (const auto& wm : window_means) {
    for (std::size_t k = 0; k < wm.size(); ++k) {
      v += (wm[k] - m) * (wm[k] - m);
      if (k + 1 < wm.size()) c += (wm[k] - m) * (wm[k + 1] - m);
    }
  }
  v /= static_cast<double>(windows);
  c /= static_cast<double>(pairs);

  SlowWander out;
  out.window_s = window_s;
  out.windows = static_cast<int>(windows);
  out.window_variance = v;
  out.adjacent_covariance = c;
  const double x_fast = fast_tau_s > 0.0 ? window_s / fast_tau_s : 1e4;
  const double g_fast = ou_window_mean_variance(x_fast), c_fast = ou_adjacent_window_covariance(x_fast);
  double var_slow = 0.0, x_slow = 0.0;
  for (int iter = 0; iter < 100; ++iter) {
    const double var_fast = std::max(0.0, s - var_slow);
    const double v_left = v - var_fast * g_fast, c_left = c - var_fast * c_fast;
    if (v_left <= 0.0 || c_left <= 0.0) {
      var_slow = 0.0;
      break;
    }
    const double r = c_left / v_left;
    x_slow = r >= 1.0 ? window_s / 3600.0 : window_ratio_to_x(r);
    const double next = std::min(s, v_left / ou_window_mean_variance(x_slow));
    const bool settled = std::abs(next - var_slow) <= 1e-12 + 1e-9 * next;
    var_slow = next;
    if (settled) break;
  }
  if (var_slow > 0.0) {
    out.cv = std::sqrt(std::expm1(var_slow));
    out.correlation_s = std::min(3600.0, window_s / x_slow);
  }
  // the cross-sectional view: which threads are slow in one window and in the next
  double r_sum = 0.0;
  int r_n = 0;
  for (std::size_t k = 0;; ++k) {
    std::vector<double> a, b;
    for (const auto& wm : window_means)
      if (k + 1 < wm.size()) {
        a.push_back(wm[k]);
        b.push_back(wm[k + 1]);
      }
    if (a.size() < 3) break;
    if (const auto r_ab = pearson(a, b)) {
      r_sum += *r_ab;
      ++r_n;
    }
  }
  if (r_n > 0) out.across_threads_adjacent_correlation = r_sum / r_n;
  return out;
}

std::optional<OwnWander> fit_own_wander(const std::vector<std::vector<double>>& chunk_durations_s, int lag_chunks,
                                        double window_s, double gap_s) {
  const auto own = chunk_durations_s.size() > 1 ? without_common_mode(chunk_durations_s, gap_s) : chunk_durations_s;
  const auto fast = fit_core_wander(own, lag_chunks, gap_s);
  if (!fast) return std::nullopt;
  return OwnWander{*fast, fit_slow_wander(own, window_s, fast->correlation_s, gap_s)};
}

double oversubscription_cost(double aggregate_rate_at_cores, double aggregate_rate_at_threads, int cores,
                             int threads) {
  const double extra_per_core = static_cast<double>(threads - cores) / cores;
  const double cost = (aggregate_rate_at_cores / aggregate_rate_at_threads - 1.0) / extra_per_core;
  return std::max(0.0, cost);
}

std::vector<double> geometric_sizes(double first, double last, double factor) {
  std::vector<double> sizes;
  for (double s = first; s <= last * (1.0 + 1e-9); s *= factor) sizes.push_back(s);
  return sizes;
}

double mean_readers_in_flight(const std::vector<ReadSpan>& spans) {
  double weighted_s = 0.0, total_s = 0.0;
  for (const ReadSpan& a : spans) {
    const double len_s = a.end_s - a.start_s;
    if (len_s <= 0.0) continue;
    double overlap_s = 0.0;
    for (const ReadSpan& b : spans)
      if (&a != &b) overlap_s += std::max(0.0, std::min(a.end_s, b.end_s) - std::max(a.start_s, b.start_s));
    weighted_s += len_s + overlap_s;  // len x (1 + overlap / len)
    total_s += len_s;
  }
  return total_s > 0.0 ? weighted_s / total_s : 0.0;
}

double jittered_work_s(double mean_s, double jitter, double u01) {
  return std::max(0.0, mean_s * (1.0 + jitter * (2.0 * u01 - 1.0)));
}

}  // namespace pipeplan::calibrate
