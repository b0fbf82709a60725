// RAII owners for CUDA objects and dlopen'ed libraries, and the error-as-value helpers the
// GPU sections share. Single-threaded use; every object belongs to the current device.
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/context.hpp"

namespace pipeplan::calibrate::cuda {

std::string cuda_message(const char* what, cudaError_t e);

// Returns Problem::failed from the enclosing function (which returns an Outcome) on error.
#define PP_CUDA_TRY(call)                                                                        \
  do {                                                                                           \
    const cudaError_t pp_err_ = (call);                                                          \
    if (pp_err_ != cudaSuccess) return ::pipeplan::calibrate::Problem::failed(                   \
        ::pipeplan::calibrate::cuda::cuda_message(#call, pp_err_));                              \
  } while (0)

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;
using PinnedBuffer = std::unique_ptr<void, HostFree>;

Outcome<DeviceBuffer> device_buffer(std::size_t bytes);
// flags: cudaHostAllocDefault, cudaHostAllocMapped, ...
Outcome<PinnedBuffer> pinned_buffer(std::size_t bytes, unsigned flags = cudaHostAllocDefault);

class Stream {
 public:
  static Outcome<Stream> create(unsigned flags = cudaStreamNonBlocking);
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }

 private:
  explicit Stream(cudaStream_t s) : s_(s) {}
  cudaStream_t s_;
};

class Event {
 public:
  static Outcome<Event> create();
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  cudaEvent_t get() const { return e_; }

 private:
  explicit Event(cudaEvent_t e) : e_(e) {}
  cudaEvent_t e_;
};

// Seconds between two recorded events (synchronises on `stop`).
Outcome<double> elapsed_s(const Event& start, const Event& stop);

// The host-mapped flag nvbandwidth's spin kernel waits on.
class SpinFlag {
 public:
  static Outcome<SpinFlag> create();
  // Queues the spin kernel on `stream`; copies queued after it wait for release().
  cudaError_t hold(cudaStream_t stream, double timeout_s = 5.0);
  void release();  // lets every holding kernel finish
  void reset();    // before the next hold
  bool timed_out() const;

 private:
  explicit SpinFlag(PinnedBuffer b) : buf_(std::move(b)) {}
  volatile int* words() const { return static_cast<volatile int*>(buf_.get()); }  // [flag, timed_out]
  PinnedBuffer buf_;
};

// A dlopen'ed shared library (NCCL, cuBLAS: found on the machine where we run).
class DynLib {
 public:
  // Tries each candidate (a name for the loader's search, an absolute path, or a glob);
  // `why` receives the last dlerror when none loads.
  static std::unique_ptr<DynLib> open_first(const std::vector<std::string>& candidates, std::string& why);
  DynLib(void* handle, std::string path) : h_(handle), path_(std::move(path)) {}  // takes ownership of handle
  ~DynLib() {
    if (h_) dlclose(h_);
  }
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  template <class F>
  F* symbol(const char* name) const {
    return reinterpret_cast<F*>(dlsym(h_, name));
  }
  const std::string& path() const { return path_; }

 private:
  void* h_;
  std::string path_;
};

// Candidate locations of libnccl.so.2 and libcublas.so.13 (env override first).
std::vector<std::string> nccl_candidates();
std::vector<std::string> cublas_candidates();
std::vector<std::string> nvjpeg_candidates();

// Bytes as "4 KiB", "256 MiB", for progress lines.
std::string human_bytes(double bytes);

}  // namespace pipeplan::calibrate::cuda
