// Pure functions of models/ against hand calculations.
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "models/analytic.hpp"
#include "models/collectives.hpp"
#include "models/cost_models.hpp"
#include "models/distribution.hpp"
#include "models/input_error.hpp"
#include "models/json_reader.hpp"
#include "models/profile.hpp"
#include "models/scenario.hpp"

using namespace pipeplan;

TEST(CopyModel, FitOnlyCurveIsLatencyPlusBytesOverBandwidth) {
  CopyCurve c{1e-5, 1e10, {}};
  EXPECT_DOUBLE_EQ(copy_time_s(c, 1e6), 1e-5 + 1e-4);
  EXPECT_DOUBLE_EQ(copy_time_s(c, 0), 0.0);
}

TEST(CopyModel, InterpolatesTheRateAgainstLogBytes) {
  CopyCurve c{1e-5, 1e10, {{1e6, 1e10}, {1e8, 2e10}}};
  EXPECT_DOUBLE_EQ(copy_time_s(c, 1e7), 1e7 / 1.5e10);  // halfway in log(bytes)
  EXPECT_DOUBLE_EQ(copy_time_s(c, 1e9), 1e9 / 2e10);    // beyond the last point: its rate
  EXPECT_DOUBLE_EQ(copy_time_s(c, 1e5), 1e-5 + 1e5 / 1e10);  // below the first: the fit
  EXPECT_DOUBLE_EQ(copy_time_s(c, 1e6), 1e6 / 1e10);
}

// An unpinned 40 MB batch from a worker: receive 5 ms per batch + 0.2 ns/B of map, touch and release (8 ms),
// resident pageable copy at 10 GB/s (4 ms). A fresh-mapping curve of 6.25 GB/s carries the touch (6.4 ms)
// only together with the release measured apart (0.15 ns/B: 6 ms after the step): receive 5 + 6 ms. The
// curve alone changes nothing: without the release the per-byte receive cannot be split.
TEST(CopyModel, AFreshMappingCurveCarriesTheUnpinnedBatchsFirstTouch) {
  Profile p;
  p.ipc.receive_s_per_batch = 0.005;
  p.ipc.receive_s_per_byte = 2e-10;
  p.copy.h2d_pageable = CopyCurve{0.0, 1e10, {}};
  EXPECT_DOUBLE_EQ(unpinned_receive_s(p, 4e7), 0.005 + 0.008);
  EXPECT_DOUBLE_EQ(unpinned_worker_batch_copy_s(p, 4e7), 0.004);
  p.copy.h2d_pageable_fresh_mapping = CopyCurve{0.0, 6.25e9, {}};
  EXPECT_FALSE(unpinned_copy_from_fresh_mapping(p));
  EXPECT_DOUBLE_EQ(unpinned_receive_s(p, 4e7), 0.005 + 0.008);
  EXPECT_DOUBLE_EQ(unpinned_map_s(p, 4e7), 0.005 + 0.008);  // no release apart: all of it in next()
  EXPECT_DOUBLE_EQ(unpinned_release_s(p, 4e7), 0.0);
  EXPECT_DOUBLE_EQ(unpinned_worker_batch_copy_s(p, 4e7), 0.004);
  p.ipc.release_s_per_byte = 1.5e-10;
  EXPECT_TRUE(unpinned_copy_from_fresh_mapping(p));
  EXPECT_DOUBLE_EQ(unpinned_receive_s(p, 4e7), 0.005 + 0.006);
  EXPECT_DOUBLE_EQ(unpinned_map_s(p, 4e7), 0.005);       // in next()
  EXPECT_DOUBLE_EQ(unpinned_release_s(p, 4e7), 0.006);   // when the batch is dropped after its step
  EXPECT_DOUBLE_EQ(unpinned_worker_batch_copy_s(p, 4e7), 0.0064);
  EXPECT_DOUBLE_EQ(h2d_batch_copy_s(p, 4e7, /*pinned=*/false, /*from_workers=*/false), 0.004);  // inline: resident
}

// The pin thread's receive split as the simulator runs it (validation-runs.md run 62, finding 9): a 1 ms fixed receive
// and 40 MB at 0.2 ns/B (8 ms of per-byte work). Whole hold by default; a quarter share holds 0.25 ms and frees 0.75;
// a 0.4 ms hold in seconds frees 0.6; a 1.5 ms hold, beyond the fixed receive, takes its extra 0.5 ms from the
// per-byte 8 ms; the sum stays 9 ms. A hold beyond both the receive and the per-byte work sets the total.
TEST(CostModels, ThePinThreadsReceiveSplitsWithoutChangingItsWork) {
  Profile p;
  p.ipc.receive_s_per_batch = 0.001;
  p.ipc.receive_s_per_byte = 2e-10;
  auto parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.held_s, 0.001);
  EXPECT_DOUBLE_EQ(parts.free_s, 0.0);
  EXPECT_DOUBLE_EQ(parts.map_s, 0.008);
  p.ipc.receive_gil_share = 0.25;
  parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.held_s, 0.00025);
  EXPECT_DOUBLE_EQ(parts.free_s, 0.00075);
  EXPECT_DOUBLE_EQ(parts.total_s(), 0.009);
  p.ipc.receive_gil_s_per_batch = 0.0004;  // replaces the share
  parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.held_s, 0.0004);
  EXPECT_DOUBLE_EQ(parts.free_s, 0.0006);
  EXPECT_DOUBLE_EQ(parts.map_s, 0.008);
  p.ipc.receive_gil_s_per_batch = 0.0015;
  parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.free_s, 0.0);
  EXPECT_DOUBLE_EQ(parts.map_s, 0.0075);
  EXPECT_DOUBLE_EQ(parts.total_s(), 0.009);
  parts = pin_receive_parts(p, 1e6);  // 0.2 ms of per-byte work: the 1.5 ms hold sets the total
  EXPECT_DOUBLE_EQ(parts.map_s, 0.0);
  EXPECT_DOUBLE_EQ(parts.total_s(), 0.0015);
}

// The release of the worker's batch (ipc.release_s_per_byte x bytes) leaves the per-byte work as its own part, the
// total unchanged: 40 MB at 0.2 ns/B is 8 ms of per-byte work, of which 40 MB at 0.15 ns/B = 6 ms is the release and
// 2 ms the map and touch. Without release_holds_gil, or without a measured release, it stays in map_s; a release
// dearer than the per-byte work takes all of it.
TEST(CostModels, TheReleaseOfTheWorkersBatchIsItsOwnPartOfThePerByteWork) {
  Profile p;
  p.ipc.receive_s_per_batch = 0.001;
  p.ipc.receive_s_per_byte = 2e-10;
  auto parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.release_s, 0.0);  // not measured
  EXPECT_DOUBLE_EQ(parts.map_s, 0.008);
  p.ipc.release_s_per_byte = 1.5e-10;
  parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.release_s, 0.006);
  EXPECT_NEAR(parts.map_s, 0.002, 1e-15);
  EXPECT_DOUBLE_EQ(parts.total_s(), 0.009);
  p.ipc.release_holds_gil = false;
  parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.release_s, 0.0);
  EXPECT_DOUBLE_EQ(parts.map_s, 0.008);
  p.ipc.release_holds_gil = true;
  p.ipc.release_s_per_byte = 3e-10;
  parts = pin_receive_parts(p, 4e7);
  EXPECT_DOUBLE_EQ(parts.release_s, 0.008);
  EXPECT_DOUBLE_EQ(parts.map_s, 0.0);
  EXPECT_DOUBLE_EQ(parts.total_s(), 0.009);
}

// The loop's Python holds the GIL in one piece with nobody waiting, else one slice per 5 ms switch interval begun.
TEST(GilModel, TheLoopHoldsTheGilInSwitchIntervalSlicesWhenShared) {
  EXPECT_EQ(gil_slices(0.021, false), 1);
  EXPECT_EQ(gil_slices(0.021, true), 5);  // 21 ms: 4.2 intervals
  EXPECT_EQ(gil_slices(0.030, true), 6);
  EXPECT_EQ(gil_slices(0.004, true), 1);
  EXPECT_EQ(gil_slices(100.0, true), 1000);  // capped: a pathological host time stays cheap to simulate
}

// Beside a pin thread each GIL slice runs in pieces, each waiting for the memory map first; alone, in one. The
// default piece is 0.5 ms (run 18: a ResNet-50 loop faulted every 0.43-0.60 ms beside the pin thread's work).
TEST(MemoryMapModel, TheLoopChecksTheMapEveryIntervalWhenShared) {
  EXPECT_EQ(memory_map_chunks(0.005, false), 1);
  EXPECT_EQ(memory_map_chunks(0.005, true), 10);
  EXPECT_EQ(memory_map_chunks(0.0042, true, 0.001), 5);  // 4.2 intervals begun
  EXPECT_EQ(memory_map_chunks(0.0008, true, 0.001), 1);
  EXPECT_EQ(memory_map_chunks(0.0004, true), 1);
  EXPECT_EQ(memory_map_chunks(100.0, true), 1000);  // capped
}

// What one batch's 19.2 ms of map work costs a loop that needs the map every millisecond: all of it when each need
// waits for the work to end; with a 0.5 ms wait per need the loop runs 1 ms, waits 0.5 ms, ... while the work
// lasts: a third of it, 6.4 ms.
TEST(MemoryMapModel, AWaitPerNeedLosesItsShareOfTheWork) {
  EXPECT_DOUBLE_EQ(memory_map_stall_s(0.0192, 0.001, 0.0), 0.0192);
  EXPECT_NEAR(memory_map_stall_s(0.0192, 0.001, 0.0005), 0.0064, 1e-15);
  EXPECT_DOUBLE_EQ(memory_map_stall_s(0.0192, 0.0, 0.0005), 0.0192);  // no work between needs: all of it
}

// A scenario's count of needs a step sets the interval: 30 ms of host work needing the map 60 times, every 0.5 ms.
TEST(MemoryMapModel, NeedsPerStepSetTheInterval) {
  EXPECT_DOUBLE_EQ(memory_map_interval_s(0.030, 60.0), 0.0005);
  EXPECT_DOUBLE_EQ(memory_map_interval_s(0.030, 0.0), kMemoryMapCheckIntervalS);  // not given: the default
  EXPECT_DOUBLE_EQ(memory_map_interval_s(0.0, 60.0), kMemoryMapCheckIntervalS);
  EXPECT_EQ(memory_map_chunks(0.006, true, memory_map_interval_s(0.030, 30.0)), 6);  // 1 ms pieces
}

// A steady loop of 25 ms steps at duty 0.5 (25 ms idle), tau 25 ms: a = b = e^-1, share b (1 - a) / (1 - a b).
TEST(GpuDuty, TheShareAPeriodicStepStartsWith) {
  const double e1 = std::exp(-1.0);
  EXPECT_NEAR(share_at_step_start(0.5, 0.025, 0.025), e1 * (1 - e1) / (1 - e1 * e1), 1e-12);
  EXPECT_NEAR(share_at_step_start(0.5, 0.025, 1e6), 0.5, 1e-4);  // a long constant: the duty
  EXPECT_EQ(share_at_step_start(1.0, 0.025, 0.025), 1.0);
  EXPECT_EQ(share_at_step_start(0.0, 0.025, 0.025), 0.0);
}

// A ramp made with tau = 40 ms on a line shape (1.0 rested, 1.2 back to back), 25 ms rested steps: before
// position k the GPU was busy 25 ms x the relative times ahead, share 1 - e^(-busy/tau). The fit gives tau back
// within its grid's 5% step.
TEST(GpuDuty, TheTimeConstantFromABurstRamp) {
  const std::vector<RelativeDutyPoint> line = {{0.0, 1.0}, {1.0, 1.2}};
  std::vector<double> ramp;
  double busy = 0.0;
  for (int k = 0; k < 8; ++k) {
    ramp.push_back(1.0 + 0.2 * (1.0 - std::exp(-busy / 0.040)));
    busy += 0.025 * ramp.back();
  }
  EXPECT_NEAR(fit_gpu_duty_time_constant(line, ramp, 0.025), 0.040, 0.040 * 0.06);
  EXPECT_EQ(fit_gpu_duty_time_constant(line, {1.0, 1.1}, 0.025), 0.0);  // too short a ramp
}

// A profile with calibrate's constant: a scenario without its own curve takes the profile's shape re-read at a
// step's start under it, and the constant. 30 ms back to back, 1.2 x rested: rested 25 ms.
// The clock's humps (training.gpu_clock_humps; validation-runs.md run 45, finding 2) by hand: amplitude 0.1, a
// one-second period, high the first 0.3 of it: 1 + 0.1 x 0.7 = 1.07 while high, 1 - 0.1 x 0.3 = 0.97 after; their
// mean over a period is 1 (0.3 x 1.07 + 0.7 x 0.97).
TEST(GpuDuty, TheClocksHumpsAreATwoLevelWaveWithMeanOne) {
  EXPECT_DOUBLE_EQ(clock_hump_factor(0.1, 0.1, 1.0, 0.3), 1.07);
  EXPECT_DOUBLE_EQ(clock_hump_factor(0.5, 0.1, 1.0, 0.3), 0.97);
  EXPECT_DOUBLE_EQ(clock_hump_factor(7.2, 0.1, 1.0, 0.3), 1.07);   // the eighth period's high part
  double sum = 0.0;
  const int n = 10000;
  for (int i = 0; i < n; ++i) sum += clock_hump_factor((i + 0.5) / n * 2.0, 0.1, 1.0, 0.3);  // two periods
  EXPECT_NEAR(sum / n, 1.0, 1e-9);
  EXPECT_EQ(clock_hump_factor(0.1, 0.0, 1.0, 0.3), 1.0);
  EXPECT_EQ(clock_hump_factor(0.1, 0.1, 1.0, 1.0), 1.0);
  EXPECT_EQ(clock_hump_factor(0.1, 0.1, 0.0, 0.3), 1.0);
}

// The scenario's humps: their amplitude read off the duty (linear, flat beyond), and a bad high share or an
// amplitude that would take the low level to zero named by path.
TEST(GpuDuty, TheHumpsAmplitudeFollowsTheDutyAndBadValuesAreNamed) {
  Profile p;
  json j = {{"training", {{"step_s", 0.030}, {"gpu_clock_humps", {{"period_s", 1.04}, {"high_share", 0.3},
      {"amplitude_vs_gpu_duty", json::array({{{"duty", 0.9}, {"amplitude", 0.1}}, {{"duty", 0.5}, {"amplitude", 0.0}}})}}}}}};
  const Scenario s = parse_scenario(j, "x.json", p);
  ASSERT_TRUE(s.training.gpu_clock_humps.enabled());
  EXPECT_DOUBLE_EQ(s.training.gpu_clock_humps.period_s, 1.04);
  EXPECT_DOUBLE_EQ(s.training.gpu_clock_humps.amplitude_at(0.7), 0.05);
  EXPECT_DOUBLE_EQ(s.training.gpu_clock_humps.amplitude_at(0.2), 0.0);
  EXPECT_DOUBLE_EQ(s.training.gpu_clock_humps.amplitude_at(1.0), 0.1);
  EXPECT_FALSE(parse_scenario({{"training", {{"step_s", 0.030}}}}, "x.json", p).training.gpu_clock_humps.enabled());
  for (const auto& [key, bad] : std::vector<std::pair<std::string, json>>{
           {"high_share", 1.0}, {"high_share", 0.0}, {"period_s", 0.0}}) {
    json b = j;
    b["training"]["gpu_clock_humps"][key] = bad;
    try {
      parse_scenario(b, "x.json", p);
      ADD_FAILURE() << key << " = " << bad.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("training.gpu_clock_humps." + key), std::string::npos) << e.what();
    }
  }
  json b = j;
  b["training"]["gpu_clock_humps"]["amplitude_vs_gpu_duty"][0]["amplitude"] = 1.0 / 0.3;
  try {
    parse_scenario(b, "x.json", p);
    ADD_FAILURE() << "an amplitude of 1 / high_share was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("amplitude_vs_gpu_duty[0].amplitude"), std::string::npos) << e.what();
  }
}

TEST(GpuDuty, AProfilesConstantComesWithItsShape) {
  Profile p;
  p.compute.step_vs_gpu_duty = {{0.0, 1.0}, {0.5, 1.05}, {1.0, 1.2}};
  p.compute.gpu_duty_time_constant_s = 0.030;
  const json j = {{"training", {{"step_s", 0.030}}}};
  const Scenario s = parse_scenario(j, "x", p);
  EXPECT_DOUBLE_EQ(s.training.gpu_duty_time_constant_s, 0.030);
  ASSERT_EQ(s.training.step_s_vs_gpu_duty.size(), 3u);
  EXPECT_NEAR(s.training.step_s_vs_gpu_duty[1].duty, share_at_step_start(0.5, 0.025 * 1.05, 0.030), 1e-12);
  EXPECT_NEAR(s.training.step_s_vs_gpu_duty[1].step_s, 0.025 * 1.05, 1e-12);
  // its own curve: the simulator's default constant
  const json own = {{"training", {{"step_s", 0.030}, {"step_s_vs_gpu_duty", json::array({{{"duty", 0.0}, {"step_s", 0.025}}})}}}};
  EXPECT_DOUBLE_EQ(parse_scenario(own, "x", p).training.gpu_duty_time_constant_s, kGpuDutyTimeConstantS);
}

TEST(CpuModel, SpeedCurveInterpolatesAndOversubscriptionCosts) {
  CpuProfile cpu{16, {{1, 1.0}, {8, 0.9}, {16, 0.7}}, 0.1};
  EXPECT_DOUBLE_EQ(relative_core_speed(cpu.speed_vs_busy_cores, 12), 0.8);
  EXPECT_DOUBLE_EQ(relative_core_speed(cpu.speed_vs_busy_cores, 32), 0.7);
  EXPECT_DOUBLE_EQ(cpu_capacity_cores(cpu, 16, 8), 8 * 0.9);
  // 32 runnable on 16 cores: 16 x 0.7, divided by 1 + 0.1 x (16 extra / 16 cores)
  EXPECT_DOUBLE_EQ(cpu_capacity_cores(cpu, 16, 32), 16 * 0.7 / 1.1);
  EXPECT_DOUBLE_EQ(cpu_capacity_cores(cpu, 16, 0), 0.0);
}

// x' = rho x + sqrt(1 - rho^2) sigma z: x 0.1, dt 0.5 s, tau 1 s -> rho = e^-0.5 = 0.606531,
// sqrt(1 - rho^2) = 0.795060; sigma 0.2, z 1 -> 0.060653 + 0.159012 = 0.219665.
TEST(CpuModel, WanderingCoreSpeedStepIsTheOrnsteinUhlenbeckUpdate) {
  EXPECT_NEAR(pipeplan::wander_log_speed(0.1, 0.5, 1.0, 0.2, 1.0), 0.219665, 1e-6);
  EXPECT_DOUBLE_EQ(pipeplan::wander_log_speed(0.1, 0.5, 0.0, 0.2, 1.0), 0.2);  // no memory
  EXPECT_DOUBLE_EQ(pipeplan::wander_log_speed(0.1, 0.0, 1.0, 0.2, 1.0), 0.1);  // no time, no move
  EXPECT_NEAR(pipeplan::lognormal_sigma(0.14), std::sqrt(std::log(1.0196)), 1e-12);
}

// The process's own statistics: stationary spread sigma_ln, correlation exp(-dt/tau) between
// steps dt apart, speed (1 / time factor) of mean 1 (cv 0.14, tau 0.8 s, dt 0.3 s: rho = e^-0.375 = 0.6873).
TEST(CpuModel, WanderingCoreSpeedKeepsItsSpreadCorrelationAndMean) {
  const double cv = 0.14, tau = 0.8, dt = 0.3, sigma = pipeplan::lognormal_sigma(cv);
  pipeplan::Rng rng(7);
  const int n = 400000;
  double x = sigma * rng.standard_normal(), prev = x;
  double sum = 0, sum2 = 0, lag = 0, factor = 0;
  for (int i = 0; i < n; ++i) {
    prev = x;
    x = pipeplan::wander_log_speed(x, dt, tau, sigma, rng.standard_normal());
    sum += x;
    sum2 += x * x;
    lag += x * prev;
    factor += 1.0 / pipeplan::wander_time_factor(x, cv);
  }
  const double var = sum2 / n - (sum / n) * (sum / n);
  EXPECT_NEAR(std::sqrt(var) / sigma, 1.0, 0.02);
  EXPECT_NEAR(lag / n / var, std::exp(-dt / tau), 0.01);
  EXPECT_NEAR(factor / n, 1.0, 0.003);
}

// The split-normal wander (profile cpu.core_speed_fast_side / slow_side): equal sides are the lognormal of
// wander_time_factor (x = -sigma z, sigma = lognormal_sigma(cv)); unequal ones keep the speed's mean at 1 and put
// the log speed's p90 and p10 at the median +1.2816 sigma_fast and -1.2816 sigma_slow (hand: sides 0.16 and 0.10 in
// log speed -> sigma 0.12485 and 0.07803). Checked by a quadrature of the standard normal density, independent of
// the closed form's Phi terms.
TEST(CpuModel, SplitWanderIsTheLognormalWithEqualSidesAndKeepsTheMeanSpeed) {
  const double cv = 0.14, sigma = pipeplan::lognormal_sigma(cv);
  for (double z : {-2.0, -0.5, 0.0, 0.7, 1.9})
    EXPECT_NEAR(pipeplan::split_wander_time_factor(z, sigma, sigma), pipeplan::wander_time_factor(-sigma * z, cv), 1e-12);
  const double fast = 0.16 / pipeplan::kNormalP90, slow = 0.10 / pipeplan::kNormalP90;
  EXPECT_NEAR(fast, 0.12485, 1e-5);
  EXPECT_NEAR(slow, 0.07803, 1e-5);
  double mean_speed = 0.0;
  const double dz = 1e-4;
  for (double z = -9.0; z < 9.0; z += dz)
    mean_speed += std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI) * dz / pipeplan::split_wander_time_factor(z, fast, slow);
  EXPECT_NEAR(mean_speed, 1.0, 1e-6);
  // log speed = -ln(time factor): at z = +-1.2816 it sits the sides above and below its value at z = 0 (the median)
  const double at0 = -std::log(pipeplan::split_wander_time_factor(0.0, fast, slow));
  EXPECT_NEAR(-std::log(pipeplan::split_wander_time_factor(pipeplan::kNormalP90, fast, slow)) - at0, 0.16, 1e-12);
  EXPECT_NEAR(at0 + std::log(pipeplan::split_wander_time_factor(-pipeplan::kNormalP90, fast, slow)), 0.10, 1e-12);
}

// A thread that never idles draws its factor at each batch start and the next draw is dt = (batch time) later, so
// a slow batch leaves the process longer to decorrelate. Its mean time per batch then runs from 1 + cv^2 (spells
// much shorter than a batch: each draw independent, E[exp(x + s^2/2)] = exp(s^2)) down to 1 (spells many batches
// long: batches are counted where the thread is fast, and its speed averages 1 over time). cv 0.3: 1.09 and 1.
// Validation run 37, finding 8 (the pin thread's spells are about 4 batches: 1 + cv^2 / 8 there).
TEST(CpuModel, AFreeRunningThreadsMeanBatchTimeFallsFromOnePlusCvSquaredToOne) {
  const double cv = 0.3, sigma = pipeplan::lognormal_sigma(cv), batch_s = 0.01;
  // n batches: spells of 300 batches leave about n / 600 independent ones, whose mean's standard error is about
  // 0.3 / sqrt(n / 600): 0.005 at 2,000,000 batches, so the 0.015 below is 3 of them
  auto mean_batch_factor = [&](double tau_s, int n) {
    pipeplan::Rng rng(11);
    double x = sigma * rng.standard_normal(), total = 0;
    for (int i = 0; i < n; ++i) {
      const double f = pipeplan::wander_time_factor(x, cv);
      total += f;
      x = pipeplan::wander_log_speed(x, batch_s * f, tau_s, sigma, rng.standard_normal());
    }
    return total / n;
  };
  EXPECT_NEAR(mean_batch_factor(batch_s * 0.01, 200000), 1.0 + cv * cv, 0.005);
  EXPECT_NEAR(mean_batch_factor(batch_s * 300, 2000000), 1.0, 0.015);
  const double four_batches = mean_batch_factor(batch_s * 4, 200000);
  EXPECT_GT(four_batches, 1.0);
  EXPECT_LT(four_batches, 1.0 + 0.25 * cv * cv);
}

// Each reader's device-wait rate with N readers at once: the stream rate times its share, linear between the
// measured counts, flat beyond; no curve: the stream rate.
TEST(StorageModel, AReadersRateFollowsTheConcurrentReadCurve) {
  const std::vector<ReaderSharePoint> curve{{1, 1.0}, {2, 0.5}, {4, 0.25}};
  EXPECT_DOUBLE_EQ(stream_read_rate(2e9, curve, 1), 2e9);
  EXPECT_DOUBLE_EQ(stream_read_rate(2e9, curve, 3), 2e9 * 0.375);
  EXPECT_DOUBLE_EQ(stream_read_rate(2e9, curve, 8), 5e8);
  EXPECT_DOUBLE_EQ(stream_read_rate(2e9, {}, 8), 2e9);
}

// calibrate's concurrent cold reads become the curve: each thread's wait rate is bytes / threads over the wall
// less its share of the CPU (2 threads, 1.6e8 B, 0.11 s of wall, 0.02 s of CPU: 0.8e8 B in 0.10 s, 0.8 GB/s),
// relative to the one-thread stream rate (1.6 GB/s): 0.5. A point whose CPU exceeds its wall is left out.
TEST(Profile, ConcurrentColdReadsBecomeEachReadersShare) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "storage": {"stream_read_bytes_per_s": 1.6e9, "buffered_read": {"concurrent": [
        {"threads": 2, "bytes": 1.6e8, "wall_s": 0.11, "cpu_s": 0.02},
        {"threads": 4, "bytes": 1.6e8, "wall_s": 0.01, "cpu_s": 0.08}]}}})");
  const Profile p = parse_profile(doc, "p.json", nullptr);
  ASSERT_EQ(p.storage.stream_read_vs_readers.size(), 2u);
  EXPECT_DOUBLE_EQ(p.storage.stream_read_vs_readers[0].relative_rate, 1.0);
  EXPECT_DOUBLE_EQ(p.storage.stream_read_vs_readers[1].readers, 2.0);
  EXPECT_NEAR(p.storage.stream_read_vs_readers[1].relative_rate, 0.5, 1e-12);
}

// The written-order reads that calibrate keeps beside the shuffled ones (since the seventeenth session) are read and
// ignored; the reads with CPU work between files make a second curve. A scenario takes `concurrent`'s by default
// (0.5 at 2 threads, as above) and the with-work one under storage.reader_share_from=with_work: 2 threads, 1.6e8 B,
// 0.084 s of wall, 0.04 s of CPU (their work and copy): each waits 0.084 - 0.02 = 0.064 s for 0.8e8 B, 1.25 GB/s,
// 0.78125 of the one-thread 1.6 GB/s.
TEST(Profile, ReadersWithWorkGiveASecondShareCurve) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "storage": {"stream_read_bytes_per_s": 1.6e9, "buffered_read": {
        "concurrent": [{"threads": 2, "bytes": 1.6e8, "wall_s": 0.11, "cpu_s": 0.02}],
        "concurrent_in_order": [{"threads": 2, "bytes": 1.6e8, "wall_s": 0.06, "cpu_s": 0.02}],
        "concurrent_with_work": [{"threads": 2, "bytes": 1.6e8, "wall_s": 0.084, "cpu_s": 0.04,
                                  "work_s_per_file": 1e-3, "readers_in_flight_mean": 1.9}]}}})");
  const Profile p = parse_profile(doc, "p.json", nullptr);
  ASSERT_EQ(p.storage.stream_read_vs_readers.size(), 2u);
  EXPECT_NEAR(p.storage.stream_read_vs_readers[1].relative_rate, 0.5, 1e-12);
  ASSERT_EQ(p.storage.stream_read_vs_readers_with_work.size(), 2u);
  EXPECT_DOUBLE_EQ(p.storage.stream_read_vs_readers_with_work[0].relative_rate, 1.0);
  EXPECT_NEAR(p.storage.stream_read_vs_readers_with_work[1].relative_rate, 0.78125, 1e-12);

  const nlohmann::json step = {{"training", {{"step_s", 0.01}}}};
  nlohmann::json with_work = step;
  with_work["storage"] = {{"reader_share_from", "with_work"}};
  EXPECT_NEAR(parse_scenario(step, "x.json", p).storage.stream_read_vs_readers[1].relative_rate, 0.5, 1e-12);
  EXPECT_NEAR(parse_scenario(with_work, "x.json", p).storage.stream_read_vs_readers[1].relative_rate, 0.78125, 1e-12);

  // a profile from before the with-work reads: the scenario falls back on the back-to-back curve
  nlohmann::json older = doc;
  older["storage"]["buffered_read"].erase("concurrent_with_work");
  const Profile q = parse_profile(older, "p.json", nullptr);
  EXPECT_TRUE(q.storage.stream_read_vs_readers_with_work.empty());
  EXPECT_NEAR(parse_scenario(with_work, "x.json", q).storage.stream_read_vs_readers[1].relative_rate, 0.5, 1e-12);
}

// Calibrate's diagnostic sweeps (pause_sweep, pause_sweep_jittered, pause_sweep_head_first: storage_check.py reads
// them, the model does not) are accepted and change nothing: the share curve is concurrent's alone, 0.5 at 2 threads.
TEST(Profile, DiagnosticReadSweepsAreAcceptedAndIgnored) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "storage": {"stream_read_bytes_per_s": 1.6e9, "buffered_read": {
        "concurrent": [{"threads": 2, "bytes": 1.6e8, "wall_s": 0.11, "cpu_s": 0.02}],
        "pause_sweep": [{"threads": 4, "bytes": 1.6e8, "wall_s": 0.5, "cpu_s": 0.3, "work_s_per_file": 2e-3,
                         "readers_in_flight_mean": 3.6}],
        "pause_sweep_jittered": [{"threads": 4, "bytes": 1.6e8, "wall_s": 0.5, "cpu_s": 0.3, "work_s_per_file": 2e-3,
                                  "work_jitter": 1.0, "readers_in_flight_mean": 2.2}],
        "pause_sweep_head_first": [{"threads": 1, "bytes": 1.6e8, "wall_s": 0.2, "cpu_s": 0.08,
                                    "work_s_per_file": 0.0, "head_bytes": 4096, "readers_in_flight_mean": 1.0}]}}})");
  const Profile p = parse_profile(doc, "p.json", nullptr);
  ASSERT_EQ(p.storage.stream_read_vs_readers.size(), 2u);
  EXPECT_NEAR(p.storage.stream_read_vs_readers[1].relative_rate, 0.5, 1e-12);
}

// The buffered readers' peak: bytes over the wall less the threads' CPU share, the most over both concurrent
// experiments: back to back 1.6e8 B in 0.11 - 0.01 = 0.10 s, 1.6 GB/s; with work 1.6e8 B in 0.084 - 0.02 = 0.064 s,
// 2.5 GB/s. The device's bandwidth stays fio's (1.2 GB/s) unless the scenario asks for the larger of the two; a
// scenario's own read_bytes_per_s wins either way.
TEST(Profile, BufferedReadersPeakCanRaiseTheDeviceBandwidth) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "storage": {"read_bytes_per_s": 1.2e9, "stream_read_bytes_per_s": 1.6e9, "buffered_read": {
        "concurrent": [{"threads": 2, "bytes": 1.6e8, "wall_s": 0.11, "cpu_s": 0.02}],
        "concurrent_with_work": [{"threads": 2, "bytes": 1.6e8, "wall_s": 0.084, "cpu_s": 0.04}]}}})");
  const Profile p = parse_profile(doc, "p.json", nullptr);
  EXPECT_NEAR(p.storage.buffered_peak_bytes_per_s, 2.5e9, 1.0);
  const nlohmann::json step = {{"training", {{"step_s", 0.01}}}};
  nlohmann::json peak = step;
  peak["storage"] = {{"device_bandwidth_from", "fio_or_buffered_peak"}};
  nlohmann::json own = peak;
  own["storage"]["read_bytes_per_s"] = 9e8;
  EXPECT_DOUBLE_EQ(parse_scenario(step, "x.json", p).storage.read_bytes_per_s, 1.2e9);
  EXPECT_NEAR(parse_scenario(peak, "x.json", p).storage.read_bytes_per_s, 2.5e9, 1.0);
  EXPECT_DOUBLE_EQ(parse_scenario(own, "x.json", p).storage.read_bytes_per_s, 9e8);
  // fio above the peak: fio's
  nlohmann::json fast = doc;
  fast["storage"]["read_bytes_per_s"] = 4e9;
  EXPECT_DOUBLE_EQ(parse_scenario(peak, "x.json", parse_profile(fast, "p.json", nullptr)).storage.read_bytes_per_s, 4e9);
}

// Workers are processes (validation-runs.md run 47, finding 5): calibrate's cold reads by forked processes give the
// page-cache fill per byte by process count, (CPU - the one-thread warm re-read's CPU) / bytes: 1 process 0.03 s of
// CPU for 1e8 B against 0.01 s warm: 2e-10; 4 processes 0.04 s: 3e-10. A scenario takes the nearest count's for its
// workers (3 workers: 4 processes, 1 away; 2 workers: 1 and 2 away, so 1 process; 8: 4), the one-thread
// figure without workers, and its own figure where it sets one.
TEST(Profile, WorkerProcessesTakeTheProcessesFillCpu) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "storage": {"stream_read_bytes_per_s": 1.6e9, "buffered_read_cpu_s_per_byte": 1e-10,
        "buffered_read": {"warm_cpu_s": 0.01, "concurrent_processes": [
          {"processes": 4, "bytes": 1e8, "wall_s": 0.05, "cpu_s": 0.04},
          {"processes": 1, "bytes": 1e8, "wall_s": 0.1, "cpu_s": 0.03}]}}})");
  const Profile p = parse_profile(doc, "p.json", nullptr);
  ASSERT_EQ(p.storage.fill_cpu_s_per_byte_vs_processes.size(), 2u);
  EXPECT_DOUBLE_EQ(p.storage.fill_cpu_s_per_byte_vs_processes[0].processes, 1.0);  // sorted by count
  EXPECT_NEAR(p.storage.fill_cpu_s_per_byte_vs_processes[0].cpu_s_per_byte, 2e-10, 1e-22);
  EXPECT_NEAR(p.storage.fill_cpu_s_per_byte_vs_processes[1].cpu_s_per_byte, 3e-10, 1e-22);
  auto fill = [&](nlohmann::json loader, nlohmann::json storage = nlohmann::json::object()) {
    nlohmann::json j = {{"loader", loader}, {"storage", storage}, {"training", {{"step_s", 0.030}}}};
    return parse_scenario(j, "x.json", p).storage.buffered_read_cpu_s_per_byte;
  };
  EXPECT_NEAR(fill({{"num_workers", 3}}), 3e-10, 1e-22);
  EXPECT_NEAR(fill({{"num_workers", 2}}), 2e-10, 1e-22);
  EXPECT_NEAR(fill({{"num_workers", 8}}), 3e-10, 1e-22);
  EXPECT_NEAR(fill({{"num_workers", 0}}), 1e-10, 1e-22);                                   // the main process reads
  EXPECT_NEAR(fill({{"num_workers", 4}}, {{"buffered_read_cpu_s_per_byte", 5e-10}}), 5e-10, 1e-22);  // its own stands
  // a profile without process reads: every reader takes the one-thread figure, as before run 47
  const Profile old = parse_profile(nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "storage": {"buffered_read_cpu_s_per_byte": 1e-10}})"), "p.json", nullptr);
  const nlohmann::json four = {{"loader", {{"num_workers", 4}}}, {"training", {{"step_s", 0.030}}}};
  EXPECT_NEAR(parse_scenario(four, "x.json", old).storage.buffered_read_cpu_s_per_byte, 1e-10, 1e-22);
}

// calibrate's duty curve keeps each point's p90 step since run 46's plan (the GPU clock's humps at a high duty,
// validation-runs.md run 45, finding 2): read where present (0 where not), and a p90 below the point's median
// names its JSON path.
TEST(Profile, TheDutyCurvesP90IsReadAndNotBelowItsMedian) {
  nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "compute": {"step_vs_gpu_duty": [{"duty": 0.0, "relative_time": 1.0},
                                       {"duty": 0.83, "relative_time": 1.06, "relative_p90_time": 1.14}]}})");
  const Profile p = parse_profile(doc, "p.json", nullptr);
  ASSERT_EQ(p.compute.step_vs_gpu_duty.size(), 2u);
  EXPECT_EQ(p.compute.step_vs_gpu_duty[0].relative_p90_time, 0.0);
  EXPECT_DOUBLE_EQ(p.compute.step_vs_gpu_duty[1].relative_p90_time, 1.14);
  doc["compute"]["step_vs_gpu_duty"][1]["relative_p90_time"] = 1.02;
  try {
    parse_profile(doc, "p.json", nullptr);
    FAIL() << "a p90 below the median was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("relative_p90_time"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("p.json"), std::string::npos) << e.what();
  }
}

// A section in the file is taken whole; only a missing section comes from the fallback profile
// (docs/profile.md): a cpu section without core_speed_cv has no wander, whatever the fallback has.
TEST(Profile, APresentSectionIsTakenWholeAMissingOneFromTheFallback) {
  Profile fallback;
  fallback.cpu.core_speed_cv = 0.12;
  fallback.cpu.cores = 16;
  fallback.ipc.shm_write_s_per_byte = 9e-10;
  fallback.host.memcpy_bytes_per_s = 5e9;
  const nlohmann::json doc = nlohmann::json::parse(R"({"schema": "pipeplan-profile/1",
      "cpu": {"cores": 64}, "ipc": {"receive_s_per_batch": 0.0}})");
  const Profile p = parse_profile(doc, "p.json", &fallback);
  EXPECT_EQ(p.cpu.cores, 64);
  EXPECT_EQ(p.cpu.core_speed_cv, 0.0);                 // documented default, not the fallback's 0.12
  EXPECT_EQ(p.ipc.shm_write_s_per_byte, 0.0);          // documented default: not measured
  EXPECT_EQ(p.host.memcpy_bytes_per_s, 5e9);           // host missing: the fallback's, and said so
  EXPECT_NE(std::find(p.fallbacks.begin(), p.fallbacks.end(), "host"), p.fallbacks.end());
  EXPECT_EQ(std::find(p.fallbacks.begin(), p.fallbacks.end(), "cpu"), p.fallbacks.end());
}

TEST(NcclModel, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(all_gather_bus_factor(8), 0.875);
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(1), 0.0);
  CollectiveModel m{true, 1e-5, 1e11};
  EXPECT_DOUBLE_EQ(collective_time_s(m, 1e9, 1.75), 1e-5 + 1.75e9 / 1e11);
}

TEST(DdpBuckets, FirstBucketThenCapThenRemainder) {
  const auto b = ddp_bucket_bytes(100e6, 1048576, 26214400);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_DOUBLE_EQ(b[0], 1048576);
  EXPECT_DOUBLE_EQ(b[1], 26214400);
  EXPECT_DOUBLE_EQ(b[4], 100e6 - 1048576 - 3 * 26214400.0);
  EXPECT_TRUE(ddp_bucket_bytes(0, 1, 1).empty());
  EXPECT_EQ(ddp_bucket_bytes(500e3, 1048576, 26214400).size(), 1u);
}

TEST(Distribution, LognormalAndGammaHaveTheRequestedMeanAndCv) {
  for (auto kind : {Distribution::Kind::kLognormal, Distribution::Kind::kGamma}) {
    Rng rng(42);
    Distribution d{0.004, 0.5, kind};
    const int n = 400000;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = sample(d, rng);
      ASSERT_GT(x, 0.0);
      sum += x;
      sum2 += x * x;
    }
    const double mean = sum / n;
    const double cv = std::sqrt(sum2 / n - mean * mean) / mean;
    EXPECT_NEAR(mean, 0.004, 0.004 * 0.01) << to_string(kind);
    EXPECT_NEAR(cv, 0.5, 0.5 * 0.02) << to_string(kind);
  }
}

TEST(Distribution, SameSeedSameDraws) {
  Rng a(7), b(7), c(8);
  EXPECT_EQ(a.next_u64(), b.next_u64());
  EXPECT_NE(a.next_u64(), c.next_u64());
  EXPECT_NE(derive_seed(1, 1, 1), derive_seed(1, 2, 1));
}

// The ziggurat's 256 layers close at Marsaglia and Tsang's published r (J. Stat. Softw. 5(8), 2000: 3.6541528853610088)
TEST(Distribution, TheZigguratsLayersCloseAtThePublishedTailStart) {
  EXPECT_NEAR(ziggurat_tail_start(), 3.6541528853610088, 1e-12);
}

// Rng::standard_normal against the normal law's CDF (Phi(q) = erfc(-q / sqrt 2) / 2): the share of draws below each
// q, within 5 binomial standard errors, at points inside the layers, in the tail beyond r = 3.654 (its own path) and
// far into it, and the mean excess beyond r; the largest CDF gap (Kolmogorov-Smirnov) below its 1% critical value
// 1.63 / sqrt(n); and the moments.
TEST(Distribution, StandardNormalDrawsFollowTheNormalLaw) {
  Rng rng(2026);
  const int n = 1000000;
  std::vector<double> z(n);
  double sum = 0, sum2 = 0, sum4 = 0;
  for (double& x : z) {
    x = rng.standard_normal();
    sum += x;
    sum2 += x * x;
    sum4 += x * x * x * x;
  }
  std::sort(z.begin(), z.end());
  const auto phi = [](double q) { return 0.5 * std::erfc(-q / std::sqrt(2.0)); };
  for (double q : {-4.2, -3.7, -3.0, -2.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.0, 3.0, 3.7, 4.2}) {
    const double share = double(std::lower_bound(z.begin(), z.end(), q) - z.begin()) / n;
    const double p = phi(q);
    EXPECT_NEAR(share, p, 5.0 * std::sqrt(p * (1 - p) / n) + 1.0 / n) << "q " << q;
  }
  double ks = 0.0;
  for (int i = 0; i < n; i += 97)
    ks = std::max({ks, std::fabs(phi(z[i]) - double(i) / n), std::fabs(phi(z[i]) - double(i + 1) / n)});
  EXPECT_LT(ks, 1.63 / std::sqrt(double(n)));
  EXPECT_NEAR(sum / n, 0.0, 5.0 / std::sqrt(double(n)));
  EXPECT_NEAR(sum2 / n, 1.0, 5.0 * std::sqrt(2.0 / n));
  EXPECT_NEAR(sum4 / n, 3.0, 5.0 * std::sqrt(96.0 / n));  // Var(z^4) = E z^8 - 9 = 105 - 9
  // the tail's own path: beyond r, the mean excess over r is phi(r) / Q(r) - r (about 0.247), each draw's excess
  // spread about as wide, so 5 standard errors of ~260 draws (|z| > r on both sides) is about 0.075
  const double r = ziggurat_tail_start();
  double excess = 0;
  int beyond = 0;
  for (double x : z)
    if (std::fabs(x) > r) excess += std::fabs(x) - r, ++beyond;
  ASSERT_GT(beyond, 100);
  const double mills = std::exp(-0.5 * r * r) / std::sqrt(2 * M_PI) / (0.5 * std::erfc(r / std::sqrt(2.0)));
  EXPECT_NEAR(excess / beyond, mills - r, 5.0 * (mills - r) / std::sqrt(double(beyond)));
}

TEST(JsonReader, SuggestsTheNearestKey) {
  EXPECT_EQ(edit_distance("num_worker", "num_workers"), 1u);
  EXPECT_EQ(nearest("pin_mem", {"batch_size", "pin_memory", "num_workers"}), "pin_memory");
}

TEST(Overrides, SetCreatesNestedKeysAndParsesJsonValues) {
  json doc = json::object();
  apply_override(doc, "loader.num_workers=8");
  apply_override(doc, "transfer.copy_stream=side");
  apply_override(doc, "dataset.load_s_per_sample={\"mean\":0.01,\"cv\":0.2}");
  EXPECT_EQ(doc["loader"]["num_workers"], 8);
  EXPECT_EQ(doc["transfer"]["copy_stream"], "side");
  EXPECT_DOUBLE_EQ(doc["dataset"]["load_s_per_sample"]["cv"].get<double>(), 0.2);
  EXPECT_THROW(apply_override(doc, "loader.num_workers.x=1"), InputError);
  EXPECT_THROW(apply_override(doc, "novalue"), InputError);
}

// A scenario's per-request latency defaults to the larger of fio's random-read latency and calibrate's cold small
// file's fixed cost (profile storage.cold_file_latency_s, since the seventeenth session); the scenario's own wins.
TEST(Scenario, ReadLatencyDefaultsToTheLargerOfFioAndAColdFilesFixedCost) {
  Profile p;
  p.storage.read_latency_s = 2.5e-5;
  p.storage.cold_file_latency_s = 3.0e-4;
  const json base = {{"training", {{"step_s", 0.1}}}};
  EXPECT_DOUBLE_EQ(parse_scenario(base, "x.json", p).storage.read_latency_s, 3.0e-4);
  p.storage.cold_file_latency_s = 0.0;  // not measured
  EXPECT_DOUBLE_EQ(parse_scenario(base, "x.json", p).storage.read_latency_s, 2.5e-5);
  json own = base;
  own["storage"] = {{"read_latency_s", 1.0e-3}};
  EXPECT_DOUBLE_EQ(parse_scenario(own, "x.json", p).storage.read_latency_s, 1.0e-3);
}

TEST(Scenario, DefaultsFollowPyTorch) {
  Profile p;
  const Scenario s = parse_scenario(json{{"training", {{"step_s", 0.1}}}}, "x.json", p);
  EXPECT_EQ(s.loader.batch_size, 1);
  EXPECT_EQ(s.loader.num_workers, 0);
  EXPECT_FALSE(s.loader.pin_memory);
  EXPECT_FALSE(s.loader.persistent_workers);
  EXPECT_EQ(s.loader.prefetch_factor, 2);
  EXPECT_TRUE(s.loader.in_order);
  EXPECT_FALSE(s.transfer.non_blocking);
  EXPECT_EQ(s.node.cpu_cores, p.cpu.cores);
  EXPECT_EQ(s.name, "x");
  EXPECT_EQ(s.loader.pin_thread_wait_s_per_batch, 0.0);  // not PyTorch's: none unless measured
}

TEST(Scenario, PinThreadWaitIsSecondsNotBelowZero) {
  Profile p;
  json j = {{"loader", {{"num_workers", 8}, {"pin_memory", true}, {"pin_thread_wait_s_per_batch", 0.00076}}},
            {"training", {{"step_s", 0.005}}}};
  EXPECT_DOUBLE_EQ(parse_scenario(j, "x.json", p).loader.pin_thread_wait_s_per_batch, 0.00076);
  j["loader"]["pin_thread_wait_s_per_batch"] = -0.001;
  try {
    parse_scenario(j, "x.json", p);
    FAIL() << "a negative wait was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("loader.pin_thread_wait_s_per_batch"), std::string::npos) << e.what();
  }
}

TEST(Scenario, EpochLengthIsLenOfTheDataLoaderPerRank) {
  Profile p;
  json j = {{"node", {{"gpus", 4}}}, {"dataset", {{"num_samples", 1000}}}, {"loader", {{"batch_size", 32}}}, {"training", {{"step_s", 0.1}}}};
  // DistributedSampler: ceil(1000 / 4) = 250 per rank; 250 / 32 -> 8 batches, 7 with drop_last.
  EXPECT_EQ(parse_scenario(j, "x", p).batches_per_epoch(), 8);
  j["loader"]["drop_last"] = true;
  EXPECT_EQ(parse_scenario(j, "x", p).batches_per_epoch(), 7);
}

TEST(Collate, WorkersWriteIntoFreshSharedMemory) {
  Profile p;
  p.ipc.shm_write_s_per_byte = 1e-9;  // 1 GB/s into fresh shared memory
  json j = {{"dataset", {{"item_bytes", 1e6}}}, {"loader", {{"batch_size", 16}, {"num_workers", 4}, {"collate_s_per_batch", 0.002}}},
            {"training", {{"step_s", 0.1}}}};
  Scenario s = parse_scenario(j, "x", p);
  // 16 MB at 1 GB/s = 16 ms > the 2 ms measured in plain memory.
  EXPECT_DOUBLE_EQ(worker_collate_s(s, p, 16e6), 0.016);
  // A collate slower than the floor keeps its own time; a half batch scales.
  s.loader.collate_s_per_batch = 0.040;
  EXPECT_DOUBLE_EQ(worker_collate_s(s, p, 16e6), 0.040);
  EXPECT_DOUBLE_EQ(worker_collate_s(s, p, 8e6), 0.020);
  // num_workers=0 collates inline into plain memory: no floor.
  j["loader"] = {{"batch_size", 16}, {"collate_s_per_batch", 0.002}};
  EXPECT_DOUBLE_EQ(worker_collate_s(parse_scenario(j, "x", p), p, 16e6), 0.002);
  // Timed inside a worker, into shared memory (pipeplan_probe): the 12 ms measured stands under the 16 ms floor.
  j["loader"] = {{"batch_size", 16}, {"num_workers", 4}, {"collate_s_per_batch", 0.012}, {"collate_in_shared_memory", true}};
  EXPECT_DOUBLE_EQ(worker_collate_s(parse_scenario(j, "x", p), p, 16e6), 0.012);
  EXPECT_DOUBLE_EQ(worker_collate_s(parse_scenario(j, "x", p), p, 8e6), 0.006);
  // without a measured collate the flag says nothing: the memcpy estimate, under the floor
  j["loader"].erase("collate_s_per_batch");
  EXPECT_DOUBLE_EQ(worker_collate_s(parse_scenario(j, "x", p), p, 16e6), 0.016);
}

namespace {

struct MutationTally {
  int parsed = 0, rejected = 0;
};

// `trials` documents, each `base` with 1-3 fields of a section replaced by one of `replacements` or (one time in five)
// erased, parsed: each must parse or throw one InputError line. Sections: those named, else any of the document's;
// keep_one leaves a section's last field in place.
MutationTally mutate_and_parse(const json& base, const std::vector<std::string>& sections,
                               const std::vector<json>& replacements, int trials, std::uint64_t seed, bool keep_one) {
  Profile p;
  Rng rng(seed);
  MutationTally t;
  for (int trial = 0; trial < trials; ++trial) {
    json doc = base;
    const int edits = 1 + static_cast<int>(rng.next_u64() % 3);
    for (int e = 0; e < edits; ++e) {
      json* obj = nullptr;
      if (sections.empty()) {
        auto section = doc.begin();
        std::advance(section, rng.next_u64() % doc.size());
        obj = &section.value();
      } else {
        obj = &doc[sections[rng.next_u64() % sections.size()]];
      }
      if (!obj->is_object() || obj->empty()) continue;
      auto field = obj->begin();
      std::advance(field, rng.next_u64() % obj->size());
      const json& r = replacements[rng.next_u64() % replacements.size()];
      if (rng.next_u64() % 5 == 0 && (!keep_one || obj->size() > 1)) obj->erase(field);
      else field.value() = r;
    }
    try {
      parse_scenario(doc, "mutated.json", p);
      ++t.parsed;
    } catch (const InputError& error) {
      ++t.rejected;
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
    }
  }
  return t;
}

}  // namespace

// Property: any mutation of a valid scenario either parses or throws InputError; nothing else.
TEST(Scenario, MutatedDocumentsParseOrFailWithInputError) {
  const json base = {{"node", {{"gpus", 2}, {"cpu_cores", 16}}},
                     {"dataset", {{"num_samples", 1000}, {"item_bytes", 1e5}, {"load_s_per_sample", {{"mean", 0.004}, {"cv", 0.3}}}}},
                     {"storage", {{"page_cache_hit_ratio", 0.5}}},
                     {"loader", {{"batch_size", 32}, {"num_workers", 4}, {"prefetch_factor", 2}, {"pin_memory", true}}},
                     {"transfer", {{"non_blocking", true}, {"copy_stream", "side"}}},
                     {"training", {{"step_s", 0.05}, {"steps", 100}}},
                     {"ddp", {{"gradient_bytes", 1e8}}}};
  const MutationTally t = mutate_and_parse(
      base, {}, {nullptr, -1, 0, 1e300, -1e300, 0.5, "x", true, json::array(), json::object(), json::array({1, 2}), 1 << 30, "side"},
      3000, 3, false);
  EXPECT_GT(t.parsed, 100);
  EXPECT_GT(t.rejected, 100);
}

// The same property over the sequence and fsdp sections (fewer trials: each parse draws the sequence's mean shape).
TEST(Scenario, MutatedSequenceAndFsdpSectionsParseOrFailWithInputError) {
  const json base = {{"node", {{"gpus", 2}, {"cpu_cores", 16}}},
                     {"dataset", {{"num_samples", 1000}, {"load_s_per_sample", 0.001}}},
                     {"loader", {{"batch_size", 32}, {"num_workers", 4}}},
                     {"sequence", {{"tokens_per_sample", {{"mean", 300}, {"cv", 0.8}}}, {"max_tokens", 1024},
                                   {"collate", "bucket"}, {"bucket_boundaries_tokens", {128, 512}},
                                   {"bytes_per_token", 24}, {"step_s_per_token", 1e-6}}},
                     {"fsdp", {{"unit_parameter_bytes", {1e8, 2e8, 3e8}}, {"backward_prefetch", "backward_post"},
                               {"all_gathers_in_flight", 1}}},
                     {"training", {{"step_s", 0.05}, {"steps", 100}}}};
  const MutationTally t = mutate_and_parse(
      base, {"sequence", "fsdp"},
      {nullptr, -1, 0, 1e300, 0.5, "x", true, json::array(), json::object(), json::array({1, 2}), 1 << 30, "pack", "none", 64},
      300, 5, true);
  EXPECT_GT(t.parsed, 15);
  EXPECT_GT(t.rejected, 50);
}

// PyTorch's rule, by hand: limits 1 MiB then 25 MiB; a parameter is never split.
TEST(DdpBuckets, ByParameterFollowsPyTorchsAssignment) {
  const double MiB = 1048576.0;
  // backward order: 0.5, 0.75 (first bucket closes at 1.25 >= 1), 10, 10, 10 (closes at 30 >= 25), 100 (alone), 3
  const auto b = ddp_bucket_bytes_by_parameter({0.5 * MiB, 0.75 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 100 * MiB, 3 * MiB}, MiB, 25 * MiB);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_DOUBLE_EQ(b[0], 1.25 * MiB);
  EXPECT_DOUBLE_EQ(b[1], 30 * MiB);
  EXPECT_DOUBLE_EQ(b[2], 100 * MiB);
  EXPECT_DOUBLE_EQ(b[3], 3 * MiB);
  // 95 parameters of 4 MiB with a 1 MiB cap: one bucket each (an even split would make 380).
  EXPECT_EQ(ddp_bucket_bytes_by_parameter(std::vector<double>(95, 4 * MiB), MiB, MiB).size(), 95u);
}

TEST(Scenario, ParameterBytesSetTheGradientSize) {
  Profile p;
  json j = {{"node", {{"gpus", 2}}}, {"training", {{"step_s", 0.1}}}, {"ddp", {{"parameter_bytes", {{"count", 10}, {"bytes", 4e6}}}}}};
  Scenario s = parse_scenario(j, "x", p);
  EXPECT_DOUBLE_EQ(s.ddp.gradient_bytes, 4e7);
  EXPECT_EQ(s.ddp.bucket_bytes().size(), 3u);  // 4 MB (>= 1 MiB), then 7 x 4 MB = 28 MB (>= 25 MiB), then 4 MB
  j["ddp"]["gradient_bytes"] = 5e7;
  EXPECT_THROW(parse_scenario(j, "x", p), InputError);
  j["ddp"] = {{"parameter_bytes", {1e6, -2}}};
  EXPECT_THROW(parse_scenario(j, "x", p), InputError);
}

// DDP host work: 3 tensors x 10 us + 2 buckets x 100 us + 1 ms = 1.23 ms; a per-parameter cost
// needs the parameter tensors it applies to.
TEST(Scenario, DdpHostWorkCountsTensorsAndBuckets) {
  Profile p;
  json j = {{"node", {{"gpus", 2}}}, {"training", {{"step_s", 0.1}}},
            {"ddp", {{"parameter_bytes", {2e6, 2e6, 2e6}}, {"bucket_cap_mb", 2},
                     {"host_s_per_step", 1e-3}, {"host_s_per_parameter", 10e-6}, {"host_s_per_bucket", 100e-6}}}};
  Scenario s = parse_scenario(j, "x", p);
  ASSERT_EQ(s.ddp.bucket_bytes().size(), 2u);  // 2 MB (>= 1 MiB), then 4 MB (>= 2 MiB)
  EXPECT_NEAR(s.ddp_host_s(), 1.23e-3, 1e-12);
  EXPECT_NEAR(s.loop_host_s(), 1.23e-3, 1e-12);
  j["node"]["gpus"] = 1;
  EXPECT_EQ(parse_scenario(j, "x", p).ddp_host_s(), 0.0);
  j["ddp"] = {{"gradient_bytes", 1e8}, {"host_s_per_parameter", 10e-6}};
  try {
    parse_scenario(j, "x.json", p);
    FAIL() << "a per-parameter cost without parameter_bytes was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ddp.host_s_per_parameter"), std::string::npos) << e.what();
  }
}

// calibrate's nvJPEG record (decode.gpu_nvjpeg, since the sixtieth session) reads back; a key it never writes does not.
TEST(Profile, GpuJpegDecodeRecordReadsBack) {
  json doc = {{"schema", "pipeplan-profile/1"},
              {"decode", {{"gpu_nvjpeg", json::array({{{"width", 500}, {"height", 375}, {"bytes", 110000},
                                                        {"s_per_image", 0.0009}, {"batched_s_per_image", 0.0002},
                                                        {"batch", 64}}})}}}};
  EXPECT_NO_THROW(parse_profile(doc, "p.json", nullptr));
  doc["decode"]["gpu_nvjpeg"][0]["images"] = 3;
  EXPECT_THROW(parse_profile(doc, "p.json", nullptr), InputError);
}

// NCCL's latency model (src/graph/tuning.cc) counts a ring all-reduce's network steps as 2 (nodes - 1), an all-gather's
// as nodes - 1, and its tree's as 2 log2(nodes), by hand: 2 nodes 2 / 1 / 2, 3 nodes 4 / 2 / 4, 128 nodes 254 / 127 / 14.
TEST(Collectives, NetworkCrossingsFollowNcclsRingAndTree) {
  EXPECT_EQ(ring_network_crossings(true, 1), 0);
  EXPECT_EQ(tree_network_crossings(1), 0);
  EXPECT_EQ(ring_network_crossings(true, 2), 2);
  EXPECT_EQ(ring_network_crossings(false, 2), 1);
  EXPECT_EQ(tree_network_crossings(2), 2);
  EXPECT_EQ(ring_network_crossings(true, 3), 4);
  EXPECT_EQ(ring_network_crossings(false, 3), 2);
  EXPECT_EQ(tree_network_crossings(3), 4);
  EXPECT_EQ(ring_network_crossings(true, 128), 254);
  EXPECT_EQ(ring_network_crossings(false, 128), 127);
  EXPECT_EQ(tree_network_crossings(128), 14);
}

// The model keeps the latency of the nodes nccl-tests ran on; a job on more nodes is told so, with the crossings at
// its scale, and a job within the measurement, one that sets its own latency, or one without collectives is not.
TEST(Collectives, AJobBeyondTheMeasuredNodesIsToldItsLatencyIsKept) {
  Profile p;
  p.nccl.inter_node.nodes = 2;
  p.nccl.inter_node.gpus = 16;
  p.nccl.inter_node.all_reduce = {true, 40e-6, 20e9};
  Scenario s;
  s.node.gpus = 8;
  s.ddp.gradient_bytes = 100e6;
  s.cluster.nodes = 2;
  EXPECT_FALSE(collective_scale_note(s, p).has_value());
  s.cluster.nodes = 16;
  const auto note = collective_scale_note(s, p);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("nccl-tests across 2 nodes: 40 us"), std::string::npos) << *note;
  EXPECT_NE(note->find("30 times an all-reduce across 16 nodes against 2 there (its tree 8)"), std::string::npos) << *note;
  s.cluster.inter_node_latency_s = 1e-3;  // the user's own what-if latency: nothing kept from elsewhere
  EXPECT_FALSE(collective_scale_note(s, p).has_value());
  s.cluster.inter_node_latency_s = -1.0;
  s.ddp.gradient_bytes = 0.0;  // no gradient all-reduce, no FSDP: no collective
  EXPECT_FALSE(collective_scale_note(s, p).has_value());
  // a bandwidth-only what-if with nothing measured across nodes keeps the on-node latency, then the placeholder's
  s.ddp.gradient_bytes = 100e6;
  s.cluster.inter_node_bus_bytes_per_s = 25e9;
  p.nccl.inter_node = {};
  p.nccl.all_reduce = {true, 12e-6, 200e9};
  ASSERT_TRUE(collective_scale_note(s, p).has_value());
  EXPECT_NE(collective_scale_note(s, p)->find("measured on one node: 12 us"), std::string::npos);
  p.nccl.all_reduce = {};
  EXPECT_NE(collective_scale_note(s, p)->find("placeholder"), std::string::npos);
}
