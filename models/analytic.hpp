// The analytic bound model: each stage's capacity in samples per second (node-wide), as a
// by-hand estimate would compute it from component costs. The slowest stage bounds
// throughput; the simulator exists for what this misses (bursts, head-of-line blocking,
// shared cores over time, the GIL, copies that do or do not overlap).
#pragma once

#include <string>
#include <vector>

#include "models/profile.hpp"
#include "models/scenario.hpp"

namespace pipeplan {

struct StageCapacity {
  std::string stage;
  double samples_per_s;  // +inf when the stage costs nothing
};

// Capacities of every stage the scenario uses, node-wide (all ranks).
std::vector<StageCapacity> stage_capacities(const Scenario& s, const Profile& p);

// collate_fn's time for a batch of `bytes` in a worker: the scenario's (scaled by the bytes over a whole batch's), or
// a memcpy of the batch, but at least the time to fill fresh shared memory with the batch, which is where a
// worker's default_collate writes (calibrated ipc.shm_write_s_per_byte).
double worker_collate_s(const Scenario& s, const Profile& p, double bytes);

// Threads of the input pipeline on the node (workers, main and pin threads, all ranks).
int input_threads(const Scenario& s);

}  // namespace pipeplan
