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

}  // namespace pipeplan
