// FSDP (FullyShardedDataParallel): each unit's parameters all-gathered before its forward (and, resharded after
// forward, again before its backward), its gradients reduce-scattered after its backward, on NCCL's stream in the order
// the training loop issues them. A scenario's `fsdp` section (docs/scenario.md); the simulator runs these collectives
// across ranks (sim/simulation.cpp), the analytic bound adds up their time. Pure: no SimGrid.
#pragma once

#include <vector>

#include "models/profile.hpp"

namespace pipeplan {

// FSDP's backward_prefetch: when the all-gather of the next unit backward (unit u - 1) is issued.
enum class FsdpBackwardPrefetch {
  kBackwardPre,   // before unit u's gradients are computed (BackwardPrefetch.BACKWARD_PRE, FSDP's default)
  kBackwardPost,  // after them, before unit u's reduce-scatter (BACKWARD_POST)
  kNone,          // when unit u - 1's backward starts, after unit u's reduce-scatter (None)
};

struct FsdpConfig {
  std::vector<double> unit_parameter_bytes;  // unsharded parameter bytes of each FSDP unit, in forward order; empty: off
  double gradient_bytes_per_parameter_byte = 1.0;  // reduce-scatter bytes over all-gather bytes (reduce dtype / param dtype)
  bool reshard_after_forward = true;  // FULL_SHARD: gather again for backward; false: SHARD_GRAD_OP
  int all_gathers_in_flight = 2;      // forward: unit u's all-gather may start once unit u - this has run its forward
  FsdpBackwardPrefetch backward_prefetch = FsdpBackwardPrefetch::kBackwardPre;
  bool enabled() const { return !unit_parameter_bytes.empty(); }
};

// One collective of a step, in the order the loop issues it (every rank alike).
struct FsdpOp {
  enum class Kind { kAllGather, kReduceScatter } kind = Kind::kAllGather;
  int unit = 0;
  bool backward = false;  // an all-gather for backward (resharded after forward), or any reduce-scatter
  double bytes = 0.0;     // the whole (unsharded) buffer, as nccl-tests counts it
};

// A step's collectives in issue order: forward all-gathers 0..U-1, then backward by backward_prefetch (BACKWARD_PRE:
// AG(U-1), then for u = U-1..0: AG(u-1) before RS(u); POST the same order, AG(u-1) issued after u's gradients; None:
// RS(u) before AG(u-1)). Without reshard_after_forward no backward all-gathers.
std::vector<FsdpOp> fsdp_step_ops(const FsdpConfig& f);

// One collective's time over `ranks` ranks from the profile's models (nccl-tests' bus factor (n-1)/n for both), the
// documented placeholder where the profile has no model (as DDP's all-reduce: docs/model.md).
double fsdp_op_s(const FsdpOp& op, const NcclProfile& nccl, int ranks);

// The sum of a step's collective times: the comm stage's time a step when nothing overlaps (the analytic bound).
double fsdp_comm_s_per_step(const FsdpConfig& f, const NcclProfile& nccl, int ranks);

// How long `work_s` of compute takes when it starts with `comm_left_s` of a collective still to run beside it, at
// `kept` of its speed while that collective runs (compute.gemm_kept_with_nccl: NCCL's kernels share the SMs).
double compute_beside_comm_s(double work_s, double comm_left_s, double kept);

}  // namespace pipeplan
