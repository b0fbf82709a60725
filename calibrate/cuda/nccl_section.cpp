// nccl: all-reduce, all-gather and reduce-scatter over every visible GPU, measured the way
// nccl-tests does (single process, ncclCommInitAll, one stream per GPU; 5 warm-up then 20
// timed iterations, each a group over all GPUs; host clock around the loop after a stream
// synchronize; float32 sum). "size" is the whole buffer (for all-gather the gathered output,
// for reduce-scatter the input), algbw = size / time, busbw = algbw * bus_factor. Fit per
// collective: time = latency_s + bytes * factor / bus_bytes_per_s. NCCL is dlopen'ed.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#if __has_include(<nccl.h>)
#include <nccl.h>
#define PIPEPLAN_HAVE_NCCL_H 1
#endif

#include "calibrate/cuda/cuda_util.hpp"
#include "calibrate/cuda/kernels.hpp"
#include "calibrate/gpu.hpp"
#include "calibrate/sections.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate {

#ifndef PIPEPLAN_HAVE_NCCL_H
SectionOutcome run_nccl(const RunContext&) { return Problem::unavailable("built without nccl.h"); }
#else

namespace {

using namespace cuda;

struct Nccl {
  using GetErrorString = const char*(ncclResult_t);
  using CommInitAll = ncclResult_t(ncclComm_t*, int, const int*);
  using CommDestroy = ncclResult_t(ncclComm_t);
  using Group = ncclResult_t();
  using AllReduce = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  using AllGather = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  using ReduceScatter = ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  std::unique_ptr<DynLib> lib;
  GetErrorString* error_string = nullptr;
  CommInitAll* comm_init_all = nullptr;
  CommDestroy* comm_destroy = nullptr;
  Group* group_start = nullptr;
  Group* group_end = nullptr;
  AllReduce* all_reduce = nullptr;
  AllGather* all_gather = nullptr;
  ReduceScatter* reduce_scatter = nullptr;
};

Outcome<Nccl> load_nccl() {
  Nccl n;
  std::string why;
  n.lib = DynLib::open_first(nccl_candidates(), why);
  if (!n.lib) return Problem::unavailable("NCCL not found (libnccl.so.2; set PIPEPLAN_NCCL_LIBRARY): " + why);
  n.error_string = n.lib->symbol<Nccl::GetErrorString>("ncclGetErrorString");
  n.comm_init_all = n.lib->symbol<Nccl::CommInitAll>("ncclCommInitAll");
  n.comm_destroy = n.lib->symbol<Nccl::CommDestroy>("ncclCommDestroy");
  n.group_start = n.lib->symbol<Nccl::Group>("ncclGroupStart");
  n.group_end = n.lib->symbol<Nccl::Group>("ncclGroupEnd");
  n.all_reduce = n.lib->symbol<Nccl::AllReduce>("ncclAllReduce");
  n.all_gather = n.lib->symbol<Nccl::AllGather>("ncclAllGather");
  n.reduce_scatter = n.lib->symbol<Nccl::ReduceScatter>("ncclReduceScatter");
  if (!n.error_string || !n.comm_init_all || !n.comm_destroy || !n.group_start || !n.group_end || !n.all_reduce ||
      !n.all_gather || !n.reduce_scatter)
    return Problem::failed("NCCL at " + n.lib->path() + " lacks an expected symbol");
  return n;
}

// One communicator, stream and pair of buffers per GPU; destroyed in order.
struct PerGpu {
  int device = 0;
  std::optional<Stream> stream;
  DeviceBuffer send, recv;
};

class Communicators {
 public:
  Communicators(const Nccl& api, std::vector<ncclComm_t> comms) : api_(api), comms_(std::move(comms)) {}
  ~Communicators() {
    for (ncclComm_t c : comms_) api_.comm_destroy(c);
  }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ncclComm_t operator[](std::size_t i) const { return comms_[i]; }

 private:
  const Nccl& api_;
  std::vector<ncclComm_t> comms_;
};

}  // namespace

SectionOutcome run_nccl(const RunContext& ctx) {
  if (const std::string why = gpu::unavailable_reason(); !why.empty()) return Problem::unavailable(why);
  int gpus = 0;
  PP_CUDA_TRY(cudaGetDeviceCount(&gpus));
  SectionReport report;
  if (gpus < 2) {
    ctx.log("nccl: one GPU visible: no collective measured");
    report.profile_keys["nccl"] = {{"measured", false}, {"reason", "one GPU visible"}, {"gpus", gpus}};
    return report;
  }
  // NVLink multicast (NVLS) off unless the caller chose: it can take shared GPUs out of service.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  auto api_or = load_nccl();
  if (!api_or.ok()) return api_or.problem();
  const Nccl& api = api_or.value();

  const std::size_t max_bytes = ctx.by_scale<std::size_t>(16u << 20, 256u << 20, std::size_t{1} << 30);
  const int warmup = ctx.by_scale(1, 2, 5);
  const int iters = ctx.by_scale(3, 10, 20);
  std::vector<PerGpu> per_gpu(static_cast<std::size_t>(gpus));
  std::vector<int> devices;
  for (int d = 0; d < gpus; ++d) {
    PerGpu& g = per_gpu[static_cast<std::size_t>(d)];
    g.device = d;
    devices.push_back(d);
    PP_CUDA_TRY(cudaSetDevice(d));
    auto s = Stream::create();
    auto send = device_buffer(max_bytes);
    auto recv = device_buffer(max_bytes);
    if (!s.ok()) return s.problem();
    if (!send.ok()) return send.problem();
    if (!recv.ok()) return recv.problem();
    g.stream.emplace(std::move(s.value()));
    g.send = std::move(send.value());
    g.recv = std::move(recv.value());
    PP_CUDA_TRY(kernels::launch_fill_f32(g.stream->get(), static_cast<float*>(g.send.get()), max_bytes / 4, 1.0f));
  }
  std::vector<ncclComm_t> raw(static_cast<std::size_t>(gpus), nullptr);
  if (const ncclResult_t r = api.comm_init_all(raw.data(), gpus, devices.data()); r != ncclSuccess)
    return Problem::failed(std::string("ncclCommInitAll: ") + api.error_string(r));
  Communicators comms(api, raw);

  const std::vector<double> sizes = geometric_sizes(1024, static_cast<double>(max_bytes), ctx.scale == Scale::full ? 4 : 8);
  nlohmann::json out = {{"measured", true}, {"gpus", gpus}};
  if (const auto p = gpu::provenance(); !p.nccl.empty()) out["version"] = p.nccl;

  for (const Collective coll : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
    const double factor = bus_factor(coll, gpus);
    ctx.log(strf("nccl: %s over %d GPUs (out-of-place, float, sum)", std::string(collective_name(coll)).c_str(), gpus));
    ctx.log("nccl: #       size         count      type   redop    root     time   algbw   busbw #wrong");
    ctx.log("nccl: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)");
    nlohmann::json points = nlohmann::json::array();
    std::vector<double> x, t;
    double busbw_sum = 0.0;
    for (const double size : sizes) {
      if (ctx.interrupted()) return Problem::interrupted();
      // Per-rank element counts; the whole buffer is what nccl-tests calls "size".
      const std::size_t total_count = static_cast<std::size_t>(size) / sizeof(float);
      const std::size_t rank_count = coll == Collective::all_reduce ? total_count : total_count / gpus;
      if (rank_count == 0) continue;
      const std::size_t count = coll == Collective::all_reduce ? rank_count : rank_count * gpus;
      const double bytes = static_cast<double>(count * sizeof(float));
      auto launch = [&]() -> ncclResult_t {
        ncclResult_t r = api.group_start();
        for (std::size_t i = 0; i < per_gpu.size() && r == ncclSuccess; ++i) {
          const PerGpu& g = per_gpu[i];
          switch (coll) {
            case Collective::all_reduce:
              r = api.all_reduce(g.send.get(), g.recv.get(), rank_count, ncclFloat, ncclSum, comms[i], g.stream->get());
              break;
            case Collective::all_gather:
              r = api.all_gather(g.send.get(), g.recv.get(), rank_count, ncclFloat, comms[i], g.stream->get());
              break;
            case Collective::reduce_scatter:
              r = api.reduce_scatter(g.send.get(), g.recv.get(), rank_count, ncclFloat, ncclSum, comms[i], g.stream->get());
              break;
          }
        }
        const ncclResult_t e = api.group_end();
        return r != ncclSuccess ? r : e;
      };
      auto sync_all = [&]() -> cudaError_t {
        for (const PerGpu& g : per_gpu)
          if (const cudaError_t e = cudaStreamSynchronize(g.stream->get()); e != cudaSuccess) return e;
        return cudaSuccess;
      };
      for (int i = 0; i < warmup; ++i)
        if (const ncclResult_t r = launch(); r != ncclSuccess) return Problem::failed(std::string("NCCL: ") + api.error_string(r));
      PP_CUDA_TRY(sync_all());
      const double t0 = now_s();
      for (int i = 0; i < iters; ++i)
        if (const ncclResult_t r = launch(); r != ncclSuccess) return Problem::failed(std::string("NCCL: ") + api.error_string(r));
      PP_CUDA_TRY(sync_all());
      const double time_s = (now_s() - t0) / iters;
      const double algbw = bytes / time_s;
      const double busbw = algbw * factor;
      busbw_sum += busbw;
      x.push_back(bytes * factor);
      t.push_back(time_s);
      points.push_back({{"bytes", bytes}, {"time_s", time_s}, {"algbw_bytes_per_s", algbw}, {"busbw_bytes_per_s", busbw}});
      ctx.log(strf("nccl: %12.0f  %12zu  %8s  %6s  %6s  %7.1f  %6.2f  %6.2f  %5s", bytes, count, "float",
                   coll == Collective::all_gather ? "none" : "sum", "-1", time_s * 1e6, algbw / 1e9, busbw / 1e9, "N/A"));
    }
    if (points.empty()) continue;
    ctx.log(strf("nccl: # Avg bus bandwidth    : %g", busbw_sum / static_cast<double>(points.size()) / 1e9));
    nlohmann::json c = {{"points", points}};
    if (const auto fit = fit_latency_bandwidth(x, t)) {
      c["latency_s"] = fit->latency_s;
      c["bus_bytes_per_s"] = fit->bytes_per_s;
      c["rel_rmse"] = fit->rel_rmse;
      ctx.log(strf("nccl: %s fit: latency %.1f us, bus %.2f GB/s, rel_rmse %.3f", std::string(collective_name(coll)).c_str(),
                   fit->latency_s * 1e6, fit->bytes_per_s / 1e9, fit->rel_rmse));
    } else {
      return Problem::failed(std::string(collective_name(coll)) + ": times do not fit latency + bytes / bandwidth");
    }
    out[std::string(collective_name(coll))] = c;
  }
  report.profile_keys["nccl"] = out;
  return report;
}

#endif  // PIPEPLAN_HAVE_NCCL_H

}  // namespace pipeplan::calibrate
