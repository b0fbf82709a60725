// The calibration sections, one function each (nvbandwidth's "one testcase, one stable name").
// Each measures one part of the input chain and returns the profile keys it fills, or why it
// could not run here. Methods are described in docs/calibrate.md.
#pragma once

#include <string_view>
#include <vector>

#include "calibrate/context.hpp"

namespace pipeplan::calibrate {

// CPU sections (always built).
SectionOutcome run_host(const RunContext& ctx);     // memcpy rates; pinning costs when CUDA is there
SectionOutcome run_ipc(const RunContext& ctx);      // receive a batch from another process
SectionOutcome run_storage(const RunContext& ctx);  // fio-style reads, page cache bypassed
SectionOutcome run_decode(const RunContext& ctx);   // libjpeg-turbo decode and its core scaling

// GPU sections (calibrate/cuda/*, or calibrate/gpu_stub.cpp without CUDA).
SectionOutcome run_copy(const RunContext& ctx);
SectionOutcome run_compute(const RunContext& ctx);
SectionOutcome run_nccl(const RunContext& ctx);

struct Section {
  std::string_view name;
  std::string_view description;
  SectionOutcome (*run)(const RunContext&);
};

// Every section in the order a run performs them (CPU first: they need no device).
const std::vector<Section>& all_sections();

}  // namespace pipeplan::calibrate
