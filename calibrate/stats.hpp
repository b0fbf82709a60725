// Small pure functions behind every calibration number: robust summaries (median,
// percentile), the latency + bandwidth fit, nccl-tests' bus-bandwidth factors and the
// oversubscription formula. Each is tested against hand calculations (tests/calibrate).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace pipeplan::calibrate {

// Median of the values (mean of the two middle ones for an even count). REQUIRES non-empty.
double median(std::vector<double> values);

// Percentile p in [0, 100] with linear interpolation between closest ranks (numpy's default,
// "linear"): rank = p/100 * (n-1). REQUIRES non-empty.
double percentile(std::vector<double> values, double p);

double mean(const std::vector<double>& values);

// One read's span (seconds on one clock): a file's open to its last read().
struct ReadSpan {
  double start_s = 0.0, end_s = 0.0;
};
// The count of reads in flight during a read, itself included, averaged over every read and weighted by its length:
// for each span 1 + the other spans' overlap with it / its length. N readers that always read together give N;
// one reader gives 1. 0 without a span of positive length. (Calibrate's concurrent cold reads: are the readers in
// step? Forty-sixth session.)
double mean_readers_in_flight(const std::vector<ReadSpan>& spans);

// A reader's work after one file drawn uniform around its mean: mean x (1 + jitter x (2 u - 1)) for u in [0, 1), so
// jitter 1 spreads it over [0, 2 x mean) (cv 1 / sqrt(3)); jitter 0 is the mean. (Calibrate's jittered pause sweep:
// do readers whose work differs file by file stay in step? Forty-seventh session.)
double jittered_work_s(double mean_s, double jitter, double u01);

// y = intercept + slope * x, fitted by least squares on RELATIVE residuals
// ((fit - y) / y), so a 4 KiB copy weighs as much as a 1 GiB one. A negative intercept
// (noise at small sizes) is not physical: the fit is then redone through the origin.
// rel_rmse = sqrt(mean(((fit - y) / y)^2)).
struct AffineFit {
  double intercept = 0.0;
  double slope = 0.0;
  double rel_rmse = 0.0;
};
// Empty when fewer than two distinct x, any y <= 0, or a non-positive slope comes out.
std::optional<AffineFit> fit_affine_relative(const std::vector<double>& x, const std::vector<double>& y);

// time_s = latency_s + bytes / bytes_per_s: the form every copy and collective model uses.
struct LatencyBandwidth {
  double latency_s = 0.0;
  double bytes_per_s = 0.0;
  double rel_rmse = 0.0;
};
std::optional<LatencyBandwidth> fit_latency_bandwidth(const std::vector<double>& bytes,
                                                      const std::vector<double>& time_s);

// nccl-tests' busbw = algbw * factor (doc/PERFORMANCE.md): all-reduce 2(n-1)/n,
// all-gather and reduce-scatter (n-1)/n. 0 for a single rank.
enum class Collective { all_reduce, all_gather, reduce_scatter };
double bus_factor(Collective c, int ranks);
std::string_view collective_name(Collective c);  // "all_reduce", ...

// The simulator divides the capacity of `cores` busy cores by
//   1 + cost * (threads - cores) / cores
// when `threads` > `cores` runnable threads share them (models/cost_models.cpp). Given the
// measured aggregate rates at `cores` and at `threads` threads, this solves for cost:
//   cost = (rate_at_cores / rate_at_threads - 1) * cores / (threads - cores),
// clamped at 0 (oversubscription never helps in the model). REQUIRES threads > cores > 0,
// rates > 0.
double oversubscription_cost(double aggregate_rate_at_cores, double aggregate_rate_at_threads,
                             int cores, int threads);

// Spread of the rates of threads that ran the same work at once: population standard deviation
// over the mean (0 for fewer than two rates).
double spread_cv(const std::vector<double>& rates);

// Do the same CPUs come out slow in every round? rates_by_round[r][i] is CPU i's rate in round r (the
// same CPUs in the same order each round). The Pearson correlation across CPUs between each pair of
// successive rounds, averaged: near 1 when the CPUs keep their speeds (fixed fast and slow vCPUs),
// near 0 when which CPU is slow changes from round to round (the machine's wander in time). Empty
// with fewer than two rounds, fewer than three CPUs, rounds of unequal length, or a round whose
// rates are all equal (no correlation defined).
std::optional<double> round_to_round_correlation(const std::vector<std::vector<double>>& rates_by_round);

// A core's wandering speed from threads that each timed consecutive chunks of equal work
// (durations in seconds, one vector per thread): y = ln(rate) - the mean of ln(rate) over all
// chunks of all threads (so threads persistently apart count as spread too);
//   cv = sqrt(exp(var y) - 1)       (var y pooled: the lognormal's sigma^2)
//   rho = sum y_t y_{t+L} / sum y_t^2 within each thread, pooled, L = lag in chunks;
//   correlation_s = -L x mean chunk duration / ln rho, clamped to [0.01, 3600] s (rho <= 0:
//   0.01 s, nothing carries over; rho >= 1: 3600 s).
// Becomes cpu.core_speed_cv and cpu.core_speed_correlation_s (the simulator's Ornstein-Uhlenbeck
// model of it, models/cost_models.hpp). Empty with fewer than 2L + 2 chunks in all.
struct CoreWander {
  double cv = 0.0;
  double correlation_s = 0.0;
  double lag_s = 0.0;
  double lag_autocorrelation = 0.0;
};
// gap_s: time between a thread's chunks that is not in their durations (a pause after each chunk), counted in the
// time axis (lag_s, correlation_s) and nowhere else.
std::optional<CoreWander> fit_core_wander(const std::vector<std::vector<double>>& chunk_durations_s, int lag_chunks,
                                          double gap_s = 0.0);

// An Ornstein-Uhlenbeck process of unit variance and correlation time tau, averaged over windows of length T
// (x = T / tau): the variance of one window's mean, 2 (x - 1 + e^-x) / x^2 (1 as x -> 0: the window sees one
// level; 2 / x for long windows), and the covariance of two adjacent windows' means, ((1 - e^-x) / x)^2.
double ou_window_mean_variance(double x);
double ou_adjacent_window_covariance(double x);

// The slower part of a core's wander (validation run 39, finding 6: in the cases the workers' mean batch times
// correlate 0.30 between the halves of a window, the one-part model's 0.06): the wander modelled as two independent
// Ornstein-Uhlenbeck parts in log rate, the fast one as fit_core_wander reads it (its correlation time `fast_tau_s`)
// and a slow one. Each thread's log rate y = -ln(duration) is averaged over consecutive windows of `window_s`
// (duration-weighted; only whole windows); pooled over threads, around the mean of all chunks,
//   V = mean of (ybar_k - m)^2,  C = mean of (ybar_k - m)(ybar_k+1 - m)  (adjacent windows of one thread),
//   S = the chunks' own variance of y = sigma_f^2 + sigma_s^2.
// Then V = sigma_f^2 g(T/tau_f) + sigma_s^2 g(T/tau_s) and C = the same with the adjacent covariance c: with
// sigma_f^2 = S - sigma_s^2, r = (C - sigma_f^2 c_f) / (V - sigma_f^2 g_f) = c(x) / g(x) gives x = T / tau_s
// (r >= 1: tau_s = 3600 s, a fixed offset per thread) and sigma_s^2 = (V - sigma_f^2 g_f) / g(x), iterated to a
// fixed point. No slow part (cv 0) when what the windows keep is no more than the fast part leaves or adjacent
// windows do not correlate beyond it. Also, for comparison with the cases (worker_offsets_diagnostic.py): the
// correlation across threads of adjacent windows' means, averaged over window pairs (needs 3 threads).
// Empty with fewer than two whole windows in every thread.
struct SlowWander {
  double cv = 0.0;             // sqrt(exp(sigma_s^2) - 1)
  double correlation_s = 0.0;  // tau_s; 0 with no slow part
  double window_s = 0.0;
  int windows = 0;             // whole windows over all threads
  double window_variance = 0.0;       // V
  double adjacent_covariance = 0.0;   // C
  std::optional<double> across_threads_adjacent_correlation;
};
// gap_s as in fit_core_wander: each chunk spans its duration plus the gap in time (windows, their time constant).
std::optional<SlowWander> fit_slow_wander(const std::vector<std::vector<double>>& chunk_durations_s, double window_s,
                                          double fast_tau_s, double gap_s = 0.0);

// The chunk durations less what all threads share at the same time: the simulator's wander is each
// worker's own (independent), and a machine-wide slow spell slows every worker alike, which makes no
// batch overtake another. Threads start together; each chunk's log rate y = -ln(duration) is set
// against the mean, over the other threads, of their log rate over the same stretch of time (each
// thread's chunks weighted by their overlap), scaled by sqrt(m / (m + 1)) for m other threads (y less
// the mean of m independent others varies (1 + 1/m) times as much), and turned back into a duration
// around the overall mean rate. Non-positive durations are dropped.
// Each thread's own wander, fast and slow: the chunks less what the threads share (without_common_mode, with two or
// more threads), fit_core_wander on them and fit_slow_wander in `window_s` windows with the fast part's time.
// Empty where the fast fit is; `slow` empty where fit_slow_wander is.
struct OwnWander {
  CoreWander fast;
  std::optional<SlowWander> slow;
};
std::optional<OwnWander> fit_own_wander(const std::vector<std::vector<double>>& chunk_durations_s, int lag_chunks,
                                        double window_s, double gap_s = 0.0);

// gap_s as in fit_core_wander: each thread's chunks are placed in time with the gap after each.
std::vector<std::vector<double>> without_common_mode(const std::vector<std::vector<double>>& chunk_durations_s,
                                                     double gap_s = 0.0);

// Sizes from `first` to `last` bytes, multiplying by `factor` (last included if hit).
std::vector<double> geometric_sizes(double first, double last, double factor);

}  // namespace pipeplan::calibrate
