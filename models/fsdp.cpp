#include "models/fsdp.hpp"

#include <algorithm>

#include "models/cost_models.hpp"

namespace pipeplan {

std::vector<FsdpOp> fsdp_step_ops(const FsdpConfig& f) {
  std::vector<FsdpOp> ops;
  const int units = static_cast<int>(f.unit_parameter_bytes.size());
  auto gather = [&](int u, bool backward) {
    ops.push_back({FsdpOp::Kind::kAllGather, u, backward, f.unit_parameter_bytes[u]});
  };
  auto scatter = [&](int u) {
    ops.push_back({FsdpOp::Kind::kReduceScatter, u, true, f.unit_parameter_bytes[u] * f.gradient_bytes_per_parameter_byte});
  };
  for (int u = 0; u < units; ++u) gather(u, false);
  if (!f.reshard_after_forward) {
    for (int u = units - 1; u >= 0; --u) scatter(u);
    return ops;
  }
  gather(units - 1, true);
  for (int u = units - 1; u >= 0; --u) {
    if (f.backward_prefetch == FsdpBackwardPrefetch::kNone) {
      scatter(u);
      if (u > 0) gather(u - 1, true);
    } else {
      if (u > 0) gather(u - 1, true);
      scatter(u);
    }
  }
  return ops;
}

double fsdp_op_s(const FsdpOp& op, const NcclProfile& nccl, int ranks) {
  const CollectiveModel& measured = op.kind == FsdpOp::Kind::kAllGather ? nccl.all_gather : nccl.reduce_scatter;
  return collective_time_s(measured.present ? measured : kPlaceholderCollective, op.bytes, all_gather_bus_factor(ranks));
}

double fsdp_comm_s_per_step(const FsdpConfig& f, const NcclProfile& nccl, int ranks) {
  double total = 0.0;
  for (const auto& op : fsdp_step_ops(f)) total += fsdp_op_s(op, nccl, ranks);
  return total;
}

double compute_beside_comm_s(double work_s, double comm_left_s, double kept) {
  if (comm_left_s <= 0.0 || kept >= 1.0) return work_s;
  const double done_beside = comm_left_s * kept;  // the work done while the collective still runs
  return work_s <= done_beside ? work_s / kept : comm_left_s + (work_s - done_beside);
}

}  // namespace pipeplan
