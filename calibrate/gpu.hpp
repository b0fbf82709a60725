// The GPU-side helpers that CPU sections and provenance use. Implemented in calibrate/cuda/
// when built with CUDA, else by calibrate/gpu_stub.cpp (everything "unavailable").
#pragma once

#include <string>
#include <vector>

#include "calibrate/context.hpp"

namespace pipeplan::calibrate::gpu {

// Empty when a CUDA device is usable, else why not ("built without CUDA",
// "no CUDA device (cudaGetDeviceCount: ...)").
std::string unavailable_reason();

struct Provenance {
  std::string gpu;      // device 0's name
  int gpu_count = 0;
  std::string driver;   // kernel module version, else the driver's CUDA version
  std::string cuda;     // runtime version, "13.0"
  std::string nccl;     // "2.28.3" when libnccl.so.2 loads
};
Provenance provenance();

// Pinned host memory for the host section: what cudaHostAlloc / cudaHostRegister cost,
// and one thread's memcpy rate into cudaHostAlloc'd memory.
struct PinnedHostCosts {
  double pin_copy_bytes_per_s = 0.0;
  double host_alloc_s_per_mib = 0.0;
  double host_register_s_per_mib = 0.0;
  nlohmann::json points = nlohmann::json::array();  // {"what","bytes","bytes_per_s","s"}
};
Outcome<PinnedHostCosts> measure_pinned_host(const RunContext& ctx);

// One encoded JPEG for the GPU decode (the decode section's images).
struct EncodedJpeg {
  int width = 0, height = 0;
  const std::vector<unsigned char>* bytes = nullptr;
};
// nvJPEG's decode of one image to interleaved RGB on the GPU (nvjpegDecode: Huffman on the CPU, the rest on the
// GPU, the way torchvision.io.decode_jpeg(device="cuda") decodes one image), and per image in a batch
// (nvjpegDecodeBatched of `batch` copies), wall time from the call to the stream's end, median of several.
struct GpuJpegPoint {
  int width = 0, height = 0;
  double bytes = 0.0;
  double s_per_image = 0.0;          // one image at a time
  double batched_s_per_image = 0.0;  // in a batch of `batch`
  int batch = 0;
};
// Unavailable without a device or without libnvjpeg (dlopen'ed: the build machine has no nvjpeg.h).
Outcome<std::vector<GpuJpegPoint>> measure_gpu_jpeg_decode(const RunContext& ctx, const std::vector<EncodedJpeg>& images);

}  // namespace pipeplan::calibrate::gpu
