// storage: read bandwidth, IOPS and completion latency of the device under --storage-path,
// in fio's terms (rw=read|randread, bs, numjobs, iodepth=1; bw_bytes, iops, clat_ns).
// The page cache is bypassed with O_DIRECT, or, where the file system refuses O_DIRECT
// (tmpfs, some FUSE), by posix_fadvise(DONTNEED) on the file before each point (weaker:
// re-read blocks may hit the cache; the profile's cache_bypass says which). Reads go through
// io_uring (one ring per job, depth 1) where the kernel allows it, else pread.
// Then, as a DataLoader worker reads a dataset: one thread reading many small files whole through
// the page cache, cold and then warm, timing wall and CPU time: its wait rate and the kernel's CPU
// per byte for filling the page cache (storage.stream_read_bytes_per_s, buffered_read_cpu_s_per_byte).
#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <latch>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "calibrate/sections.hpp"
#include "calibrate/stats.hpp"
#include "models/profile.hpp"

namespace pipeplan::calibrate {

namespace {

constexpr std::size_t kAlign = 4096;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, FreeDeleter>;

AlignedBuffer aligned_buffer(std::size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, bytes) != 0) return AlignedBuffer{};
  std::memset(p, 0, bytes);
  return AlignedBuffer{static_cast<char*>(p)};
}

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// Removes what the section created, whatever way it ends.
class Cleanup {
 public:
  Cleanup(std::filesystem::path file, std::filesystem::path dir_to_remove)
      : file_(std::move(file)), dir_(std::move(dir_to_remove)) {}
  ~Cleanup() {
    std::error_code ec;
    std::filesystem::remove(file_, ec);
    if (!dir_.empty()) std::filesystem::remove(dir_, ec);
  }
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;

 private:
  std::filesystem::path file_, dir_;
};

enum class Engine { io_uring, pread };

// One reading job (fio's numjobs = one thread), iodepth 1.
class Reader {
 public:
  Reader(Engine engine, int fd, std::size_t bs) : engine_(engine), fd_(fd), bs_(bs), buf_(aligned_buffer(bs)) {
    if (engine_ == Engine::io_uring) ring_ok_ = io_uring_queue_init(1, &ring_, 0) == 0;
  }
  ~Reader() {
    if (ring_ok_) io_uring_queue_exit(&ring_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool ready() const { return buf_ && (engine_ == Engine::pread || ring_ok_); }

  // Reads bs bytes at off; returns the bytes read or -errno.
  long read_at(std::size_t off) {
    if (engine_ == Engine::pread) {
      const ssize_t n = ::pread(fd_, buf_.get(), bs_, static_cast<off_t>(off));
      return n < 0 ? -errno : static_cast<long>(n);
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) return -EBUSY;
    io_uring_prep_read(sqe, fd_, buf_.get(), static_cast<unsigned>(bs_), off);
    int r = io_uring_submit(&ring_);
    if (r < 0) return r;
    io_uring_cqe* cqe = nullptr;
    do {
      r = io_uring_wait_cqe(&ring_, &cqe);
    } while (r == -EINTR);
    if (r < 0) return r;
    const long res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    return res;
  }

 private:
  Engine engine_;
  int fd_;
  std::size_t bs_;
  AlignedBuffer buf_;
  io_uring ring_{};
  bool ring_ok_ = false;
};

struct PointSpec {
  bool random = false;
  std::size_t bs = 4096;
  int numjobs = 1;
};

struct JobResult {
  std::vector<double> clat_ns;
  std::size_t io_bytes = 0;
  double runtime_s = 0.0;
  long error = 0;
};

void run_job(Engine engine, int fd, std::size_t file_bytes, const PointSpec& spec, int job, double duration_s,
             bool drop_cache_on_wrap, std::latch& start, JobResult& out) {
  Reader reader(engine, fd, spec.bs);
  const std::size_t blocks_in_file = file_bytes / spec.bs;
  // Sequential jobs each own a contiguous region (fio's offset_increment), wrapping inside it.
  const std::size_t region_blocks = std::max<std::size_t>(1, blocks_in_file / spec.numjobs);
  const std::size_t region_first = region_blocks * static_cast<std::size_t>(job);
  std::uint64_t rng = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(job + 1);
  std::size_t next_block = 0;
  out.clat_ns.reserve(1 << 16);
  start.arrive_and_wait();
  if (!reader.ready()) {
    out.error = -ENOMEM;
    return;
  }
  const double t0 = now_s();
  double t = t0;
  while (t - t0 < duration_s) {
    std::size_t block;
    if (spec.random) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      block = rng % blocks_in_file;
    } else {
      if (next_block == region_blocks) {
        next_block = 0;
        if (drop_cache_on_wrap)
          posix_fadvise(fd, static_cast<off_t>(region_first * spec.bs), static_cast<off_t>(region_blocks * spec.bs),
                        POSIX_FADV_DONTNEED);
      }
      block = region_first + next_block++;
    }
    const double s0 = now_s();
    const long n = reader.read_at(block * spec.bs);
    t = now_s();
    if (n < 0) {
      out.error = n;
      return;
    }
    out.clat_ns.push_back((t - s0) * 1e9);
    out.io_bytes += static_cast<std::size_t>(n);
  }
  out.runtime_s = t - t0;
}

// Writes `bytes` of incompressible data, then pushes it out of the page cache.
std::string write_test_file(const std::filesystem::path& path, std::size_t bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.ok()) return "cannot create " + path.string() + ": " + std::strerror(errno);
  const std::size_t chunk = 4u << 20;
  std::vector<std::uint64_t> data(chunk / sizeof(std::uint64_t));
  std::uint64_t x = 88172645463325252ull;
  for (std::size_t done = 0; done < bytes; done += chunk) {
    for (auto& w : data) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w = x;
    }
    const std::size_t n = std::min(chunk, bytes - done);
    if (::write(fd.get(), data.data(), n) != static_cast<ssize_t>(n))
      return "cannot write " + path.string() + ": " + std::strerror(errno);
  }
  if (::fsync(fd.get()) != 0) return "fsync " + path.string() + ": " + std::strerror(errno);
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  return "";
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The same files read cold by several threads at once, each its own share (DataLoader workers reading a
// dataset's files): the wall from the common start to the last thread's end, the threads' CPU summed.
struct ConcurrentColdRead {
  int threads = 0;
  std::size_t bytes = 0;
  double wall_s = 0, cpu_s = 0;
  // Threads only (forty-sixth session): over every file's read (open to the last read() returning), the mean count
  // of reads in flight beside it, itself included, weighted by time. 1 for one reader; N for N readers that always
  // read together (in step); near 1 + (N - 1) x the others' reading share for readers out of step. 0: not measured.
  double readers_in_flight_mean = 0;
  double work_s_per_file = 0;  // the CPU each reader spent after each file (0: none); its mean where jittered
  double work_jitter = 0;      // each file's work uniform in work_s_per_file x (1 +- work_jitter) (0: fixed)
  std::size_t head_bytes = 0;  // each file read as a read() of this many bytes, then the rest (0: one read, whole)
};

// The page cache's fill CPU per byte, as the profile reader computes it (models/profile.hpp).
double fill_cpu_s_per_byte(double cold_cpu_s, double warm_cpu_s, std::size_t bytes) {
  return page_cache_fill_cpu_s_per_byte(cold_cpu_s, warm_cpu_s, static_cast<double>(bytes));
}

struct BufferedRead {
  std::size_t bytes = 0, file_bytes = 0, files = 0;
  double cold_s = 0, cold_cpu_s = 0, warm_s = 0, warm_cpu_s = 0;
  std::vector<ConcurrentColdRead> concurrent;  // since validation run 16: 2, 4, 8 threads where files allow
  // Until validation run 21 `concurrent` read the files in the order they were written, thread j taking files j,
  // j+N, ...: the threads walk the disk side by side. A DataLoader's workers read a shuffled sampler's files; since
  // the seventeenth session `concurrent` reads them in a shuffled order and this keeps the written order beside it.
  std::vector<ConcurrentColdRead> concurrent_in_order;
  // The shuffled reads again with each thread spending work_s_per_file of CPU after each file (the one-thread cold
  // read's time per file: readers that wait about half their time, as run 21's cold tensor workers did): does the
  // device serve interleaved readers at the rate the counts above give? A diagnostic, not a model input.
  std::vector<ConcurrentColdRead> concurrent_with_work;
  double work_s_per_file = 0;
  // One forked process alone, then the shuffled reads again by as many processes as threads (ConcurrentColdRead::
  // threads counts them), since validation run 47:
  // the cold tensor cases' four DataLoader worker processes spent about 0.1 ms more CPU a 602 KB file than the
  // threads' page-cache fill figure gives (validation-runs.md run 47, finding 5), and one process alone did not.
  // The simulator's workers take the nearest count's fill CPU (models/profile.hpp, fill_cpu_s_per_byte_vs_processes).
  std::vector<ConcurrentColdRead> concurrent_processes;
  // The shuffled reads by 1 and by 4 threads with 0 to 2 ms of CPU after each file (forty-sixth session): does a
  // reader that pauses between files wait longer a file than one that does not? storage_check.py found the
  // simulated readers with work 18-21% short of concurrent_with_work at 2-4 threads (validation run 49, finding 6);
  // this separates the pause's cost from the readers' count. ConcurrentColdRead::threads counts the readers.
  std::vector<ConcurrentColdRead> pause_sweep;
  // Four readers again with work drawn file by file, uniform in [0, 2 x the mean) (forty-seventh session): run 51
  // found the fixed-work readers in step (3.80 reads in flight at 2 ms), where a device shared equally among the
  // reads in flight keeps them so only as long as nothing differs between them (validation-runs.md run 51, finding
  // 1). Readers still near 4 here point to something in the device that pulls them together; near 1 + 3 x the reading
  // share, to a fair share that noise undoes, as in the simulator.
  std::vector<ConcurrentColdRead> pause_sweep_jittered;
  // One reader alone, then the jittered sweep's four again, each file read as np.load reads a .npy through Python's
  // file object: a kHeadReadBytes read() first (the buffered reader filling its buffer for the magic and the
  // header), then the rest in one read() (forty-eighth session). The cold tensor cases' workers wait about 1.2x a file
  // what the simulator gives them while their reads overlap as simulated (validation run 52, finding 1); calibrate's
  // readers read a file in one request. A synchronous small request queued behind other readers' large ones would
  // show here as a longer wait a file at four readers than the whole-file sweep's, with none alone.
  std::vector<ConcurrentColdRead> pause_sweep_head_first;
  // The same count of small files (kSmallFileBytes) read cold by this thread: beside the large files' time, a
  // file's fixed cost (open, metadata, its first request), which dominates small files (validation run 21,
  // finding 7: 93 KB JPEGs waited 0.08-0.34 ms a file alone where 640 KiB files' stream rate says 0.05).
  std::size_t small_files = 0, small_file_bytes = 0, small_bytes = 0;
  double small_cold_s = 0, small_cold_cpu_s = 0;
};

constexpr std::size_t kSmallFileBytes = 64u << 10;
// The CPU a reader spends after each file in the pause sweep: none up to a JPEG worker's decode.
constexpr double kPauseSweepWorkS[] = {0.0, 0.25e-3, 0.5e-3, 1e-3, 2e-3};
// The jittered sweep's mean work a file: near a cold tensor worker's CPU a file, and the fixed sweep's longest.
constexpr double kJitteredWorkS[] = {0.5e-3, 2e-3};
// np.load's first read through Python's io.BufferedReader: its buffer, st_blksize (4 KiB on ext4 and the H200's
// data disk).
constexpr std::size_t kHeadReadBytes = 4u << 10;

// Keeps this thread on its core for `s` seconds of its own CPU time (nothing for s <= 0).
void spin_cpu_s(double s) {
  if (s <= 0.0) return;
  const double until = thread_cpu_s() + s;
  while (thread_cpu_s() < until) {
  }
}

// Reads every file whole (open, read() until EOF, close) through the page cache; adds to wall and
// CPU seconds. Returns "" or what failed.
std::string read_files_whole(const std::vector<std::filesystem::path>& files, std::vector<char>& buf, double& wall_s,
                             double& cpu_s, std::size_t& bytes, double work_s_per_file = 0.0,
                             std::vector<ReadSpan>* spans = nullptr, double work_jitter = 0.0,
                             std::uint64_t seed = 0, std::size_t head_bytes = 0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const double t0 = now_s(), c0 = thread_cpu_s();
  for (const auto& f : files) {
    const double read_start_s = spans ? now_s() : 0.0;
    Fd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) return "cannot open " + f.string() + ": " + std::strerror(errno);
    // head first: the file's first request alone, as np.load's first small read() makes it
    for (std::size_t ask = head_bytes > 0 ? std::min(head_bytes, buf.size()) : buf.size();; ask = buf.size()) {
      const ssize_t n = ::read(fd.get(), buf.data(), ask);
      if (n < 0) return "read " + f.string() + ": " + std::strerror(errno);
      if (n == 0) break;
      bytes += static_cast<std::size_t>(n);
    }
    if (spans) spans->push_back({read_start_s, now_s()});
    // a DataLoader worker decodes between two reads
    spin_cpu_s(work_jitter > 0.0 ? jittered_work_s(work_s_per_file, work_jitter, u01(rng)) : work_s_per_file);
  }
  cpu_s += thread_cpu_s() - c0;
  wall_s += now_s() - t0;
  return "";
}

// Drops `files` (written and synced: clean pages) from the page cache.
std::string drop_from_page_cache(const std::vector<std::filesystem::path>& files) {
  for (const auto& f : files) {
    Fd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) return "cannot open " + f.string() + ": " + std::strerror(errno);
    posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  }
  return "";
}

// One thread's wait rate in a concurrent cold read: its share of the bytes over the wall less its share of the CPU
// (0 when the CPU covers the wall: nothing waited for).
double per_thread_wait_bytes_per_s(const ConcurrentColdRead& c) {
  const double wait_s = c.wall_s - c.cpu_s / c.threads;
  return wait_s > 0.0 ? static_cast<double>(c.bytes) / c.threads / wait_s : 0.0;
}

// A thread's wall a file in a concurrent cold read of `files` files, and its wait a file: the wall less the thread's
// own CPU (the spin and the read's), over its share of the files.
double wall_s_per_file(const ConcurrentColdRead& c, std::size_t files) {
  return c.wall_s / (static_cast<double>(files) / c.threads);
}
double wait_s_per_file(const ConcurrentColdRead& c, std::size_t files) {
  return (c.wall_s - c.cpu_s / c.threads) / (static_cast<double>(files) / c.threads);
}

// A pause-sweep point as the profile keeps it (work_jitter only where the work was drawn file by file).
nlohmann::json paused_read_json(const ConcurrentColdRead& q) {
  nlohmann::json j = {{"threads", q.threads}, {"bytes", q.bytes}, {"wall_s", q.wall_s}, {"cpu_s", q.cpu_s},
                      {"work_s_per_file", q.work_s_per_file}, {"readers_in_flight_mean", q.readers_in_flight_mean}};
  if (q.work_jitter > 0.0) j["work_jitter"] = q.work_jitter;
  if (q.head_bytes > 0) j["head_bytes"] = q.head_bytes;
  return j;
}

// A small file's fixed cost read cold: its wait (wall less CPU, a file) beyond its bytes at the one-reader stream
// rate, never below 0 (the simulator pays it once a file, as storage.read_latency_s).
double cold_file_fixed_s(const BufferedRead& b, double stream_bytes_per_s) {
  const double files = static_cast<double>(b.small_files);
  const double wait_s = (b.small_cold_s - b.small_cold_cpu_s) / files;
  const double bytes_s = stream_bytes_per_s > 0.0 ? static_cast<double>(b.small_bytes) / files / stream_bytes_per_s : 0.0;
  return std::max(0.0, wait_s - bytes_s);
}

// The files in a fixed pseudo-random order (the same on every run): how a shuffled sampler hands them to workers.
std::vector<std::filesystem::path> shuffled_order(std::vector<std::filesystem::path> files) {
  std::mt19937_64 rng(20261130);
  std::shuffle(files.begin(), files.end(), rng);
  return files;
}

// `threads` threads read `files` cold, thread j every threads-th file from j; out gets the wall from their
// common start to the last one's end and their CPU summed.
std::string time_concurrent_cold_read(const std::vector<std::filesystem::path>& files, std::size_t file_bytes,
                                      int threads, ConcurrentColdRead& out, double work_s_per_file = 0.0,
                                      double work_jitter = 0.0, std::size_t head_bytes = 0) {
  if (std::string err = drop_from_page_cache(files); !err.empty()) return err;
  std::vector<std::vector<std::filesystem::path>> shares(static_cast<std::size_t>(threads));
  for (std::size_t i = 0; i < files.size(); ++i) shares[i % shares.size()].push_back(files[i]);
  std::vector<double> wall(shares.size()), cpu(shares.size());
  std::vector<std::size_t> bytes(shares.size());
  std::vector<std::string> errors(shares.size());
  std::vector<std::vector<ReadSpan>> spans(shares.size());
  for (std::size_t j = 0; j < shares.size(); ++j) spans[j].reserve(shares[j].size());  // no allocation while timed
  std::latch start(threads + 1);
  double t0 = 0.0;
  {
    std::vector<std::jthread> pool;
    for (std::size_t j = 0; j < shares.size(); ++j)
      pool.emplace_back([&, j] {
        std::vector<char> buf(file_bytes);
        start.arrive_and_wait();
        // each thread its own draws (seed: its index), the same on every run
        errors[j] = read_files_whole(shares[j], buf, wall[j], cpu[j], bytes[j], work_s_per_file, &spans[j], work_jitter,
                                     static_cast<std::uint64_t>(j) + 1, head_bytes);
      });
    t0 = now_s();
    start.arrive_and_wait();
  }
  out = ConcurrentColdRead{threads, 0, now_s() - t0, 0.0};
  out.work_s_per_file = work_s_per_file;
  out.work_jitter = work_jitter;
  out.head_bytes = head_bytes;
  std::vector<ReadSpan> all;
  for (std::size_t j = 0; j < shares.size(); ++j) {
    if (!errors[j].empty()) return errors[j];
    out.bytes += bytes[j];
    out.cpu_s += cpu[j];
    all.insert(all.end(), spans[j].begin(), spans[j].end());
  }
  out.readers_in_flight_mean = mean_readers_in_flight(all);
  return "";
}

// What one reader process sends back through its pipe: plain bytes, no allocation after fork.
struct ChildRead {
  double end_s = 0.0, cpu_s = 0.0;  // end on now_s()'s steady clock (CLOCK_MONOTONIC: shared by the processes)
  std::uint64_t bytes = 0;
  int error = 0;  // errno of the first failure, 0 if none
};

// In a forked reader: read every path whole into one anonymous mapping (no malloc after fork: the parent may have
// threads), after the start pipe closes. Only system calls; ends with _exit.
[[noreturn]] void child_read_files(const std::vector<const char*>& paths, std::size_t file_bytes, int start_fd,
                                   int result_fd) {
  ChildRead r;
  void* map = ::mmap(nullptr, file_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) r.error = errno;
  char go = 0;
  while (::read(start_fd, &go, 1) < 0 && errno == EINTR) {
  }  // EOF: the parent closed its end, every reader starts now
  const double c0 = thread_cpu_s();
  for (std::size_t i = 0; i < paths.size() && r.error == 0; ++i) {
    const int fd = ::open(paths[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      r.error = errno;
      break;
    }
    for (;;) {
      const ssize_t n = ::read(fd, map, file_bytes);
      if (n < 0) r.error = errno;
      if (n <= 0) break;
      r.bytes += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
  }
  r.cpu_s = thread_cpu_s() - c0;
  r.end_s = now_s();
  [[maybe_unused]] const ssize_t w = ::write(result_fd, &r, sizeof r);
  ::_exit(0);
}

// `processes` forked processes read `files` cold, process j every processes-th file from j, as DataLoader workers
// do: out gets the wall from their common start to the last one's end and their CPU summed.
std::string time_concurrent_cold_read_processes(const std::vector<std::filesystem::path>& files,
                                                std::size_t file_bytes, int processes, ConcurrentColdRead& out) {
  if (std::string err = drop_from_page_cache(files); !err.empty()) return err;
  std::vector<std::vector<const char*>> shares(static_cast<std::size_t>(processes));
  for (std::size_t i = 0; i < files.size(); ++i) shares[i % shares.size()].push_back(files[i].c_str());
  int start[2];
  if (::pipe2(start, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  std::vector<int> results;
  std::vector<pid_t> pids;
  std::string err;
  for (std::size_t j = 0; j < shares.size() && err.empty(); ++j) {
    int res[2];
    if (::pipe2(res, O_CLOEXEC) != 0) {
      err = std::string("pipe: ") + std::strerror(errno);
      break;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(start[1]);
      child_read_files(shares[j], file_bytes, start[0], res[1]);
    }
    ::close(res[1]);
    if (pid < 0) {
      ::close(res[0]);
      err = std::string("fork: ") + std::strerror(errno);
      break;
    }
    pids.push_back(pid);
    results.push_back(res[0]);
  }
  ::close(start[0]);
  const double t0 = now_s();
  ::close(start[1]);  // every reader sees EOF and starts
  out = ConcurrentColdRead{processes, 0, 0.0, 0.0};
  double last_end_s = t0;
  for (std::size_t j = 0; j < results.size(); ++j) {
    ChildRead r;
    ssize_t n;
    while ((n = ::read(results[j], &r, sizeof r)) < 0 && errno == EINTR) {
    }
    ::close(results[j]);
    int status = 0;
    while (::waitpid(pids[j], &status, 0) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof r)) {
      if (err.empty()) err = "a reader process ended without its result";
      continue;
    }
    if (r.error != 0 && err.empty()) err = std::string("reader process: ") + std::strerror(r.error);
    out.bytes += r.bytes;
    out.cpu_s += r.cpu_s;
    last_end_s = std::max(last_end_s, r.end_s);
  }
  out.wall_s = last_end_s - t0;
  return err;
}

// `count` files of `file_bytes` in `dir`, written, synced and dropped from the page cache, read
// whole cold and then warm by this one thread; then cold again by each of `concurrent_threads` threads
// at once (validation runs 2-15: four workers' cold reads waited twice as long as one alone's).
std::string time_buffered_read(const std::filesystem::path& dir, std::size_t count, std::size_t file_bytes,
                               const std::vector<int>& concurrent_threads, BufferedRead& out) {
  std::vector<std::filesystem::path> files;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = std::to_string(i);  // (not "f" + ...: GCC 12 warns falsely, -Wrestrict)
    files.push_back(dir / name.insert(0, "file"));
    if (std::string err = write_test_file(files.back(), file_bytes); !err.empty()) return err;
  }
  std::vector<char> buf(file_bytes);  // one read() asks for the whole file, as np.load or PIL does
  out = BufferedRead{};
  out.file_bytes = file_bytes;
  out.files = count;
  std::size_t warm_bytes = 0;
  if (std::string err = read_files_whole(files, buf, out.cold_s, out.cold_cpu_s, out.bytes); !err.empty()) return err;
  if (std::string err = read_files_whole(files, buf, out.warm_s, out.warm_cpu_s, warm_bytes); !err.empty()) return err;
  const std::vector<std::filesystem::path> shuffled = shuffled_order(files);
  out.work_s_per_file = out.cold_s / static_cast<double>(count);
  {  // one forked process alone first: a process's own cost apart from several reading at once
    ConcurrentColdRead one;
    if (std::string err = time_concurrent_cold_read_processes(shuffled, file_bytes, 1, one); !err.empty()) return err;
    out.concurrent_processes.push_back(one);
  }
  for (int threads : concurrent_threads) {
    if (static_cast<std::size_t>(threads) * 4 > count) break;  // at least 4 files a thread
    ConcurrentColdRead c, in_order, with_work;
    if (std::string err = time_concurrent_cold_read(shuffled, file_bytes, threads, c); !err.empty()) return err;
    if (std::string err = time_concurrent_cold_read(files, file_bytes, threads, in_order); !err.empty()) return err;
    if (std::string err = time_concurrent_cold_read(shuffled, file_bytes, threads, with_work, out.work_s_per_file);
        !err.empty())
      return err;
    out.concurrent.push_back(c);
    out.concurrent_in_order.push_back(in_order);
    out.concurrent_with_work.push_back(with_work);
    ConcurrentColdRead procs;
    if (std::string err = time_concurrent_cold_read_processes(shuffled, file_bytes, threads, procs); !err.empty())
      return err;
    out.concurrent_processes.push_back(procs);
  }
  for (int threads : {1, 4}) {
    if (static_cast<std::size_t>(threads) * 4 > count) break;  // at least 4 files a thread
    for (double work_s : kPauseSweepWorkS) {
      ConcurrentColdRead p;
      if (std::string err = time_concurrent_cold_read(shuffled, file_bytes, threads, p, work_s); !err.empty())
        return err;
      out.pause_sweep.push_back(p);
    }
  }
  if (4 * 4 <= count) {  // at least 4 files a thread
    for (double work_s : kJitteredWorkS) {
      ConcurrentColdRead p;
      if (std::string err = time_concurrent_cold_read(shuffled, file_bytes, 4, p, work_s, 1.0); !err.empty())
        return err;
      out.pause_sweep_jittered.push_back(p);
    }
    ConcurrentColdRead alone;  // one reader, no work: the two requests' cost with nobody beside them
    if (std::string err = time_concurrent_cold_read(shuffled, file_bytes, 1, alone, 0.0, 0.0, kHeadReadBytes);
        !err.empty())
      return err;
    out.pause_sweep_head_first.push_back(alone);
    for (double work_s : kJitteredWorkS) {
      ConcurrentColdRead p;
      if (std::string err = time_concurrent_cold_read(shuffled, file_bytes, 4, p, work_s, 1.0, kHeadReadBytes);
          !err.empty())
        return err;
      out.pause_sweep_head_first.push_back(p);
    }
  }
  std::vector<std::filesystem::path> small;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = std::to_string(i);
    small.push_back(dir / name.insert(0, "small"));
    if (std::string err = write_test_file(small.back(), kSmallFileBytes); !err.empty()) return err;
  }
  if (std::string err = drop_from_page_cache(small); !err.empty()) return err;
  out.small_files = count;
  out.small_file_bytes = kSmallFileBytes;
  // in a shuffled order, as a shuffled sampler reads them (a file's metadata is then not its neighbour's)
  if (std::string err =
          read_files_whole(shuffled_order(small), buf, out.small_cold_s, out.small_cold_cpu_s, out.small_bytes);
      !err.empty())
    return err;
  return "";
}

Engine pick_engine(int fd, std::string& why_not_uring) {
  io_uring ring{};
  const int r = io_uring_queue_init(1, &ring, 0);
  if (r < 0) {
    why_not_uring = std::string("io_uring_queue_init: ") + std::strerror(-r);
    return Engine::pread;
  }
  io_uring_queue_exit(&ring);
  Reader probe(Engine::io_uring, fd, kAlign);  // submissions can be refused after setup
  const long n = probe.ready() ? probe.read_at(0) : -ENOMEM;
  if (n < 0) {
    why_not_uring = std::string("io_uring read: ") + std::strerror(static_cast<int>(-n));
    return Engine::pread;
  }
  return Engine::io_uring;
}

}  // namespace

SectionOutcome run_storage(const RunContext& ctx) {
  SectionReport report;
  std::filesystem::path dir = ctx.storage_path;
  std::filesystem::path created_dir;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pipeplan-storage-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return Problem::failed(std::string("mkdtemp: ") + std::strerror(errno));
    dir = created_dir = tmpl;
  }
  const std::filesystem::path file = dir / ("pipeplan-storage-test." + std::to_string(::getpid()));
  Cleanup cleanup(file, created_dir);

  const std::size_t file_bytes = ctx.by_scale<std::size_t>(16u << 20, 256u << 20, 1u << 30);
  const double point_s = ctx.by_scale(0.1, 0.2, 0.4);
  const int max_jobs = static_cast<int>(std::min(ctx.cores, 32u));
  const std::vector<std::size_t> block_sizes = ctx.scale == Scale::tiny  ? std::vector<std::size_t>{4096, 1u << 20}
                                               : ctx.scale == Scale::quick ? std::vector<std::size_t>{4096, 64u << 10, 1u << 20, 4u << 20}
                                                                           : std::vector<std::size_t>{4096, 16u << 10, 64u << 10, 256u << 10, 1u << 20, 4u << 20};
  std::vector<int> jobs = {1};
  if (ctx.scale == Scale::full) {
    for (int j = 2; j < max_jobs; j *= 2) jobs.push_back(j);
  }
  if (max_jobs > 1) jobs.push_back(max_jobs);

  ctx.log(strf("storage: writing a %zu MiB test file in %s", file_bytes >> 20, dir.c_str()));
  if (const std::string err = write_test_file(file, file_bytes); !err.empty()) return Problem::failed(err);
  if (ctx.interrupted()) return Problem::interrupted();

  bool direct = true;
  Fd fd(::open(file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
  if (!fd.ok()) {
    direct = false;
    report.notes.push_back(std::string("O_DIRECT refused (") + std::strerror(errno) +
                           "): page cache dropped per file with posix_fadvise(DONTNEED)");
    fd = Fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) return Problem::failed("cannot open " + file.string() + ": " + std::strerror(errno));
  }
  std::string why_not_uring;
  const Engine engine = pick_engine(fd.get(), why_not_uring);
  if (engine == Engine::pread) report.notes.push_back("io_uring unavailable (" + why_not_uring + "): pread");
  ctx.log(strf("storage: engine %s, cache bypass %s", engine == Engine::io_uring ? "io_uring" : "pread",
               direct ? "O_DIRECT" : "posix_fadvise(DONTNEED)"));
  ctx.log("storage:  rw        bs  numjobs      bw_MB/s       iops  clat_p50_us  clat_p99_us");

  nlohmann::json points = nlohmann::json::array();
  double best_seq_bw = 0.0, best_rand_iops = 0.0, rand_lat_s = 0.0;
  for (const bool random : {false, true}) {
    for (const std::size_t bs : block_sizes) {
      for (const int numjobs : jobs) {
        if (ctx.interrupted()) return Problem::interrupted();
        if (!direct) posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
        const PointSpec spec{random, bs, numjobs};
        std::vector<JobResult> results(static_cast<std::size_t>(numjobs));
        std::latch start(numjobs);
        {
          std::vector<std::jthread> threads;
          for (int j = 0; j < numjobs; ++j)
            threads.emplace_back(run_job, engine, fd.get(), file_bytes, std::cref(spec), j, point_s, !direct,
                                 std::ref(start), std::ref(results[static_cast<std::size_t>(j)]));
        }
        std::vector<double> clat;
        std::size_t io_bytes = 0;
        double runtime_s = 0.0;
        for (const auto& r : results) {
          if (r.error < 0)
            return Problem::failed(strf("%s read of %zu bytes: %s", random ? "random" : "sequential", bs,
                                        std::strerror(static_cast<int>(-r.error))));
          clat.insert(clat.end(), r.clat_ns.begin(), r.clat_ns.end());
          io_bytes += r.io_bytes;
          runtime_s = std::max(runtime_s, r.runtime_s);
        }
        if (clat.empty() || runtime_s <= 0.0) return Problem::failed("no read completed");
        const double bw = static_cast<double>(io_bytes) / runtime_s;
        const double iops = static_cast<double>(clat.size()) / runtime_s;
        const double p50 = percentile(clat, 50), p99 = percentile(clat, 99);
        points.push_back({{"rw", random ? "randread" : "read"},
                          {"bs", bs},
                          {"numjobs", numjobs},
                          {"iodepth", 1},
                          {"io_bytes", io_bytes},
                          {"runtime_s", runtime_s},
                          {"bw_bytes", bw},
                          {"iops", iops},
                          {"clat_ns",
                           {{"mean", mean(clat)},
                            {"p50", p50},
                            {"p90", percentile(clat, 90)},
                            {"p99", p99},
                            {"max", *std::max_element(clat.begin(), clat.end())}}}});
        ctx.log(strf("storage: %-8s %8zu %8d %12.1f %10.0f %12.1f %12.1f", random ? "randread" : "read", bs, numjobs,
                     bw / 1e6, iops, p50 / 1e3, p99 / 1e3));
        // Every scale measures 1 MiB and 4 KiB blocks: the profile's summary figures.
        if (!random && bs == (1u << 20)) best_seq_bw = std::max(best_seq_bw, bw);
        if (random && bs == 4096) {
          best_rand_iops = std::max(best_rand_iops, iops);
          if (numjobs == 1) rand_lat_s = p50 * 1e-9;
        }
      }
    }
  }
  // One worker's view: many small files read whole through the page cache, cold then warm (only
  // where the page cache can be dropped, that is where O_DIRECT worked: not on tmpfs).
  nlohmann::json buffered = nullptr;
  double stream_read_bytes_per_s = 0.0, buffered_read_cpu_s_per_byte = 0.0, cold_file_latency_s = 0.0;
  if (direct && !ctx.interrupted()) {
    const std::filesystem::path small_dir = dir / ("pipeplan-storage-files." + std::to_string(::getpid()));
    struct RemoveTree {  // the files and their folder go, whatever way the measurement ends
      std::filesystem::path d;
      ~RemoveTree() {
        std::error_code e;
        std::filesystem::remove_all(d, e);
      }
    } remove_tree{small_dir};
    std::error_code ec;
    std::filesystem::create_directory(small_dir, ec);
    BufferedRead b;
    const std::size_t count = ctx.by_scale<std::size_t>(16, 96, 256);
    const std::size_t each = ctx.by_scale<std::size_t>(256u << 10, 640u << 10, 640u << 10);
    const std::vector<int> concurrent_threads = ctx.by_scale<std::vector<int>>({2}, {2, 4}, {2, 4, 8});
    std::string err = ec ? "cannot create " + small_dir.string() + ": " + ec.message()
                         : time_buffered_read(small_dir, count, each, concurrent_threads, b);
    if (!err.empty()) {
      report.notes.push_back("buffered cold read not measured: " + err);
    } else if (b.bytes > 0 && b.cold_s > b.cold_cpu_s) {
      stream_read_bytes_per_s = static_cast<double>(b.bytes) / (b.cold_s - b.cold_cpu_s);
      buffered_read_cpu_s_per_byte = fill_cpu_s_per_byte(b.cold_cpu_s, b.warm_cpu_s, b.bytes);
      buffered = {{"bytes", b.bytes}, {"files", b.files}, {"file_bytes", b.file_bytes}, {"read_size", b.file_bytes},
                  {"cold_s", b.cold_s}, {"cold_cpu_s", b.cold_cpu_s}, {"warm_s", b.warm_s}, {"warm_cpu_s", b.warm_cpu_s}};
      ctx.log(strf("storage: %zu files of %zu KiB read whole, one thread: cold %.1f MB/s of wall (CPU %.3f s), warm "
                   "CPU %.3f s -> waits at %.1f MB/s, page-cache fill %.3f ns/B", b.files, b.file_bytes >> 10,
                   b.bytes / b.cold_s / 1e6, b.cold_cpu_s, b.warm_cpu_s, stream_read_bytes_per_s / 1e6,
                   buffered_read_cpu_s_per_byte * 1e9));
      // Each reader's wait rate by reader count: the simulator's storage.stream_read_vs_readers (docs/model.md).
      nlohmann::json concurrent = nlohmann::json::array(), in_order = nlohmann::json::array(),
                     with_work = nlohmann::json::array(), processes = nlohmann::json::array();
      for (std::size_t i = 0; i < b.concurrent.size(); ++i) {  // the three are measured together per thread count
        const ConcurrentColdRead &c = b.concurrent[i], &o = b.concurrent_in_order[i], &w = b.concurrent_with_work[i];
        concurrent.push_back({{"threads", c.threads}, {"bytes", c.bytes}, {"wall_s", c.wall_s}, {"cpu_s", c.cpu_s}});
        in_order.push_back({{"threads", o.threads}, {"bytes", o.bytes}, {"wall_s", o.wall_s}, {"cpu_s", o.cpu_s}});
        with_work.push_back({{"threads", w.threads}, {"bytes", w.bytes}, {"wall_s", w.wall_s}, {"cpu_s", w.cpu_s},
                             {"work_s_per_file", b.work_s_per_file},
                             {"readers_in_flight_mean", w.readers_in_flight_mean}});
        ctx.log(strf("storage: the same files read cold by %d threads at once, in a shuffled order: %.1f MB/s in all "
                     "(CPU %.3f s); each thread waits at %.1f MB/s (one alone: %.1f; in the written order: %.1f)",
                     c.threads, c.bytes / c.wall_s / 1e6, c.cpu_s, per_thread_wait_bytes_per_s(c) / 1e6,
                     stream_read_bytes_per_s / 1e6, per_thread_wait_bytes_per_s(o) / 1e6));
        // the spin's CPU is in cpu_s: the wait left is the device's
        ctx.log(strf("storage: %d threads, shuffled, %.3f ms of CPU after each file: each thread waits at %.1f MB/s; "
                     "%.2f reads in flight during a read", w.threads, b.work_s_per_file * 1e3,
                     per_thread_wait_bytes_per_s(w) / 1e6, w.readers_in_flight_mean));
      }
      for (const ConcurrentColdRead& q : b.concurrent_processes) {
        processes.push_back({{"processes", q.threads}, {"bytes", q.bytes}, {"wall_s", q.wall_s}, {"cpu_s", q.cpu_s}});
        // the warm re-read was one thread's of the same bytes, so each fill per byte compares with the threads'
        double threads_fill = buffered_read_cpu_s_per_byte;  // one process against one thread alone
        for (const ConcurrentColdRead& c : b.concurrent)
          if (c.threads == q.threads) threads_fill = fill_cpu_s_per_byte(c.cpu_s, b.warm_cpu_s, c.bytes);
        ctx.log(strf("storage: the same files read cold by %d process(es) at once, shuffled: %.1f MB/s in all (CPU "
                     "%.3f s); page-cache fill %.3f ns/B (as many threads: %.3f, one thread alone: %.3f)",
                     q.threads, q.bytes / q.wall_s / 1e6, q.cpu_s, fill_cpu_s_per_byte(q.cpu_s, b.warm_cpu_s, q.bytes) * 1e9,
                     threads_fill * 1e9, buffered_read_cpu_s_per_byte * 1e9));
      }
      nlohmann::json pause_sweep = nlohmann::json::array();
      for (const ConcurrentColdRead& q : b.pause_sweep) {
        pause_sweep.push_back(paused_read_json(q));
        ctx.log(strf("storage: pause sweep, %d thread(s), shuffled, %.2f ms of CPU after each file: %.3f ms of wall "
                     "a file, %.3f ms waited a file (each thread waits at %.1f MB/s); %.2f reads in flight during a "
                     "read", q.threads, q.work_s_per_file * 1e3, wall_s_per_file(q, b.files) * 1e3,
                     wait_s_per_file(q, b.files) * 1e3, per_thread_wait_bytes_per_s(q) / 1e6,
                     q.readers_in_flight_mean));
      }
      buffered["pause_sweep"] = pause_sweep;
      nlohmann::json jittered = nlohmann::json::array();
      for (const ConcurrentColdRead& q : b.pause_sweep_jittered) {
        jittered.push_back(paused_read_json(q));
        ctx.log(strf("storage: jittered pause sweep, %d threads, shuffled, %.2f ms of CPU after each file on average "
                     "(uniform, +-%.0f%%): %.3f ms of wall a file, %.3f ms waited a file; %.2f reads in flight during "
                     "a read", q.threads, q.work_s_per_file * 1e3, q.work_jitter * 100,
                     wall_s_per_file(q, b.files) * 1e3, wait_s_per_file(q, b.files) * 1e3, q.readers_in_flight_mean));
      }
      buffered["pause_sweep_jittered"] = jittered;
      nlohmann::json head_first = nlohmann::json::array();
      for (const ConcurrentColdRead& q : b.pause_sweep_head_first) {
        head_first.push_back(paused_read_json(q));
        const std::string drawn = q.work_jitter > 0.0 ? strf(" on average (uniform, +-%.0f%%)", q.work_jitter * 100) : "";
        ctx.log(strf("storage: head-first reads (%zu KiB, then the rest), %d thread(s), shuffled, %.2f ms of CPU after "
                     "each file%s: %.3f ms of wall a file, %.3f ms waited a file; %.2f reads in flight during a read",
                     q.head_bytes >> 10, q.threads, q.work_s_per_file * 1e3, drawn.c_str(),
                     wall_s_per_file(q, b.files) * 1e3, wait_s_per_file(q, b.files) * 1e3, q.readers_in_flight_mean));
      }
      buffered["pause_sweep_head_first"] = head_first;
      buffered["concurrent_processes"] = processes;
      buffered["concurrent"] = concurrent;
      buffered["concurrent_in_order"] = in_order;
      buffered["concurrent_with_work"] = with_work;
      if (b.small_files > 0 && b.small_bytes > 0) {
        cold_file_latency_s = cold_file_fixed_s(b, stream_read_bytes_per_s);
        buffered["small_files"] = {{"files", b.small_files}, {"file_bytes", b.small_file_bytes},
                                   {"cold_s", b.small_cold_s}, {"cold_cpu_s", b.small_cold_cpu_s}};
        ctx.log(strf("storage: %zu files of %zu KiB read whole cold, one thread: %.3f ms a file of which %.3f CPU; "
                     "%.3f ms beyond its bytes at the stream rate -> cold_file_latency_s", b.small_files,
                     b.small_file_bytes >> 10, b.small_cold_s / b.small_files * 1e3,
                     b.small_cold_cpu_s / b.small_files * 1e3, cold_file_latency_s * 1e3));
      }
    } else {
      report.notes.push_back("buffered cold read not used: it took no longer than its CPU time (cached?)");
    }
  } else if (!direct) {
    report.notes.push_back("buffered cold read not measured: the page cache cannot be dropped here");
  }
  report.profile_keys["storage"] = {{"path", dir.string()},
                                    {"engine", engine == Engine::io_uring ? "io_uring" : "pread"},
                                    {"cache_bypass", direct ? "O_DIRECT" : "posix_fadvise_dontneed"},
                                    {"read_bytes_per_s", best_seq_bw},
                                    {"read_iops", best_rand_iops},
                                    {"read_latency_s", rand_lat_s},
                                    {"points", points}};
  if (!buffered.is_null()) {
    report.profile_keys["storage"]["stream_read_bytes_per_s"] = stream_read_bytes_per_s;
    report.profile_keys["storage"]["buffered_read_cpu_s_per_byte"] = buffered_read_cpu_s_per_byte;
    report.profile_keys["storage"]["buffered_read"] = buffered;
    if (buffered.contains("small_files")) report.profile_keys["storage"]["cold_file_latency_s"] = cold_file_latency_s;
  }
  return report;
}

}  // namespace pipeplan::calibrate
