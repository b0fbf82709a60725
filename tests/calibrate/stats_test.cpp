// The calibration formulas against hand calculations.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "calibrate/duty_pacing.hpp"
#include "calibrate/pin_split.hpp"
#include "calibrate/provenance.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate {
namespace {

TEST(Median, OddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(median({7.0}), 7.0);
}

TEST(Percentile, LinearBetweenClosestRanks) {
  // numpy.percentile([10, 20, 30, 40, 50], p): rank = p/100 * 4.
  const std::vector<double> v = {50, 10, 40, 20, 30};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 10.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 30.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 50.0);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 46.0);  // rank 3.6: 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(percentile(v, 99), 49.6);  // rank 3.96
  EXPECT_DOUBLE_EQ(percentile({5.0}, 99), 5.0);
}

TEST(Mean, Simple) { EXPECT_DOUBLE_EQ(mean({1.0, 2.0, 6.0}), 3.0); }

TEST(MeanReadersInFlight, InStepOutOfStepAndAlone) {
  // one reader, three reads back to back: 1
  EXPECT_DOUBLE_EQ(mean_readers_in_flight({{0, 1}, {1, 2}, {2, 3}}), 1.0);
  // four readers reading [0, 1] and [3, 4] together (in step): 4
  std::vector<ReadSpan> in_step;
  for (int r = 0; r < 4; ++r) in_step.insert(in_step.end(), {{0, 1}, {3, 4}});
  EXPECT_DOUBLE_EQ(mean_readers_in_flight(in_step), 4.0);
  // two readers half a read apart: each 1 s read has the other beside it for 0.5 s -> 1.5
  EXPECT_DOUBLE_EQ(mean_readers_in_flight({{0, 1}, {0.5, 1.5}}), 1.5);
  // weighted by length: a 3 s read alone for 2 s and beside a 1 s read for 1 s: (3 + 1) + (1 + 1) over 4 s = 1.5
  EXPECT_DOUBLE_EQ(mean_readers_in_flight({{0, 3}, {2, 3}}), 1.5);
  EXPECT_DOUBLE_EQ(mean_readers_in_flight({}), 0.0);
  EXPECT_DOUBLE_EQ(mean_readers_in_flight({{1, 1}}), 0.0);
}

// The jittered work: 2 ms with jitter 1 spans [0, 4 ms): u 0 -> 0, u 0.5 -> the mean, u 0.75 -> 3 ms; jitter 0.5
// spans [1, 3 ms); jitter 0 is the mean whatever u.
TEST(CalibrateStats, JitteredWorkIsUniformAroundItsMean) {
  EXPECT_DOUBLE_EQ(jittered_work_s(2e-3, 1.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(jittered_work_s(2e-3, 1.0, 0.5), 2e-3);
  EXPECT_DOUBLE_EQ(jittered_work_s(2e-3, 1.0, 0.75), 3e-3);
  EXPECT_DOUBLE_EQ(jittered_work_s(2e-3, 0.5, 0.0), 1e-3);
  EXPECT_DOUBLE_EQ(jittered_work_s(2e-3, 0.0, 0.9), 2e-3);
}

TEST(FitLatencyBandwidth, RecoversAnExactLine) {
  // 10 us + bytes / 50 GB/s, sizes 4 KiB .. 1 GiB.
  std::vector<double> bytes, t;
  for (double b = 4096; b <= (1 << 30); b *= 4) {
    bytes.push_back(b);
    t.push_back(10e-6 + b / 50e9);
  }
  const auto fit = fit_latency_bandwidth(bytes, t);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->latency_s, 10e-6, 1e-15);
  EXPECT_NEAR(fit->bytes_per_s, 50e9, 50e9 * 1e-9);
  EXPECT_NEAR(fit->rel_rmse, 0.0, 1e-12);
}

TEST(FitAffine, RelativeErrorByHand) {
  // Points (1, 2) and (2, 2): a line through both is y = 2 (slope 0) -> rejected (not a rate).
  EXPECT_FALSE(fit_affine_relative({1.0, 2.0}, {2.0, 2.0}).has_value());
  // (1, 2), (2, 3), (3, 3): weighted rows [1/y, x/y] = [1/2,1/2], [1/3,2/3], [1/3,1]; rhs 1.
  // Normal equations times 36: [17 29; 29 61] [a b]' = [42 78]', det 196:
  // a = (42*61 - 29*78) / 196 = 75/49, b = (17*78 - 29*42) / 196 = 27/49.
  const auto fit = fit_affine_relative({1.0, 2.0, 3.0}, {2.0, 3.0, 3.0});
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->intercept, 75.0 / 49.0, 1e-12);
  EXPECT_NEAR(fit->slope, 27.0 / 49.0, 1e-12);
  // Relative residuals 2/49, -6/49, 3/49: rel_rmse = sqrt(49/3)/49 = 1/(7 sqrt 3).
  EXPECT_NEAR(fit->rel_rmse, 1.0 / (7.0 * std::sqrt(3.0)), 1e-12);
}

TEST(FitAffine, NegativeInterceptRefitsThroughOrigin) {
  // y = -1 + 2x exactly would need a negative latency: refit y = b x with b = sum(x/y)/sum((x/y)^2).
  const std::vector<double> x = {1.0, 2.0, 3.0}, y = {1.0, 3.0, 5.0};
  const auto fit = fit_affine_relative(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->intercept, 0.0);
  const double r1 = 1.0, r2 = 2.0 / 3.0, r3 = 3.0 / 5.0;
  EXPECT_NEAR(fit->slope, (r1 + r2 + r3) / (r1 * r1 + r2 * r2 + r3 * r3), 1e-12);
}

TEST(FitAffine, RejectsDegenerateInput) {
  EXPECT_FALSE(fit_affine_relative({1.0}, {1.0}).has_value());
  EXPECT_FALSE(fit_affine_relative({2.0, 2.0}, {1.0, 3.0}).has_value());
  EXPECT_FALSE(fit_affine_relative({1.0, 2.0}, {0.0, 3.0}).has_value());
}

TEST(BusFactor, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 2.0 * 7 / 8);  // 1.75
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_EQ(collective_name(Collective::reduce_scatter), "reduce_scatter");
}

// rates 90, 100, 110: population sd sqrt(200/3) = 8.165 over mean 100.
TEST(SpreadCv, IsThePopulationCoefficientOfVariation) {
  EXPECT_NEAR(spread_cv({90.0, 100.0, 110.0}), std::sqrt(200.0 / 3.0) / 100.0, 1e-12);
  EXPECT_EQ(spread_cv({5.0}), 0.0);
  EXPECT_EQ(spread_cv({7.0, 7.0, 7.0}), 0.0);
}

// CPUs 1, 2, 3 then 1, 3, 2: deviations (-1, 0, 1) and (-1, 1, 0), sum of products 1 over sqrt(2 x 2) = 0.5.
// The same order scaled (a machine-wide faster round) is 1; reversed is -1; averaged over successive pairs.
TEST(RoundToRoundCorrelation, IsThePearsonCorrelationOfSuccessiveRoundsAveraged) {
  EXPECT_NEAR(*round_to_round_correlation({{1.0, 2.0, 3.0}, {1.0, 3.0, 2.0}}), 0.5, 1e-12);
  EXPECT_NEAR(*round_to_round_correlation({{1.0, 2.0, 3.0}, {2.0, 4.0, 6.0}}), 1.0, 1e-12);
  EXPECT_NEAR(*round_to_round_correlation({{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}, {3.0, 2.0, 1.0}}), 0.0, 1e-12);
  EXPECT_FALSE(round_to_round_correlation({{1.0, 2.0, 3.0}}));                  // one round
  EXPECT_FALSE(round_to_round_correlation({{1.0, 2.0}, {2.0, 1.0}}));          // two CPUs
  EXPECT_FALSE(round_to_round_correlation({{1.0, 2.0, 3.0}, {1.0, 2.0}}));     // unequal rounds
  EXPECT_FALSE(round_to_round_correlation({{5.0, 5.0, 5.0}, {1.0, 2.0, 3.0}})); // no spread
}

// Two threads, one twice as fast all along: log rates 0 and ln 2, deviations -+ln2/2, variance
// (ln 2 / 2)^2 = 0.120113 -> cv sqrt(e^0.120113 - 1) = 0.357246; each thread steady -> the
// autocorrelation is 1 and the correlation time the cap. One thread alternating fast and slow:
// -1 one chunk apart (nothing carries over: the floor), +1 two apart.
TEST(CoreWander, SpreadAndCorrelationByHand) {
  auto w = fit_core_wander({{1.0, 1.0, 1.0, 1.0}, {0.5, 0.5, 0.5, 0.5}}, 1);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(w->cv, 0.357246, 1e-6);
  EXPECT_NEAR(w->lag_autocorrelation, 1.0, 1e-12);
  EXPECT_EQ(w->correlation_s, 3600.0);
  EXPECT_NEAR(w->lag_s, 0.75, 1e-12);
  auto alt = fit_core_wander({{1.0, 0.5, 1.0, 0.5, 1.0, 0.5}}, 1);
  ASSERT_TRUE(alt.has_value());
  EXPECT_NEAR(alt->lag_autocorrelation, -1.0, 1e-12);
  EXPECT_EQ(alt->correlation_s, 0.01);
  EXPECT_NEAR(fit_core_wander({{1.0, 0.5, 1.0, 0.5, 1.0, 0.5}}, 2)->lag_autocorrelation, 1.0, 1e-12);
  EXPECT_FALSE(fit_core_wander({{1.0, 0.5, 1.0}}, 1).has_value());
}

// Every thread slows and speeds up together (a machine-wide spell): the plain fit sees wander, the
// threads' own wander is nil. Durations 1.0 and 1.5 alternating in every thread alike: each bin
// holds the four threads' same chunk, so every chunk is its bin's mean -> all at the overall mean rate.
TEST(CoreWander, CommonModeRemovedLeavesNothingWhenAllThreadsMoveTogether) {
  const std::vector<double> one = {1.0, 1.5, 1.0, 1.5, 1.0, 1.5};
  const std::vector<std::vector<double>> chunks(4, one);
  const auto plain = fit_core_wander(chunks, 1);
  ASSERT_TRUE(plain.has_value());
  EXPECT_GT(plain->cv, 0.15);
  const auto own = fit_core_wander(without_common_mode(chunks), 1);
  ASSERT_TRUE(own.has_value());
  EXPECT_NEAR(own->cv, 0.0, 1e-9);
  // the overall mean rate is kept: geometric mean of 1.0 and 1.5
  EXPECT_NEAR(without_common_mode(chunks)[2][3], std::sqrt(1.5), 1e-9);
}

// Eight threads, each chunk's own lognormal noise (sigma 0.10, independent) on top of a strong common
// drift in time (+-0.3 in log rate, switching every second, as a machine-wide spell would): the plain
// fit reads the drift, the common-mode removed one the threads' own 0.10 (cv sqrt(e^0.01 - 1) =
// 0.1003), within sampling error and the chunks that straddle a switch.
TEST(CoreWander, CommonModeRemovedRecoversEachThreadsOwnSpread) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.10);
  std::vector<std::vector<double>> chunks(8);
  for (auto& thread : chunks) {
    double at_s = 0.0;
    while (at_s < 12.0) {
      // a chunk is 0.2 s of work at rate exp(common(t) + own); the common state switches on whole
      // seconds, so a chunk that straddles a switch runs at both rates, as on a real machine
      const double own = noise(rng);
      double work_left = 0.2, t = at_s;
      while (work_left > 0.0) {
        const double rate = std::exp((static_cast<long>(std::floor(t)) % 2 == 0 ? 0.3 : -0.3) + own);
        const double to_switch_s = std::floor(t) + 1.0 - t;
        if (rate * to_switch_s >= work_left) {
          t += work_left / rate;
          work_left = 0.0;
        } else {
          work_left -= rate * to_switch_s;
          t += to_switch_s;
        }
      }
      thread.push_back(t - at_s);
      at_s = t;
    }
  }
  const auto plain = fit_core_wander(chunks, 1);
  const auto own = fit_core_wander(without_common_mode(chunks), 1);
  ASSERT_TRUE(plain.has_value() && own.has_value());
  EXPECT_GT(plain->cv, 0.25);
  EXPECT_NEAR(own->cv, 0.1003, 0.012);
  EXPECT_LT(std::abs(own->lag_autocorrelation), 0.3);  // the noise carries nothing over; the drift did
  EXPECT_GT(plain->lag_autocorrelation, 0.5);
}

// Log rates (2, 1, -1, -2) x 0.01 (mean 0): sum of y_t y_t+1 = (2 - 1 + 2) x 1e-4 = 3e-4 over
// sum of y_t^2 for t < 3 = 6e-4 -> autocorrelation 0.5 one chunk apart, correlation time
// -lag_s / ln 0.5.
TEST(CoreWander, CorrelationTimeFromTheLagAutocorrelation) {
  // durations whose log rates are -ln d = (2, 1, -1, -2) x 0.01 around a common level
  std::vector<double> d;
  for (double y : {2.0, 1.0, -1.0, -2.0}) d.push_back(std::exp(-0.01 * y));
  auto w = fit_core_wander({d}, 1);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(w->lag_autocorrelation, 0.5, 1e-9);
  EXPECT_NEAR(w->correlation_s, -w->lag_s / std::log(0.5), 1e-9);
}

TEST(OuWindowMeans, ByHandAndInTheLimits) {
  // x = 1: 2 (1 - 1 + e^-1) = 0.735759; (1 - e^-1)^2 = 0.399576
  EXPECT_NEAR(ou_window_mean_variance(1.0), 2.0 * std::exp(-1.0), 1e-12);
  EXPECT_NEAR(ou_adjacent_window_covariance(1.0), std::pow(1.0 - std::exp(-1.0), 2), 1e-12);
  // a window much shorter than tau sees one level: both -> 1
  EXPECT_NEAR(ou_window_mean_variance(1e-8), 1.0, 1e-8);
  EXPECT_NEAR(ou_adjacent_window_covariance(1e-8), 1.0, 1e-7);
  EXPECT_NEAR(ou_window_mean_variance(1e-3), 1.0 - 1e-3 / 3.0, 1e-6);
  // a window much longer: var -> 2 / x (the integral of the autocorrelation, 2 tau, over T), cov -> 1 / x^2
  EXPECT_NEAR(ou_window_mean_variance(1000.0), 2.0 / 1000.0 * (1.0 - 1.0 / 1000.0), 1e-12);
  EXPECT_NEAR(ou_adjacent_window_covariance(1000.0), 1e-6, 1e-12);
}

// Chunks of 0.05 s of work at log rate fast(t) + slow(t) + offset: two independent Ornstein-Uhlenbeck parts (moved on
// exactly at each chunk's start) and a fixed offset per thread.
std::vector<std::vector<double>> two_part_chunks(int threads, double seconds, double sigma_fast, double tau_fast_s,
                                                 double sigma_slow, double tau_slow_s,
                                                 const std::vector<double>& offsets, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    double fast = sigma_fast * z(rng), slow = sigma_slow * z(rng), at_s = 0.0;
    const double offset = offsets.empty() ? 0.0 : offsets[static_cast<std::size_t>(t) % offsets.size()];
    while (at_s < seconds) {
      const double d = 0.05 * std::exp(-(fast + slow + offset));
      out[static_cast<std::size_t>(t)].push_back(d);
      at_s += d;
      const double rf = std::exp(-d / tau_fast_s), rs = std::exp(-d / tau_slow_s);
      fast = rf * fast + std::sqrt(1.0 - rf * rf) * sigma_fast * z(rng);
      slow = rs * slow + std::sqrt(1.0 - rs * rs) * sigma_slow * z(rng);
    }
  }
  return out;
}

// Threads held +-0.1 apart in log rate for the whole log, under white chunk noise: a slow part of
// cv sqrt(e^0.01 - 1) = 0.1003 that does not decay (tau far beyond the 30 s log), and the threads' order kept
// from window to window.
TEST(SlowWander, FixedOffsetsPerThreadAreASlowPartThatDoesNotDecay) {
  const auto chunks = two_part_chunks(8, 30.0, 0.05, 0.01, 0.0, 1.0, {0.1, -0.1}, 11);
  const auto w = fit_slow_wander(chunks, 5.0, 0.01);
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(w->cv, 0.1003, 0.01);
  EXPECT_GT(w->correlation_s, 60.0);
  EXPECT_EQ(w->window_s, 5.0);
  EXPECT_GE(w->windows, 8 * 5);  // 5 or 6 whole windows per thread
  ASSERT_TRUE(w->across_threads_adjacent_correlation.has_value());
  EXPECT_GT(*w->across_threads_adjacent_correlation, 0.9);
}

// A slow part of sigma 0.08 and tau 4 s beneath a fast one of sigma 0.10 and tau 0.5 s (the H200 VM's fast wander):
// 64 threads x 60 s give 768 windows, enough to read the slow part's size within 20% and its time within a
// factor of 1.6.
TEST(SlowWander, RecoversASlowOrnsteinUhlenbeckPartBeneathTheFastOne) {
  const auto chunks = two_part_chunks(64, 60.0, 0.10, 0.5, 0.08, 4.0, {}, 23);
  const auto w = fit_slow_wander(chunks, 5.0, 0.5);
  ASSERT_TRUE(w.has_value());
  const double expected_cv = std::sqrt(std::expm1(0.08 * 0.08));
  EXPECT_NEAR(w->cv, expected_cv, 0.2 * expected_cv);
  EXPECT_GT(w->correlation_s, 4.0 / 1.6);
  EXPECT_LT(w->correlation_s, 4.0 * 1.6);
}

// The fast part alone (sigma 0.10, tau 0.5 s): what the 5 s windows keep is what it leaves, so no slow part
// beyond sampling noise (its cv under a third of the fast part's).
TEST(SlowWander, NoSlowPartWhereTheFastOneExplainsTheWindows) {
  const auto chunks = two_part_chunks(64, 60.0, 0.10, 0.5, 0.0, 1.0, {}, 31);
  const auto w = fit_slow_wander(chunks, 5.0, 0.5);
  ASSERT_TRUE(w.has_value());
  EXPECT_LT(w->cv, 0.033);
}

// A pause after each chunk (the paused log's 2 ms) is time but not work: it counts in the time axis only. Eight
// 1 s chunks fill two 4 s windows; with a 1 s gap after each they span 16 s, four windows. The hand case of
// SpreadAndCorrelationByHand (mean chunk 0.75 s) with a 0.25 s gap puts its lag 1 s apart, and its cv stays.
TEST(SlowWander, APauseAfterEachChunkCountsInTimeOnly) {
  const std::vector<std::vector<double>> chunks = {{1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}};
  EXPECT_EQ(fit_slow_wander(chunks, 4.0, 0.5)->windows, 2);
  EXPECT_EQ(fit_slow_wander(chunks, 4.0, 0.5, 1.0)->windows, 4);
  const auto plain = fit_core_wander({{1.0, 1.0, 1.0, 1.0}, {0.5, 0.5, 0.5, 0.5}}, 1);
  const auto paused = fit_core_wander({{1.0, 1.0, 1.0, 1.0}, {0.5, 0.5, 0.5, 0.5}}, 1, 0.25);
  ASSERT_TRUE(plain.has_value() && paused.has_value());
  EXPECT_NEAR(paused->lag_s, 1.0, 1e-12);
  EXPECT_NEAR(paused->cv, plain->cv, 1e-12);
  // without_common_mode places the chunks with the gap. Thread 0: four 1 s chunks (rate 1); thread 1: 4 s then 2 s
  // (rates 1/4, 1/2). With a 1 s gap thread 0 runs at [0,1], [2,3], [4,5], [6,7] and thread 1 at [0,4], [5,7]: thread
  // 0's last chunk is set against thread 1's second, own log rate (0 - ln(1/2)) sqrt(1/2), and its third meets
  // neither (kept as its own deviation from the mean). Without the gap all four meet thread 1's first chunk: the last
  // one's own log rate is ln(4) sqrt(1/2). The mean log rate of the six chunks: -ln(8) / 6.
  const std::vector<std::vector<double>> two = {{1.0, 1.0, 1.0, 1.0}, {4.0, 2.0}};
  const double y_mean = -std::log(8.0) / 6.0;
  const auto with_gap = without_common_mode(two, 1.0);
  const auto no_gap = without_common_mode(two, 0.0);
  EXPECT_NEAR(with_gap[0][3], std::exp(-(y_mean + std::log(2.0) * std::sqrt(0.5))), 1e-12);
  EXPECT_NEAR(with_gap[0][2], 1.0, 1e-12);
  EXPECT_NEAR(no_gap[0][3], std::exp(-(y_mean + std::log(4.0) * std::sqrt(0.5))), 1e-12);
}

TEST(SlowWander, EmptyWithoutTwoWholeWindows) {
  EXPECT_FALSE(fit_slow_wander({{1.0, 1.0, 1.0, 1.0}}, 5.0, 0.5).has_value());
  EXPECT_FALSE(fit_slow_wander({{1.0, 1.0, 1.0, 1.0}}, 0.0, 0.5).has_value());
  EXPECT_TRUE(fit_slow_wander({{1.0, 1.0, 1.0, 1.0}}, 2.0, 0.5).has_value());
}

TEST(OversubscriptionCost, SolvesTheSimulatorsFormula) {
  // 16 cores give 1600 images/s; 32 threads give 1500: 1600/1500 - 1 = 1/15, extra/core = 1.
  EXPECT_NEAR(oversubscription_cost(1600, 1500, 16, 32), 1.0 / 15.0, 1e-12);
  // 8 extra threads on 16 cores (extra/core = 0.5): cost = (1600/1500 - 1) / 0.5.
  EXPECT_NEAR(oversubscription_cost(1600, 1500, 16, 24), 2.0 / 15.0, 1e-12);
  // Faster when oversubscribed (noise): clamped at 0.
  EXPECT_DOUBLE_EQ(oversubscription_cost(1500, 1600, 16, 32), 0.0);
}

TEST(GeometricSizes, IncludesBothEnds) {
  const auto s = geometric_sizes(4096, 1 << 20, 4);
  ASSERT_EQ(s.size(), 5u);  // 4K 16K 64K 256K 1M
  EXPECT_DOUBLE_EQ(s.front(), 4096);
  EXPECT_DOUBLE_EQ(s.back(), 1 << 20);
}

TEST(PinSplit, ShareAndOnePassRatioByHand) {
  // Run 31's pinned ResNet-50 case: pin_memory() 6.1 ms a 38.5 MB batch; say a touch of 2.5 ms and the copy of
  // touched pages 4.0 ms: the faults are 2.5 / 6.1 = 0.41 of the one pass, which costs 6.1 / 6.5 = 0.94 of the parts.
  const PinSplit s{2.5e-3, 6.1e-3, 4.0e-3};
  EXPECT_NEAR(touch_share_of_fresh_copy(s), 2.5 / 6.1, 1e-12);
  EXPECT_NEAR(one_pass_ratio(s), 6.1 / 6.5, 1e-12);
  EXPECT_DOUBLE_EQ(touch_share_of_fresh_copy(PinSplit{}), 0.0);  // nothing measured: no share, no division
  EXPECT_DOUBLE_EQ(one_pass_ratio(PinSplit{}), 0.0);
}

TEST(Provenance, CpuModelFromCpuinfo) {
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum\nflags\t: fpu\n"),
            "Intel(R) Xeon(R) Platinum");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\n"), "");
  const std::string date = utc_iso8601_now();
  ASSERT_EQ(date.size(), 20u);
  EXPECT_EQ(date[10], 'T');
  EXPECT_EQ(date.back(), 'Z');
}

TEST(DutyPacing, RestByHand) {
  // 20 ms of GPU time in 22 ms of wall: at duty 0.5 the run must last 40 ms, so 18 ms of rest.
  EXPECT_NEAR(rest_for_duty_s(0.020, 0.022, 0.5), 0.018, 1e-12);
  EXPECT_DOUBLE_EQ(rest_for_duty_s(0.020, 0.050, 0.5), 0.0);  // already behind: no rest, never negative
  EXPECT_DOUBLE_EQ(rest_for_duty_s(0.020, 0.021, 1.0), 0.0);  // back to back
}

// A step that heats the way run 46's did (23.7 ms rested, 28.3 ms back to back, run 46a2's calibrate log),
// with 0.1 ms of host time per step and every sleep 0.08 ms long: paced on the achieved time, 3 s at each
// target lands within 0.005 of it; the fixed period it replaced lands where run 46 did (0.82 for 0.75, 1.0 for 0.9).
TEST(DutyPacing, HoldsTheTargetWhileTheStepHeats) {
  const double rested_s = 0.0237, hot_s = 0.0283, host_s = 1e-4, sleep_overshoot_s = 8e-5;
  auto step_s = [&](double duty_so_far) { return rested_s + (hot_s - rested_s) * duty_so_far * duty_so_far; };
  for (const double target : {0.25, 0.5, 0.75, 0.9}) {
    for (const bool paced : {true, false}) {
      double busy_s = 0.0, wall_s = 0.0;
      while (wall_s < 3.0) {
        const double t = step_s(wall_s > 0.0 ? busy_s / wall_s : 0.0);
        busy_s += t;
        wall_s += t + host_s;
        const double rest_s = paced ? rest_for_duty_s(busy_s, wall_s, target)
                                    : std::max(0.0, rested_s / target - (t + host_s));
        if (rest_s > 0.0) wall_s += rest_s + sleep_overshoot_s;
      }
      if (paced) {
        EXPECT_NEAR(busy_s / wall_s, target, 0.005) << "target " << target;
      } else if (target >= 0.75) {
        EXPECT_GT(busy_s / wall_s, target + 0.04) << "target " << target;  // the overshoot this replaced
      }
    }
  }
}

}  // namespace
}  // namespace pipeplan::calibrate
