// Bad input of every kind: exit code 2 and exactly one line on stderr that names the file,
// the JSON path (or option), the bad value and what was expected. Nothing crashes or hangs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "run_pipeplan.hpp"

using pipeplan::test::run_pipeplan;
using pipeplan::test::write_temp;

namespace {

const char* kGood = R"({"loader": {"batch_size": 32, "num_workers": 2}, "training": {"step_s": 0.01, "steps": 50}})";

struct BadCase {
  const char* label;
  std::string scenario;              // written to a temp file unless empty
  std::vector<std::string> args;     // "{S}" is replaced by the scenario path
  std::vector<std::string> must_mention;
};

void expect_one_line_exit_2(const BadCase& c) {
  std::string path;
  if (!c.scenario.empty()) path = write_temp(c.scenario);
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(a == "{S}" ? path : a);
  const auto r = run_pipeplan(args);
  EXPECT_EQ(r.exit_code, 2) << c.label << ": " << r.err;
  ASSERT_FALSE(r.err.empty()) << c.label;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << c.label << ": not one line: " << r.err;
  for (const auto& m : c.must_mention) EXPECT_NE(r.err.find(m), std::string::npos) << c.label << ": missing '" << m << "' in " << r.err;
  if (!path.empty()) {
    for (const auto& m : c.must_mention) {
      if (m == "{S}") {
        EXPECT_NE(r.err.find(path), std::string::npos) << c.label;
      }
    }
    std::remove(path.c_str());
  }
  EXPECT_TRUE(r.out.empty()) << c.label << ": printed a report: " << r.out;
}

}  // namespace

TEST(CliErrors, MalformedFiles) {
  std::string garbage;
  for (int i = 0; i < 256; ++i) garbage += static_cast<char>((i * 37 + 11) & 0xff);
  const std::vector<BadCase> cases = {
      {"truncated", R"({"loader": {"batch_size": 3)", {"simulate", "{S}"}, {"malformed JSON"}},
      {"not json", "hello world", {"simulate", "{S}"}, {"malformed JSON"}},
      {"binary garbage", garbage, {"simulate", "{S}"}, {"malformed JSON"}},
      {"empty file", " ", {"simulate", "{S}"}, {"malformed JSON"}},
      {"array at top", "[1, 2]", {"simulate", "{S}"}, {"a JSON object"}},
      {"missing file", "", {"simulate", "/nonexistent/scenario.json"}, {"/nonexistent/scenario.json", "cannot open"}},
      {"directory", "", {"simulate", "/tmp"}, {"/tmp", "got a directory"}},
      {"endless device", "", {"simulate", "/dev/zero"}, {"/dev/zero", "more than 256 MiB"}},  // refused, not read forever
      {"endless profile", kGood, {"simulate", "{S}", "--profile", "/dev/zero"}, {"/dev/zero", "more than 256 MiB"}},
      {"missing profile", kGood, {"simulate", "{S}", "--profile", "/nonexistent/p.json"}, {"/nonexistent/p.json"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

TEST(CliErrors, BadValues) {
  const std::vector<BadCase> cases = {
      {"wrong type", R"({"loader": {"num_workers": "eight"}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"loader.num_workers", "\"eight\"", "an integer"}},
      {"negative workers", R"({"loader": {"num_workers": -1}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"loader.num_workers", "-1"}},
      {"fractional batch", R"({"loader": {"batch_size": 2.5}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"loader.batch_size", "2.5", "an integer"}},
      {"zero batch", R"({"loader": {"batch_size": 0}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"loader.batch_size", "0", "[1, 16777216]"}},  // a whole bound in full, not 1.67772e+07
      {"zero step", R"({"training": {"step_s": 0}})", {"simulate", "{S}"}, {"training.step_s", "> 0"}},
      {"negative step", R"({"training": {"step_s": -0.1}})", {"simulate", "{S}"}, {"training.step_s", "-0.1"}},
      {"zero item bytes", R"({"dataset": {"item_bytes": 0}, "training": {"step_s": 0.01}})", {"simulate", "{S}"}, {"dataset.item_bytes"}},
      {"hit ratio > 1", R"({"storage": {"page_cache_hit_ratio": 1.5}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"storage.page_cache_hit_ratio", "1.5", "[0, 1]"}},
      {"missing step", R"({"loader": {"batch_size": 8}})", {"simulate", "{S}"}, {"training.step_s", "required"}},
      {"bad distribution", R"({"dataset": {"load_s_per_sample": {"mean": 0.01, "cv": -1}}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"dataset.load_s_per_sample.cv"}},
      {"bad choice", R"({"transfer": {"copy_stream": "sideways"}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"transfer.copy_stream", "\"sideways\"", "\"side\""}},
      {"bad worker_reads", R"({"storage": {"worker_reads": "per_file"}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"storage.worker_reads", "\"per_file\"", "\"per_sample\"", "\"per_batch\""}},
      {"zero read pieces", R"({"storage": {"read_pieces_per_batch": 0}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"storage.read_pieces_per_batch", "0", "[1, 16777216]"}},
      {"bad device_share", R"({"storage": {"device_share": "shared"}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"storage.device_share", "\"shared\"", "\"at_start\"", "\"follows_readers\""}},
      {"bad reader_share_from", R"({"storage": {"reader_share_from": "idle"}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"storage.reader_share_from", "\"idle\"", "\"back_to_back\"", "\"with_work\""}},
      {"bad device_bandwidth_from", R"({"storage": {"device_bandwidth_from": "dd"}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"storage.device_bandwidth_from", "\"dd\"", "\"fio\"", "\"fio_or_buffered_peak\""}},
      {"too many steps", R"({"training": {"step_s": 0.01, "steps": 1e12}})", {"simulate", "{S}"}, {"training.steps"}},
      {"huge workers", R"({"loader": {"num_workers": 100000}, "training": {"step_s": 0.01}})", {"simulate", "{S}"}, {"loader.num_workers"}},
      {"duty > 1", R"({"training": {"step_s": 0.01, "step_s_vs_gpu_duty": [{"duty": 0, "step_s": 0.01}, {"duty": 1.5, "step_s": 0.012}]}})",
       {"simulate", "{S}"}, {"training.step_s_vs_gpu_duty[1].duty", "1.5", "[0, 1]"}},
      {"duty step 0", R"({"training": {"step_s": 0.01, "step_s_vs_gpu_duty": [{"duty": 0, "step_s": 0}]}})",
       {"simulate", "{S}"}, {"training.step_s_vs_gpu_duty[0].step_s", "0"}},
      {"negative map needs", R"({"training": {"step_s": 0.01, "memory_map_needs_per_step": -3}})", {"simulate", "{S}"},
       {"training.memory_map_needs_per_step", "-3", "[0, 1000000]"}},
      {"negative copy call", R"({"transfer": {"copy_call_s_per_batch": -0.001}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"transfer.copy_call_s_per_batch", "-0.001", "[0, 60]"}},
      {"zero samples a file", R"({"dataset": {"samples_per_file": 0}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"dataset.samples_per_file", "0"}},
      {"negative open latency", R"({"storage": {"open_latency_s": -0.001}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"storage.open_latency_s", "-0.001", "[0, 10]"}},
      {"negative metadata rate", R"({"storage": {"metadata_ops_per_s": -5}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"storage.metadata_ops_per_s", "-5"}},
      {"negative store opens", "{}", {"budget", "--store-metadata-ops-per-s", "-5"}, {"--store-metadata-ops-per-s", "-5"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

TEST(CliErrors, UnknownKeysSuggestTheNearestKnownOne) {
  const std::vector<BadCase> cases = {
      {"typo", R"({"loader": {"num_worker": 4}, "training": {"step_s": 0.01}})", {"simulate", "{S}"},
       {"loader.num_worker", "did you mean \"num_workers\""}},
      {"top level", R"({"loaders": {}, "training": {"step_s": 0.01}})", {"simulate", "{S}"}, {"loaders", "did you mean \"loader\""}},
      {"pin typo", R"({"loader": {"pin_mem": true}, "training": {"step_s": 0.01}})", {"simulate", "{S}"}, {"did you mean \"pin_memory\""}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

TEST(CliErrors, ContradictorySettingsPyTorchRejects) {
  const std::vector<BadCase> cases = {
      {"prefetch without workers", R"({"loader": {"num_workers": 0, "prefetch_factor": 2}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"loader.prefetch_factor", "num_workers=0"}},
      {"persistent without workers", R"({"loader": {"persistent_workers": true}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"loader.persistent_workers", "num_workers"}},
      {"forward without backward", R"({"training": {"forward_s": 0.01}})", {"simulate", "{S}"}, {"training.backward_s"}},
      {"step disagrees with split", R"({"training": {"step_s": 0.5, "forward_s": 0.01, "backward_s": 0.02}})", {"simulate", "{S}"},
       {"training.step_s"}},
      {"drop_last leaves no batch", R"({"dataset": {"num_samples": 10}, "loader": {"batch_size": 32, "drop_last": true}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"dataset.num_samples"}},
      {"slow worker out of range", R"({"loader": {"num_workers": 2, "slow_worker": {"worker": 5, "factor": 2}}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"loader.slow_worker.worker"}},
      {"replayed time not positive", R"({"loader": {"num_workers": 2, "replay_worker_batches": [{"worker": 1, "batch_s": [0.1, -2]}]}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"loader.replay_worker_batches[0].batch_s[1]", "-2", "seconds in (0, 3600]"}},
      {"replay without times", R"({"loader": {"num_workers": 2, "replay_worker_batches": [{"worker": 0}]}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"loader.replay_worker_batches[0].batch_s", "a non-empty array of seconds"}},
      {"replayed worker out of range", R"({"loader": {"num_workers": 2, "replay_worker_batches": [{"worker": 2, "batch_s": [0.1]}]}, "training": {"step_s": 0.01}})",
       {"simulate", "{S}"}, {"loader.replay_worker_batches[0].worker"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

TEST(CliErrors, BadSequenceSections) {
  const char* seq = R"({"loader": {"batch_size": 8, "num_workers": 2}, "training": {"step_s": 0.01, "steps": 50},
                       "sequence": {"tokens_per_sample": {"mean": 300, "cv": 0.5}, "max_tokens": 512}})";
  const std::vector<BadCase> cases = {
      {"pack without a row length", R"({"training": {"step_s": 0.01}, "sequence": {"tokens_per_sample": 100, "collate": "pack"}})",
       {"simulate", "{S}"}, {"sequence.max_tokens", "collate=pack"}},
      {"bucket boundaries out of order", seq,
       {"simulate", "{S}", "--set", "sequence.collate=bucket", "--set", "sequence.bucket_boundaries_tokens=[256,64]"},
       {"sequence.bucket_boundaries_tokens[1]", "64", "above the previous boundary"}},
      {"item bytes beside a sequence", seq, {"simulate", "{S}", "--set", "dataset.item_bytes=1000"},
       {"dataset.item_bytes", "sequence.bytes_per_token"}},
      {"no lengths", R"({"training": {"step_s": 0.01}, "sequence": {"collate": "pad_to_longest"}})", {"simulate", "{S}"},
       {"sequence.tokens_per_sample", "required"}},
      {"a negative per-token step", seq, {"simulate", "{S}", "--set", "sequence.step_s_per_token=-1"},
       {"sequence.step_s_per_token", "-1"}},
      {"a sweep over a bad collate", seq, {"sweep", "{S}", "--vary", "sequence.collate=pack,padded"},
       {"sequence.collate", "padded"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

TEST(CliErrors, BadFsdpSections) {
  const char* fsdp = R"({"node": {"gpus": 2}, "training": {"step_s": 0.05, "steps": 50},
                        "fsdp": {"unit_parameter_bytes": {"count": 4, "bytes": 1e8}}})";
  const std::vector<BadCase> cases = {
      {"no units", R"({"node": {"gpus": 2}, "training": {"step_s": 0.05}, "fsdp": {}})", {"simulate", "{S}"},
       {"fsdp.unit_parameter_bytes", "required"}},
      {"a unit of no bytes", fsdp, {"simulate", "{S}", "--set", "fsdp.unit_parameter_bytes=[1e8,0]"},
       {"fsdp.unit_parameter_bytes[1]", "a number > 0"}},
      {"DDP beside FSDP", fsdp, {"simulate", "{S}", "--set", "ddp.gradient_bytes=1e9"}, {"ddp.gradient_bytes", "not both"}},
      {"an unknown prefetch", fsdp, {"simulate", "{S}", "--set", "fsdp.backward_prefetch=BACKWARD_PRE"},
       {"fsdp.backward_prefetch", "BACKWARD_PRE"}},
      {"a misspelt key", fsdp, {"simulate", "{S}", "--set", "fsdp.reshard_after_foward=false"},
       {"fsdp.reshard_after_foward", "reshard_after_forward"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

// A job across nodes that communicates needs the network's figures; the cluster's keys are checked like any other.
TEST(CliErrors, BadClusterSections) {
  const char* ddp = R"({"node": {"gpus": 2}, "training": {"step_s": 0.05, "steps": 50}, "ddp": {"gradient_bytes": 1e8}})";
  const std::vector<BadCase> cases = {
      {"nodes without the network", ddp, {"simulate", "{S}", "--set", "cluster.nodes=4"},
       {"cluster.nodes", "got 4", "cluster.inter_node_bus_bytes_per_s", "nccl.inter_node"}},
      {"no nodes", ddp, {"simulate", "{S}", "--set", "cluster.nodes=0"}, {"cluster.nodes", "[1, 100000]"}},
      {"a negative network", ddp, {"simulate", "{S}", "--set", "cluster.inter_node_bus_bytes_per_s=-1"},
       {"cluster.inter_node_bus_bytes_per_s", "-1"}},
      {"a misspelt key", ddp, {"simulate", "{S}", "--set", "cluster.node=2"}, {"cluster.node", "nodes"}},
      {"more nodes simulated than the job has", ddp, {"simulate", "{S}", "--set", "cluster.simulated_nodes=2"},
       {"cluster.simulated_nodes", "at most cluster.nodes (1)"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
  // without communication a job across nodes needs no network figures
  const std::string quiet = write_temp(kGood);
  EXPECT_EQ(run_pipeplan({"simulate", quiet, "--set", "cluster.nodes=8"}).exit_code, 0);
  std::remove(quiet.c_str());
}

TEST(CliErrors, BadSetPathsAndOptions) {
  const std::vector<BadCase> cases = {
      {"set without =", kGood, {"simulate", "{S}", "--set", "loader.num_workers"}, {"--set", "KEY.PATH=VALUE"}},
      {"set unknown key", kGood, {"simulate", "{S}", "--set", "loader.workers=4"}, {"loader.workers", "did you mean"}},
      {"set through a number", kGood, {"simulate", "{S}", "--set", "loader.batch_size.x=1"}, {"loader.batch_size"}},
      {"set bad value", kGood, {"simulate", "{S}", "--set", "loader.num_workers=-3"}, {"loader.num_workers", "-3"}},
      {"set empty key", kGood, {"simulate", "{S}", "--set", "loader..x=1"}, {"--set"}},
      {"steps zero", kGood, {"simulate", "{S}", "--steps", "0"}, {"--steps"}},
      {"steps not a number", kGood, {"simulate", "{S}", "--steps", "abc"}, {"abc"}},
      {"bad format", kGood, {"simulate", "{S}", "--format", "xml"}, {"--format", "xml"}},
      {"negative seed", kGood, {"simulate", "{S}", "--seed", "-1"}, {"--seed"}},
      {"zero replications", kGood, {"simulate", "{S}", "--replications", "0"}, {"--replications", "0"}},
      {"too many replications", kGood, {"simulate", "{S}", "--replications", "5000"}, {"--replications", "5000"}},
      {"unknown option", kGood, {"simulate", "{S}", "--bogus"}, {"bogus"}},
      {"two scenarios", kGood, {"simulate", "{S}", "{S}"}, {"one scenario"}},
      {"unknown command", "", {"simulat"}, {"simulat"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}

TEST(CliErrors, BadProfiles) {
  const std::string scenario = write_temp(kGood);
  const std::vector<std::pair<std::string, std::string>> profiles = {
      {R"({"cpu": {"cores": 0}})", "cpu.cores"},
      {R"({"copy": {"h2d_pinned": {"bytes_per_s": -5}}})", "copy.h2d_pinned.bytes_per_s"},
      {R"({"copy": {"h2d_pinned": {"bytes_per_s": 1e10, "points": [{"bytes": 0, "bytes_per_s": 1}]}}})", "copy.h2d_pinned.points[0].bytes"},
      {R"({"ipc": {"receive_s_per_batch": 1, "per_byte": 2}})", "ipc.per_byte"},
      {R"({"schema": "pipeplan-profile/9"})", "schema"},
      {R"({"nccl": {"inter_node": {"nodes": 1}}})", "nccl.inter_node.nodes"},
      {R"({"nccl": {"inter_node": {"nodes": 2}}})", "nccl.inter_node.all_reduce"},
      {R"({"nccl": {"inter_node": {"nodes": 2, "all_reduce": {"bus_bytes_per_s": 0}}}})",
       "nccl.inter_node.all_reduce.bus_bytes_per_s"},
  };
  for (const auto& [text, path] : profiles) {
    BadCase c{"profile", "", {"simulate", scenario, "--profile", write_temp(text)}, {path}};
    expect_one_line_exit_2(c);
  }
  std::remove(scenario.c_str());
}

TEST(CliErrors, HelpAndGoodInputSucceed) {
  EXPECT_EQ(run_pipeplan({"--help"}).exit_code, 0);
  const auto help = run_pipeplan({"simulate", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--profile", "--steps", "--seed", "--set", "--format", "--trace", "--replications"})
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  const std::string scenario = write_temp(kGood);
  const auto ok = run_pipeplan({"simulate", scenario, "--set", "loader.num_workers=4", "--set", "transfer.copy_stream=side"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  std::remove(scenario.c_str());
}

// A trace path that cannot be written: exit 1 (not bad input), nothing half-written.
TEST(CliErrors, UnwritableOutputIsReportedNotCrashed) {
  const std::string scenario = write_temp(kGood);
  const auto r = run_pipeplan({"simulate", scenario, "--trace", "/nonexistent/dir/trace.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/dir/trace.json"), std::string::npos) << r.err;
  std::remove(scenario.c_str());
}

TEST(CliErrors, BadSweeps) {
  const std::vector<BadCase> cases = {
      {"no vary", kGood, {"sweep", "{S}"}, {"--vary"}},
      {"vary without values", kGood, {"sweep", "{S}", "--vary", "loader.num_workers="}, {"--vary", "KEY.PATH=V1,V2"}},
      {"vary unknown key", kGood, {"sweep", "{S}", "--vary", "loader.num_worker=1,2"}, {"loader.num_worker", "did you mean"}},
      {"one bad point", kGood, {"sweep", "{S}", "--vary", "loader.num_workers=2,-1"}, {"loader.num_workers", "-1"}},
      {"bad jobs", kGood, {"sweep", "{S}", "--vary", "loader.num_workers=2", "--jobs", "0"}, {"--jobs"}},
      {"sweep zero replications", kGood, {"sweep", "{S}", "--vary", "loader.num_workers=2", "--replications", "0"},
       {"--replications"}},
      {"too many points", kGood, {"sweep", "{S}", "--vary", "seed=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25",
                                  "--vary", "loader.batch_size=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25",
                                  "--vary", "loader.num_workers=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20"}, {"at most 10,000 points"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
  const auto help = run_pipeplan({"sweep", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--vary"), std::string::npos);
}

// Inputs that would make the simulation run for hours are refused up front, not left to hang.
TEST(CliErrors, RunsThatWouldTakeHoursAreRefused) {
  const std::vector<BadCase> cases = {
      {"tiny buckets", R"({"node": {"gpus": 8}, "ddp": {"gradient_bytes": 1e9, "bucket_cap_mb": 0.001}, "training": {"step_s": 0.1}})",
       {"simulate", "{S}"}, {"ddp.bucket_cap_mb", "4096 buckets"}},
      {"huge run", R"({"node": {"gpus": 64}, "training": {"step_s": 0.1, "steps": 2000000}})", {"simulate", "{S}"},
       {"training.steps", "activities"}},
      {"huge sweep point", kGood, {"sweep", "{S}", "--vary", "node.gpus=1,64", "--steps", "2000000"}, {"training.steps"}},
  };
  for (const auto& c : cases) expect_one_line_exit_2(c);
}
