// FSDP's collectives (models/fsdp.hpp) and the scenario's fsdp section against hand calculations and PyTorch's
// documented FSDP semantics.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/analytic.hpp"
#include "models/fsdp.hpp"
#include "models/input_error.hpp"
#include "models/profile.hpp"
#include "models/scenario.hpp"

using namespace pipeplan;
using nlohmann::json;

namespace {

// "AG0 AG1 ..." for the ops' kinds, units and phase (b: an all-gather for backward)
std::string order(const std::vector<FsdpOp>& ops) {
  std::string out;
  for (const auto& op : ops) {
    if (!out.empty()) out += ' ';
    out += (op.kind == FsdpOp::Kind::kAllGather ? "AG" : "RS") + std::to_string(op.unit) +
           (op.kind == FsdpOp::Kind::kAllGather && op.backward ? "b" : "");
  }
  return out;
}

FsdpConfig three_units(FsdpBackwardPrefetch prefetch, bool reshard = true) {
  FsdpConfig f;
  f.unit_parameter_bytes = {100, 200, 300};
  f.backward_prefetch = prefetch;
  f.reshard_after_forward = reshard;
  return f;
}

}  // namespace

// FSDP issues forward all-gathers in order; backward gathers each unit again (FULL_SHARD) and reduce-scatters its
// gradients after its backward. BACKWARD_PRE issues the next unit's gather before this unit's reduce-scatter, None
// after it; SHARD_GRAD_OP keeps the parameters from forward and only reduce-scatters.
TEST(Fsdp, IssueOrderFollowsBackwardPrefetch) {
  EXPECT_EQ(order(fsdp_step_ops(three_units(FsdpBackwardPrefetch::kBackwardPre))),
            "AG0 AG1 AG2 AG2b AG1b RS2 AG0b RS1 RS0");
  EXPECT_EQ(order(fsdp_step_ops(three_units(FsdpBackwardPrefetch::kBackwardPost))),
            "AG0 AG1 AG2 AG2b AG1b RS2 AG0b RS1 RS0");
  EXPECT_EQ(order(fsdp_step_ops(three_units(FsdpBackwardPrefetch::kNone))), "AG0 AG1 AG2 AG2b RS2 AG1b RS1 AG0b RS0");
  EXPECT_EQ(order(fsdp_step_ops(three_units(FsdpBackwardPrefetch::kBackwardPre, false))), "AG0 AG1 AG2 RS2 RS1 RS0");
}

// nccl-tests: an all-gather or reduce-scatter of B bytes (the whole buffer) over n ranks moves B (n-1)/n on the bus.
TEST(Fsdp, OpTimeIsLatencyPlusBusBytesOverBandwidth) {
  NcclProfile nccl;
  nccl.all_gather = {true, 1e-5, 1e11};
  nccl.reduce_scatter = {true, 2e-5, 5e10};
  FsdpConfig f = three_units(FsdpBackwardPrefetch::kBackwardPre);
  f.gradient_bytes_per_parameter_byte = 2.0;  // fp32 gradients of bf16 parameters
  const FsdpOp gather{FsdpOp::Kind::kAllGather, 0, false, 8e8};
  EXPECT_DOUBLE_EQ(fsdp_op_s(gather, nccl, 8), 1e-5 + 8e8 * 7 / 8 / 1e11);
  const FsdpOp scatter{FsdpOp::Kind::kReduceScatter, 0, true, 8e8};
  EXPECT_DOUBLE_EQ(fsdp_op_s(scatter, nccl, 4), 2e-5 + 8e8 * 3 / 4 / 5e10);
  // a step: 600 B gathered twice at 1e11, 1,200 B scattered at 5e10, over 2 ranks
  EXPECT_NEAR(fsdp_comm_s_per_step(f, nccl, 2), 6 * 1e-5 + 2 * 600 * 0.5 / 1e11 + 3 * 2e-5 + 1200 * 0.5 / 5e10, 1e-15);
  // without a measured model: the documented placeholder (20 us, 100 GB/s)
  EXPECT_DOUBLE_EQ(fsdp_op_s(gather, NcclProfile{}, 2), 2e-5 + 4e8 / 1e11);
}

TEST(Fsdp, ComputeBesideACollectiveRunsAtKeptSpeedUntilItEnds) {
  EXPECT_DOUBLE_EQ(compute_beside_comm_s(0.010, 0.0, 0.8), 0.010);     // nothing running
  EXPECT_DOUBLE_EQ(compute_beside_comm_s(0.004, 0.010, 0.8), 0.005);   // all of it beside: 4 ms at 0.8
  EXPECT_DOUBLE_EQ(compute_beside_comm_s(0.010, 0.005, 0.8), 0.011);   // 4 ms done in the first 5, 6 ms after
  EXPECT_DOUBLE_EQ(compute_beside_comm_s(0.010, 0.005, 1.0), 0.010);
}

TEST(Fsdp, ScenarioSectionAndTheCommStage) {
  Profile p;
  p.nccl.all_gather = p.nccl.reduce_scatter = {true, 0.0, 1e10};
  json j = {{"node", {{"gpus", 2}}}, {"loader", {{"batch_size", 16}}}, {"training", {{"step_s", 0.05}}},
            {"fsdp", {{"unit_parameter_bytes", {{"count", 4}, {"bytes", 2e8}}}}}};
  const Scenario s = parse_scenario(j, "f.json", p);
  EXPECT_EQ(s.fsdp.unit_parameter_bytes.size(), 4u);
  EXPECT_TRUE(s.fsdp.reshard_after_forward);
  EXPECT_EQ(s.fsdp.all_gathers_in_flight, 2);
  // 12 collectives of 2e8 B at 1e10 B/s over 2 ranks: 10 ms each, 120 ms a step, so 2 x 16 / 0.12 samples/s
  bool found = false;
  for (const auto& c : stage_capacities(s, p))
    if (c.stage == "comm") {
      found = true;
      EXPECT_NEAR(c.samples_per_s, 2 * 16 / 0.120, 1e-6);
    }
  EXPECT_TRUE(found);
  json both = j;
  both["ddp"] = {{"gradient_bytes", 1e9}};
  EXPECT_THROW(parse_scenario(both, "f.json", p), InputError);  // DDP or FSDP, not both
  json bad = j;
  bad["fsdp"]["backward_prefetch"] = "pre";
  EXPECT_THROW(parse_scenario(bad, "f.json", p), InputError);
  bad = j;
  bad["fsdp"].erase("unit_parameter_bytes");
  EXPECT_THROW(parse_scenario(bad, "f.json", p), InputError);
  bad = j;
  bad["fsdp"]["unit_parameter_bytes"] = json::array({1e8, -5});
  try {
    parse_scenario(bad, "f.json", p);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fsdp.unit_parameter_bytes[1]"), std::string::npos) << e.what();
  }
}
