// Cost models: small pure functions that turn profile and scenario numbers into times.
// Each is tested against a hand calculation in tests/models_test.cpp.
#pragma once

#include <vector>

#include "models/profile.hpp"

namespace pipeplan {

// Time of one copy of `bytes` on `curve`: interpolates the measured rate against log(bytes)
// between points, uses the latency + bandwidth fit below the first point, holds the last
// point's rate beyond the last.
double copy_time_s(const CopyCurve& curve, double bytes);

// Per-core speed (relative to one busy core) when `busy` cores are busy: linear interpolation
// of the measured curve, flat beyond its ends.
double relative_core_speed(const std::vector<SpeedPoint>& curve, double busy);

// Total CPU capacity (in single-idle-core units) when `runnable` threads compete for `cores`:
// min(runnable, cores) x relative speed, less the oversubscription cost when runnable > cores.
double cpu_capacity_cores(const CpuProfile& cpu, int cores, int runnable);

// Time factor of worker `worker` of `workers` whose speeds spread with coefficient of variation
// `cv`: the ((worker + 0.5) / workers) quantile of a lognormal of mean 1 (deterministic, so a
// prediction does not hang on one random draw of which cores are slow). Worker 0 is the slowest.
double worker_time_factor(double cv, int worker, int workers);

// nccl-tests bus-bandwidth factors (doc/PERFORMANCE.md).
double all_reduce_bus_factor(int ranks);
double all_gather_bus_factor(int ranks);

// Time of one collective of `bytes` (the whole buffer) over `ranks` ranks.
double collective_time_s(const CollectiveModel& model, double bytes, double bus_factor);

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
