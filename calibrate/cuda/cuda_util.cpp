// CUDA helpers, device discovery and provenance (gpu.hpp's CUDA implementation).
#include "calibrate/cuda/cuda_util.hpp"

#include <glob.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "calibrate/cuda/kernels.hpp"
#include "calibrate/gpu.hpp"

namespace pipeplan::calibrate {

namespace cuda {

std::string cuda_message(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

Outcome<DeviceBuffer> device_buffer(std::size_t bytes) {
  void* p = nullptr;
  PP_CUDA_TRY(cudaMalloc(&p, bytes));
  return DeviceBuffer(p);
}

Outcome<PinnedBuffer> pinned_buffer(std::size_t bytes, unsigned flags) {
  void* p = nullptr;
  PP_CUDA_TRY(cudaHostAlloc(&p, bytes, flags));
  return PinnedBuffer(p);
}

Outcome<Stream> Stream::create(unsigned flags) {
  cudaStream_t s = nullptr;
  PP_CUDA_TRY(cudaStreamCreateWithFlags(&s, flags));
  return Stream(s);
}

Outcome<Event> Event::create() {
  cudaEvent_t e = nullptr;
  PP_CUDA_TRY(cudaEventCreate(&e));
  return Event(e);
}

Outcome<double> elapsed_s(const Event& start, const Event& stop) {
  PP_CUDA_TRY(cudaEventSynchronize(stop.get()));
  float ms = 0.0f;
  PP_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) * 1e-3;
}

Outcome<SpinFlag> SpinFlag::create() {
  auto b = pinned_buffer(2 * sizeof(int), cudaHostAllocMapped);
  if (!b.ok()) return b.problem();
  SpinFlag f(std::move(b.value()));
  f.reset();
  return f;
}

cudaError_t SpinFlag::hold(cudaStream_t stream, double timeout_s) {
  int* dev = nullptr;
  const cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), buf_.get(), 0);
  if (e != cudaSuccess) return e;
  return kernels::launch_wait_for_flag(stream, dev, dev + 1, static_cast<unsigned long long>(timeout_s * 1e9));
}

void SpinFlag::release() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  words()[0] = 1;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void SpinFlag::reset() {
  words()[0] = 0;
  words()[1] = 0;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

bool SpinFlag::timed_out() const { return words()[1] != 0; }

std::unique_ptr<DynLib> DynLib::open_first(const std::vector<std::string>& candidates, std::string& why) {
  for (const auto& c : candidates) {
    std::vector<std::string> paths;
    if (c.find('*') != std::string::npos) {
      glob_t g{};
      if (glob(c.c_str(), 0, nullptr, &g) == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
      globfree(&g);
    } else {
      paths.push_back(c);
    }
    for (const auto& p : paths) {
      if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        return std::make_unique<DynLib>(h, p);
      }
      why = dlerror();
    }
  }
  if (why.empty()) why = "no candidate path exists";
  return nullptr;
}

namespace {
std::vector<std::string> with_env(const char* env, std::vector<std::string> rest) {
  if (const char* v = std::getenv(env); v && *v) rest.insert(rest.begin(), v);
  return rest;
}
}  // namespace

std::vector<std::string> nccl_candidates() {
  return with_env("PIPEPLAN_NCCL_LIBRARY",
                  {"libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                   "/opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
                   "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2"});
}

std::vector<std::string> cublas_candidates() {
  // The GPU machine has cuBLAS in its CUDA toolkit and in torch's wheels (libcublasLt beside
  // it is found through libcublas's RUNPATH $ORIGIN).
  return with_env("PIPEPLAN_CUBLAS_LIBRARY",
                  {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
                   "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
                   "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcublas.so.13",
                   "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cublas/lib/libcublas.so.13",
                   "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libcublas.so.13",
                   "/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib/libcublas.so.13"});
}

std::vector<std::string> nvjpeg_candidates() {
  // The GPU machine's CUDA 13 toolkit ships nvJPEG (docs: shared/notes/gpu-machine.md); torch's wheels carry one too.
  return with_env("PIPEPLAN_NVJPEG_LIBRARY",
                  {"libnvjpeg.so.13", "/usr/local/cuda/lib64/libnvjpeg.so.13",
                   "/usr/local/cuda/targets/x86_64-linux/lib/libnvjpeg.so.13", "libnvjpeg.so.12",
                   "/opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvjpeg.so.13",
                   "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libnvjpeg.so.13"});
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 3) {
    bytes /= 1024.0;
    ++u;
  }
  return strf("%g %s", bytes, units[u]);
}

}  // namespace cuda

namespace gpu {

std::string unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return "no CUDA device (" + cuda::cuda_message("cudaGetDeviceCount", e) + ")";
  if (n == 0) return "no CUDA device (cudaGetDeviceCount: 0 devices)";
  return "";
}

Provenance provenance() {
  Provenance p;
  if (!unavailable_reason().empty()) return p;
  cudaGetDeviceCount(&p.gpu_count);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) p.gpu = prop.name;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) p.cuda = strf("%d.%d", v / 1000, (v % 1000) / 10);
  // The driver's version ("580.159.04"): from NVML (shipped with every driver), else the
  // kernel module's version file, else only the CUDA version the driver supports.
  std::string why;
  if (auto nvml = cuda::DynLib::open_first({"libnvidia-ml.so.1"}, why)) {
    using Init = int();
    using GetDriverVersion = int(char*, unsigned);
    auto* init = nvml->symbol<Init>("nvmlInit_v2");
    auto* get = nvml->symbol<GetDriverVersion>("nvmlSystemGetDriverVersion");
    auto* shutdown = nvml->symbol<Init>("nvmlShutdown");
    char version[96] = {};
    if (init && get && shutdown && init() == 0) {
      if (get(version, sizeof version) == 0) p.driver = version;
      shutdown();
    }
  }
  if (p.driver.empty()) {
    std::ifstream version_file("/proc/driver/nvidia/version");
    std::string line;
    std::getline(version_file, line);
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"(Kernel Module\s+([0-9.]+))"))) {
      p.driver = m[1];
    } else if (cudaDriverGetVersion(&v) == cudaSuccess) {
      p.driver = strf("CUDA %d.%d driver", v / 1000, (v % 1000) / 10);
    }
  }
  if (auto nccl = cuda::DynLib::open_first(cuda::nccl_candidates(), why)) {
    using GetVersion = int(int*);
    if (auto* get = nccl->symbol<GetVersion>("ncclGetVersion"); get && get(&v) == 0)
      p.nccl = strf("%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  }
  return p;
}

}  // namespace gpu

}  // namespace pipeplan::calibrate
