// Built when CUDA is absent: every GPU measurement says so, and the CPU sections still run.
#include "calibrate/gpu.hpp"
#include "calibrate/sections.hpp"

namespace pipeplan::calibrate {

namespace gpu {
std::string unavailable_reason() { return "built without CUDA"; }
Provenance provenance() { return {}; }
Outcome<PinnedHostCosts> measure_pinned_host(const RunContext&) { return Problem::unavailable(unavailable_reason()); }
Outcome<std::vector<GpuJpegPoint>> measure_gpu_jpeg_decode(const RunContext&, const std::vector<EncodedJpeg>&) {
  return Problem::unavailable(unavailable_reason());
}
}  // namespace gpu

SectionOutcome run_copy(const RunContext&) { return Problem::unavailable(gpu::unavailable_reason()); }
SectionOutcome run_compute(const RunContext&) { return Problem::unavailable(gpu::unavailable_reason()); }
SectionOutcome run_nccl(const RunContext&) { return Problem::unavailable(gpu::unavailable_reason()); }

}  // namespace pipeplan::calibrate
