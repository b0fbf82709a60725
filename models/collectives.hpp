#pragma once
// The collectives a job runs and the models that time them: on one node the profile's nccl (measured on the node's
// GPUs), across several nodes (scenario cluster.nodes) the network's. Pure.

#include <optional>
#include <string>

#include "models/profile.hpp"
#include "models/scenario.hpp"

namespace pipeplan {

// The job's all-reduce, all-gather and reduce-scatter models, as an NcclProfile over every rank of the job
// (Scenario::world_size). One node: the profile's nccl, each collective not measured the placeholder. Several nodes:
// the scenario's cluster.inter_node_bus_bytes_per_s where given (for every collective; its latency
// cluster.inter_node_latency_s, else the profile's inter-node or on-node one for that collective, else the
// placeholder's), else the profile's nccl.inter_node; a collective neither gives is left absent (see
// missing_inter_node_figures).
NcclProfile job_collectives(const Scenario& s, const Profile& p);

// Where a job across nodes communicates but nothing gives the network's figures for a collective it runs: which one
// ("all_reduce", ...); nullopt where every collective it needs has a model.
std::optional<std::string> missing_inter_node_figures(const Scenario& s, const Profile& p);

// NCCL's network crossings in one collective over `nodes` nodes (src/graph/tuning.cc's latency model): its ring
// crosses the network 2 (nodes - 1) times an all-reduce and nodes - 1 times an all-gather or reduce-scatter; its tree
// (all-reduce only) 2 ceil(log2 nodes) times. 0 on one node.
int ring_network_crossings(bool all_reduce, int nodes);
int tree_network_crossings(int nodes);

// Where a job's collectives are timed at a latency measured on fewer nodes than the job spans (the profile's
// nccl.inter_node, or the on-node one where the scenario gives only a bandwidth), the sentence that says so and how
// many more times NCCL crosses the network at the job's scale: the model keeps the latency, so a small bucket's
// collective is understated there. nullopt where the scenario sets cluster.inter_node_latency_s, the job runs no
// collective across nodes, or the measurement spans the job's nodes.
std::optional<std::string> collective_scale_note(const Scenario& s, const Profile& p);

}  // namespace pipeplan
