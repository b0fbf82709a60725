#include "models/collectives.hpp"

namespace pipeplan {

namespace {

const CollectiveModel& first_present(const CollectiveModel& a, const CollectiveModel& b) { return a.present ? a : b; }

}  // namespace

NcclProfile job_collectives(const Scenario& s, const Profile& p) {
  NcclProfile job = p.nccl;
  job.gpus = s.world_size();
  if (s.cluster.nodes <= 1) {
    for (CollectiveModel* m : {&job.all_reduce, &job.all_gather, &job.reduce_scatter})
      if (!m->present) *m = kPlaceholderCollective;
    return job;
  }
  const auto& net = p.nccl.inter_node;
  auto across_nodes = [&](const CollectiveModel& measured_across, const CollectiveModel& on_node) {
    if (s.cluster.inter_node_bus_bytes_per_s <= 0.0) return measured_across;
    // the scenario's network: its bandwidth, and a latency from the nearest measurement where it gives none
    const double latency_s = s.cluster.inter_node_latency_s >= 0.0
                                 ? s.cluster.inter_node_latency_s
                                 : first_present(measured_across, first_present(on_node, kPlaceholderCollective)).latency_s;
    return CollectiveModel{true, latency_s, s.cluster.inter_node_bus_bytes_per_s};
  };
  job.all_reduce = across_nodes(net.all_reduce, p.nccl.all_reduce);
  job.all_gather = across_nodes(net.all_gather, p.nccl.all_gather);
  job.reduce_scatter = across_nodes(net.reduce_scatter, p.nccl.reduce_scatter);
  return job;
}

std::optional<std::string> missing_inter_node_figures(const Scenario& s, const Profile& p) {
  if (s.cluster.nodes <= 1) return std::nullopt;
  const NcclProfile job = job_collectives(s, p);
  if (s.ddp.gradient_bytes > 0.0 && !job.all_reduce.present) return "all_reduce";
  if (s.fsdp.enabled() && !job.all_gather.present) return "all_gather";
  if (s.fsdp.enabled() && !job.reduce_scatter.present) return "reduce_scatter";
  return std::nullopt;
}

}  // namespace pipeplan
