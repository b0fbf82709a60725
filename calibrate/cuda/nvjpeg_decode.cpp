// GPU JPEG decode with nvJPEG (the decode section's GPU half): one image at a time (nvjpegDecode, as
// torchvision.io.decode_jpeg(device="cuda") decodes one image) and a batch of copies (nvjpegDecodeBatched), to
// interleaved RGB in device memory. nvJPEG is dlopen'ed: the build machine has the CUDA toolkit without nvjpeg.h, the
// GPU machine has libnvjpeg.so.13 (shared/notes/gpu-machine.md). The few declarations below follow nvjpeg.h's C API
// (CUDA 11 on: size_t pitches).
#include <algorithm>
#include <vector>

#include "calibrate/cuda/cuda_util.hpp"
#include "calibrate/gpu.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate::gpu {

namespace {

using namespace cuda;

// nvjpeg.h's types, as much of them as these calls need
using NvjpegStatus = int;               // nvjpegStatus_t: 0 is NVJPEG_STATUS_SUCCESS
using NvjpegHandle = struct NvjpegHandleOpaque*;
using NvjpegState = struct NvjpegStateOpaque*;
constexpr int kNvjpegOutputRgbi = 5;    // NVJPEG_OUTPUT_RGBI: interleaved RGB in channel[0]
constexpr int kNvjpegMaxComponent = 4;  // NVJPEG_MAX_COMPONENT
struct NvjpegImage {                    // nvjpegImage_t
  unsigned char* channel[kNvjpegMaxComponent];
  std::size_t pitch[kNvjpegMaxComponent];
};

struct Nvjpeg {
  using CreateSimple = NvjpegStatus(NvjpegHandle*);
  using Destroy = NvjpegStatus(NvjpegHandle);
  using StateCreate = NvjpegStatus(NvjpegHandle, NvjpegState*);
  using StateDestroy = NvjpegStatus(NvjpegState);
  using Decode = NvjpegStatus(NvjpegHandle, NvjpegState, const unsigned char*, std::size_t, int, NvjpegImage*,
                              cudaStream_t);
  using BatchedInitialize = NvjpegStatus(NvjpegHandle, NvjpegState, int, int, int);
  using DecodeBatched = NvjpegStatus(NvjpegHandle, NvjpegState, const unsigned char* const*, const std::size_t*,
                                     NvjpegImage*, cudaStream_t);
  std::unique_ptr<DynLib> lib;
  CreateSimple* create_simple = nullptr;
  Destroy* destroy = nullptr;
  StateCreate* state_create = nullptr;
  StateDestroy* state_destroy = nullptr;
  Decode* decode = nullptr;
  BatchedInitialize* batched_initialize = nullptr;
  DecodeBatched* decode_batched = nullptr;
};

Outcome<Nvjpeg> load_nvjpeg() {
  Nvjpeg n;
  std::string why;
  n.lib = DynLib::open_first(nvjpeg_candidates(), why);
  if (!n.lib) return Problem::unavailable("nvJPEG not found (libnvjpeg.so.13; set PIPEPLAN_NVJPEG_LIBRARY): " + why);
  n.create_simple = n.lib->symbol<Nvjpeg::CreateSimple>("nvjpegCreateSimple");
  n.destroy = n.lib->symbol<Nvjpeg::Destroy>("nvjpegDestroy");
  n.state_create = n.lib->symbol<Nvjpeg::StateCreate>("nvjpegJpegStateCreate");
  n.state_destroy = n.lib->symbol<Nvjpeg::StateDestroy>("nvjpegJpegStateDestroy");
  n.decode = n.lib->symbol<Nvjpeg::Decode>("nvjpegDecode");
  n.batched_initialize = n.lib->symbol<Nvjpeg::BatchedInitialize>("nvjpegDecodeBatchedInitialize");
  n.decode_batched = n.lib->symbol<Nvjpeg::DecodeBatched>("nvjpegDecodeBatched");
  if (!n.create_simple || !n.destroy || !n.state_create || !n.state_destroy || !n.decode || !n.batched_initialize ||
      !n.decode_batched)
    return Problem::unavailable("nvJPEG at " + n.lib->path() + " lacks a symbol this build calls");
  return n;
}

// The handle and decode state, destroyed in order.
struct Session {
  const Nvjpeg* api = nullptr;
  NvjpegHandle handle = nullptr;
  NvjpegState state = nullptr;
  ~Session() {
    if (state) api->state_destroy(state);
    if (handle) api->destroy(handle);
  }
};

constexpr int kBatch = 64;  // a training batch's images

}  // namespace

Outcome<std::vector<GpuJpegPoint>> measure_gpu_jpeg_decode(const RunContext& ctx, const std::vector<EncodedJpeg>& images) {
  if (const std::string why = unavailable_reason(); !why.empty()) return Problem::unavailable(why);
  PP_CUDA_TRY(cudaSetDevice(0));
  auto api = load_nvjpeg();
  if (!api.ok()) return api.problem();
  const Nvjpeg& nv = api.value();
  Session s;
  s.api = &nv;
  if (const NvjpegStatus st = nv.create_simple(&s.handle); st != 0)
    return Problem::failed(strf("nvjpegCreateSimple: status %d", st));
  if (const NvjpegStatus st = nv.state_create(s.handle, &s.state); st != 0)
    return Problem::failed(strf("nvjpegJpegStateCreate: status %d", st));
  auto stream = Stream::create();
  if (!stream.ok()) return stream.problem();
  const cudaStream_t cs = stream.value().get();
  const double window_s = ctx.by_scale(0.05, 0.3, 0.6);
  std::vector<GpuJpegPoint> out;
  for (const auto& img : images) {
    if (ctx.interrupted()) return Problem::interrupted();
    const std::size_t pitch = static_cast<std::size_t>(img.width) * 3;
    const std::size_t bytes_out = pitch * static_cast<std::size_t>(img.height);
    auto one = device_buffer(bytes_out);
    if (!one.ok()) return one.problem();
    NvjpegImage dst{};
    dst.channel[0] = static_cast<unsigned char*>(one.value().get());
    dst.pitch[0] = pitch;
    const unsigned char* data = img.bytes->data();
    const std::size_t length = img.bytes->size();
    // one image at a time: the call (the CPU's Huffman decode, the kernels' launches) to the stream's end
    std::vector<double> single;
    const double t_end = now_s() + window_s;
    for (int i = 0; i < 3 + 5 || now_s() < t_end; ++i) {
      const double t0 = now_s();
      if (const NvjpegStatus st = nv.decode(s.handle, s.state, data, length, kNvjpegOutputRgbi, &dst, cs); st != 0)
        return Problem::failed(strf("nvjpegDecode (%dx%d): status %d", img.width, img.height, st));
      PP_CUDA_TRY(cudaStreamSynchronize(cs));
      if (i >= 3) single.push_back(now_s() - t0);  // three warm-up decodes first
      if (single.size() >= 2000) break;
    }
    // a batch of copies of the image, each to its own output
    auto many = device_buffer(bytes_out * kBatch);
    if (!many.ok()) return many.problem();
    std::vector<NvjpegImage> dsts(kBatch);
    std::vector<const unsigned char*> datas(kBatch, data);
    std::vector<std::size_t> lengths(kBatch, length);
    for (int b = 0; b < kBatch; ++b) {
      dsts[b] = NvjpegImage{};
      dsts[b].channel[0] = static_cast<unsigned char*>(many.value().get()) + bytes_out * static_cast<std::size_t>(b);
      dsts[b].pitch[0] = pitch;
    }
    if (const NvjpegStatus st = nv.batched_initialize(s.handle, s.state, kBatch, 1, kNvjpegOutputRgbi); st != 0)
      return Problem::failed(strf("nvjpegDecodeBatchedInitialize: status %d", st));
    std::vector<double> batched;
    const double b_end = now_s() + window_s;
    for (int i = 0; i < 2 + 3 || now_s() < b_end; ++i) {
      const double t0 = now_s();
      if (const NvjpegStatus st = nv.decode_batched(s.handle, s.state, datas.data(), lengths.data(), dsts.data(), cs);
          st != 0)
        return Problem::failed(strf("nvjpegDecodeBatched (%d x %dx%d): status %d", kBatch, img.width, img.height, st));
      PP_CUDA_TRY(cudaStreamSynchronize(cs));
      if (i >= 2) batched.push_back((now_s() - t0) / kBatch);
      if (batched.size() >= 500) break;
    }
    GpuJpegPoint p;
    p.width = img.width;
    p.height = img.height;
    p.bytes = static_cast<double>(length);
    p.s_per_image = median(single);
    p.batched_s_per_image = median(batched);
    p.batch = kBatch;
    ctx.log(strf("decode: GPU (nvJPEG) %4dx%-4d: %.3f ms/image one at a time (median of %zu), %.3f ms/image in "
                 "batches of %d (median of %zu)",
                 img.width, img.height, p.s_per_image * 1e3, single.size(), p.batched_s_per_image * 1e3, kBatch,
                 batched.size()));
    out.push_back(p);
  }
  return out;
}

}  // namespace pipeplan::calibrate::gpu
