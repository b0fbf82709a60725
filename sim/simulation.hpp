// simulate(): one training node's input pipeline as discrete events on SimGrid.
//
//   storage -> workers (load+decode+augment, collate) -> [pin thread] -> main thread
//     -> H2D copy (copy or compute stream) -> compute stream -> [DDP all-reduce]
//
// plus, in the same run, the same job with input free (the synthetic-data baseline).
// SimGrid allows one Engine per process: call simulate() at most once per process (sweeps
// fork a child per point).
#pragma once

#include <algorithm>

#include <cstdint>
#include <string>
#include <vector>

#include "models/profile.hpp"
#include "models/scenario.hpp"
#include "sim/trace.hpp"

namespace pipeplan::sim {

struct SimOptions {
  std::int64_t steps = 0;  // 0: the scenario's training.steps
  bool record_trace = false;
};

struct StageReport {
  std::string name;                 // storage, workers, main_receive, pin_thread, host_loop, h2d_copy, gpu_compute, comm
  std::string description;
  double busy_fraction = 0.0;       // of the measured window, per unit (a worker, a thread, a stream)
  double capacity_samples_per_s = 0.0;  // node-wide; <0 when unbounded (not used by this scenario)
};

struct GpuReport {
  double busy_fraction = 0.0;                  // compute kernels / window (mean over GPUs)
  double idle_waiting_for_data_fraction = 0.0;  // main thread waited for a batch
  double idle_waiting_for_copy_fraction = 0.0;  // kernels waited for the H2D copy
  double idle_host_fraction = 0.0;              // main thread busy (Python, GIL, syncs)
  double exposed_comm_fraction = 0.0;           // collectives not hidden behind compute (their own time)
  // at a collective, waiting for another rank to reach it (a slower rank's batch, loader or host): DDP's all-reduce
  // and FSDP's collectives start only once every rank's part is in
  double idle_waiting_for_ranks_fraction = 0.0;
};

struct SimResult {
  std::int64_t steps = 0;
  std::int64_t warmup_steps = 0;
  double window_s = 0.0;                 // simulated time of the measured steps
  double simulated_end_s = 0.0;
  double samples_per_s = 0.0;            // node-wide
  double tokens_per_s = 0.0;             // node-wide, a sequence's real tokens (0 without a sequence section)
  double token_slots_per_s = 0.0;        // node-wide, the batches' token positions, padding included
  double padding_fraction() const { return token_slots_per_s > 0.0 ? 1.0 - tokens_per_s / token_slots_per_s : 0.0; }
  double steps_per_s = 0.0;
  double step_mean_s = 0.0, step_p50_s = 0.0, step_p80_s = 0.0, step_p90_s = 0.0, step_p95_s = 0.0, step_p99_s = 0.0;
  double long_step_fraction = 0.0;       // steps over 1.5x the median step (sim/step_stats.hpp)
  bool step_p90_on_edge = false;         // the step time rises steeply around the p90 (sim/step_stats.hpp)
  std::vector<StageReport> stages;
  GpuReport gpu;
  double baseline_samples_per_s = 0.0;
  double baseline_step_mean_s = 0.0;
  double mean_batches_in_flight = 0.0;   // per rank, time-averaged over the window
  double mean_batch_latency_s = 0.0;     // index sent -> batch handed to the loop
  double out_of_order_fraction = 0.0;    // consecutive batches finished by their workers in reverse order (sim/arrival_order.hpp)
  double batches_delivered_per_s = 0.0;  // per rank
  double mean_busy_cores = 0.0;          // node-wide: CPU work running at once (workers, pin and main threads), window mean
  // over every cold read of the run: the reads in flight during a read, itself included, length-weighted (0: none)
  double storage_readers_in_flight_mean = 0.0;
  double storage_wait_s_per_file = 0.0;  // over every cold read of the run: a file's latency and device time (0: none)
  // cold per-sample reads only: workers in their batch's reads and loads during one, itself included (0: none)
  double storage_getitem_in_flight_mean = 0.0;
  // a worker's time waiting on storage (its files' opens, its cold reads), holding no core: beside the workers
  // stage's busy (CPU) share, what else fills a worker's time
  double worker_storage_wait_fraction = 0.0;
  double gil_wait_main_fraction = 0.0;   // the training loop's time waiting for the pin thread to drop the GIL
  double gil_wait_pin_fraction = 0.0;    // the pin thread's time waiting for the loop to drop it
  double gil_held_main_fraction = 0.0;   // the GIL held by the loop's Python (and an unpinned batch's receive)
  double gil_held_pin_fraction = 0.0;    // held by the pin thread (a batch's receive)
  double memory_map_wait_main_fraction = 0.0;  // the loop stalled while the pin thread worked on a mapping
  double memory_map_held_pin_fraction = 0.0;   // the pin thread mapping, first-touching, unmapping batches
  double main_wait_for_batch_fraction = 0.0;   // the loop in next() with no batch ready (from a worker or the pin thread)
  // sequence.new_shape_host_s: the loop building kernel plans for batch shapes its process had not run, in the window
  double new_shape_fraction = 0.0;             // of the window's time (per rank)
  double new_shapes_per_step = 0.0;            // new shapes met per step of the window (per rank)
  double gil_busy_fraction() const { return std::min(1.0, gil_held_main_fraction + gil_held_pin_fraction); }
  std::int64_t epochs_started = 0;
  std::int64_t des_events = 0;           // activities simulated (for the benchmark)
  // loader.replay_worker_batches only: batches a worker played after its list ran out (played again from the start)
  std::int64_t replay_wrapped_batches = 0;
};

// Runs the simulation. Throws std::runtime_error if it cannot make progress.
SimResult simulate(const Scenario& scenario, const Profile& profile, const SimOptions& options, TraceRecorder& trace);

}  // namespace pipeplan::sim
