#include "models/collectives.hpp"

#include <cstdio>

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

int ring_network_crossings(bool all_reduce, int nodes) {
  if (nodes <= 1) return 0;
  return all_reduce ? 2 * (nodes - 1) : nodes - 1;
}

int tree_network_crossings(int nodes) {
  if (nodes <= 1) return 0;
  int levels = 0;
  while ((1 << levels) < nodes) ++levels;  // ceil(log2 nodes): the tree's depth over the nodes
  return 2 * levels;
}

std::optional<std::string> collective_scale_note(const Scenario& s, const Profile& p) {
  const int nodes = s.cluster.nodes;
  if (nodes <= 1 || s.cluster.inter_node_latency_s >= 0.0) return std::nullopt;
  const bool all_reduce = s.all_reduces_gradients();
  if (!all_reduce && !s.shards_parameters()) return std::nullopt;
  // the latency job_collectives keeps: the profile's across nodes, else (a bandwidth-only what-if) the on-node one,
  // else the placeholder's
  const auto& across = all_reduce ? p.nccl.inter_node.all_reduce : p.nccl.inter_node.all_gather;
  const auto& on_node = all_reduce ? p.nccl.all_reduce : p.nccl.all_gather;
  const int measured_nodes = across.present ? p.nccl.inter_node.nodes : 1;
  if (measured_nodes >= nodes) return std::nullopt;
  const NcclProfile job = job_collectives(s, p);
  const CollectiveModel& timed = all_reduce ? job.all_reduce : job.all_gather;
  if (!timed.present) return std::nullopt;
  const std::string source = across.present    ? "measured by nccl-tests across " + std::to_string(measured_nodes) + " nodes"
                             : on_node.present ? std::string("measured on one node")
                                               : std::string("from pipeplan's placeholder (nothing measured)");
  const char* what = all_reduce ? "an all-reduce" : "an all-gather";
  const std::string tree =
      all_reduce ? " (its tree " + std::to_string(tree_network_crossings(nodes)) + ")" : std::string();
  char line[512];
  std::snprintf(line, sizeof line,
                "the collectives keep a latency %s: %.0f us %s; NCCL's ring crosses the network %d times %s across "
                "%d nodes against %d there%s, so small buckets' collectives are understated here: run nccl-tests "
                "across %d nodes (nccl_tests_fit.py) or set cluster.inter_node_latency_s",
                source.c_str(), 1e6 * timed.latency_s, what, ring_network_crossings(all_reduce, nodes), what, nodes,
                ring_network_crossings(all_reduce, measured_nodes), tree.c_str(), nodes);
  return std::string(line);
}

}  // namespace pipeplan
