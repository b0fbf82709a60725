// ipc: what it costs the DataLoader's main process to receive one batch from a worker.
// PyTorch's file_descriptor strategy: the worker collates into shared memory and sends the
// fd over a Unix socket; the main process maps it and the batch's pages are touched (first
// by the pin thread's copy or the H2D copy). Here a forked writer plays the worker; the
// receiver's clock runs from the message's arrival through recvmsg, mmap, a read of every
// page, munmap and close. Fit: s = receive_s_per_batch + bytes * receive_s_per_byte.
// The release (munmap + close) is also timed apart, after a read of every page and without one:
// release_s_per_byte and release_untouched_s_per_byte. An unpinned batch's pages are touched by its
// H2D copy (copy.h2d_pageable_fresh_mapping carries that touch) and released when the loop drops it.
// Also the writer's side: filling a fresh shared-memory segment (what collate does in a
// worker), fitted per byte: shm_write_s_per_byte.
// And the pin thread's split (validation run 21, finding 2; run 31, finding 1): pin_memory() copies a
// received batch into page-locked memory in one pass, faulting each page of the fresh mapping as the copy
// first reads it. At batch sizes, interleaved round by round, one batch's pages are only read (the touch)
// and another's are copied fresh into a resident destination, then copied again, now touched; the touch's
// share of the fresh copy is what the memory map is busy for inside pin_memory() (pin_split_points,
// pin_touch_share). Recorded for the model's check; the simulator does not read it yet.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "calibrate/pin_split.hpp"
#include "calibrate/sections.hpp"
#include "calibrate/stats.hpp"

namespace pipeplan::calibrate {

namespace {

constexpr std::size_t kPageBytes = 4096;

// The writer (child process): for each size, a fresh memfd filled (pages allocated, as a
// worker's collate does), sent, then wait for the receiver's ack. Only system calls here.
[[noreturn]] void writer_main(int sock, const std::vector<std::size_t>& plan) {
  for (std::size_t bytes : plan) {
    const int fd = memfd_create("pipeplan-ipc-batch", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) _exit(2);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) _exit(3);
    std::memset(p, 0x5a, bytes);
    munmap(p, bytes);

    std::size_t payload = bytes;
    iovec iov{&payload, sizeof payload};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) _exit(4);
    close(fd);
    char ack = 0;
    if (recv(sock, &ack, 1, 0) != 1) _exit(0);  // receiver gone (interrupted): stop quietly
  }
  _exit(0);
}

// One received batch, mapped in this process: the writer's memfd, its pages not yet touched here.
struct MappedBatch {
  unsigned char* data = nullptr;
  std::size_t bytes = 0;
  int fd = -1;
};

// Waits for the writer's next message (at most 60 s); *arrived_s: when it was there (writer time excluded).
bool wait_for_batch(int sock, double* arrived_s, std::string& error) {
  pollfd pfd{sock, POLLIN, 0};
  if (poll(&pfd, 1, 60000) != 1) {
    error = "writer sent nothing for 60 s";
    return false;
  }
  *arrived_s = now_s();
  return true;
}

// recvmsg and mmap of the batch whose message has arrived; false (and `error`) on failure.
bool map_batch(int sock, MappedBatch& batch, std::string& error) {
  std::size_t bytes = 0;
  iovec iov{&bytes, sizeof bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof bytes)) {
    error = std::string("recvmsg: ") + std::strerror(errno);
    return false;
  }
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (!cm || cm->cmsg_type != SCM_RIGHTS) {
    error = "no file descriptor in the message";
    return false;
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cm), sizeof fd);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    error = std::string("mmap: ") + std::strerror(errno);
    close(fd);
    return false;
  }
  batch = MappedBatch{static_cast<unsigned char*>(p), bytes, fd};
  return true;
}

// Reads one byte of every page: the first touch, one fault per page (or per fault-around block).
void touch_pages(const MappedBatch& batch) {
  const auto* in = static_cast<const volatile unsigned char*>(batch.data);
  unsigned sum = 0;
  for (std::size_t off = 0; off < batch.bytes; off += kPageBytes) sum += in[off];
  asm volatile("" : : "r"(sum));
}

// munmap + close: the last reference to the segment's pages.
void release_batch(MappedBatch& batch) {
  munmap(batch.data, batch.bytes);
  close(batch.fd);
  batch = MappedBatch{};
}

void ack(int sock) {
  const char one = 1;
  send(sock, &one, 1, MSG_NOSIGNAL);
}

// Receives one batch, reading every page when `touch`; returns seconds, or a negative value on error.
// *release_s: the munmap and close at the end (the last reference to the segment's pages).
double receive_one(int sock, bool touch, double* release_s, std::string& error) {
  double t0 = 0.0;
  if (!wait_for_batch(sock, &t0, error)) return -1.0;
  MappedBatch batch;
  if (!map_batch(sock, batch, error)) return -1.0;
  if (touch) touch_pages(batch);
  const double t_release = now_s();
  release_batch(batch);
  const double t1 = now_s();
  *release_s = t1 - t_release;
  return t1 - t0;
}

// One round of the pin thread's split at one size: the writer has two batches queued for it, in
// `touch_first` order. Times the read of every page of one (touch_s), the copy of the other into
// `dst` from its fresh mapping (fresh_copy_s: what pin_memory() does) and the same copy again, its
// pages now touched (touched_copy_s). False and `error` on failure.
bool split_round(int sock, bool touch_first, unsigned char* dst, PinSplit& round, std::string& error) {
  for (int k = 0; k < 2; ++k) {
    const bool touch_this = (k == 0) == touch_first;
    double arrived = 0.0;
    MappedBatch batch;
    if (!wait_for_batch(sock, &arrived, error) || !map_batch(sock, batch, error)) return false;
    if (touch_this) {
      const double t0 = now_s();
      touch_pages(batch);
      round.touch_s = now_s() - t0;
    } else {
      const double t0 = now_s();
      std::memcpy(dst, batch.data, batch.bytes);
      const double t1 = now_s();
      std::memcpy(dst, batch.data, batch.bytes);
      round.touched_copy_s = now_s() - t1;
      round.fresh_copy_s = t1 - t0;
      asm volatile("" : : "r"(dst) : "memory");
    }
    release_batch(batch);
    ack(sock);
  }
  return true;
}

// A worker's collate writes its output into a fresh shared-memory segment: every page is
// faulted in (and zeroed by the kernel) as it is first written. Seconds to create, map, fill
// from a source buffer, unmap and close one segment of `bytes`; negative on error.
double fresh_shm_write_s(const std::vector<char>& source, std::size_t bytes) {
  const double t0 = now_s();
  const int fd = memfd_create("pipeplan-collate", MFD_CLOEXEC);
  if (fd < 0) return -1.0;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return -1.0;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return -1.0;
  }
  std::memcpy(p, source.data(), bytes);
  munmap(p, bytes);
  close(fd);
  return now_s() - t0;
}

}  // namespace

SectionOutcome run_ipc(const RunContext& ctx) {
  const std::size_t largest = ctx.by_scale<std::size_t>(16u << 20, 64u << 20, 256u << 20);
  const int trials = ctx.by_scale(3, 5, 7);
  std::vector<std::size_t> sizes;
  for (std::size_t b = 64u << 10; b <= largest; b *= 4) sizes.push_back(b);

  // per size: one warm-up, the trials read every page, then as many that do not
  const int per_size = 1 + 2 * trials;
  std::vector<std::size_t> plan;
  for (std::size_t b : sizes)
    for (int t = 0; t < per_size; ++t) plan.push_back(b);
  // then the pin thread's split: a round is two batches of each size (one touched, one copied); the first
  // round warms up. Sizes around the validation's 38.5 MB image and tensor batches.
  const std::vector<std::size_t> split_sizes =
      ctx.by_scale<std::vector<std::size_t>>({4u << 20}, {16u << 20, 32u << 20}, {16u << 20, 32u << 20, 64u << 20});
  const int split_rounds = 1 + ctx.by_scale(3, 5, 7);
  for (int r = 0; r < split_rounds; ++r)
    for (std::size_t b : split_sizes) plan.insert(plan.end(), 2, b);

  int socks[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks) != 0)
    return Problem::failed(std::string("socketpair: ") + std::strerror(errno));
  const pid_t child = fork();
  if (child < 0) {
    close(socks[0]);
    close(socks[1]);
    return Problem::failed(std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    close(socks[0]);
    writer_main(socks[1], plan);
  }
  close(socks[1]);
  const int sock = socks[0];

  std::vector<double> xs, ys, release_ys, release_untouched_ys;
  nlohmann::json points = nlohmann::json::array();
  std::string error;
  bool interrupted = false;
  for (std::size_t b : sizes) {
    std::vector<double> times, releases, releases_untouched;
    for (int t = 0; t < per_size && error.empty(); ++t) {
      if (ctx.interrupted()) {
        interrupted = true;
        break;
      }
      const bool touch = t <= trials;
      double release_s = 0.0;
      const double s = receive_one(sock, touch, &release_s, error);
      if (s < 0) break;
      if (t > 0 && touch) {
        times.push_back(s);
        releases.push_back(release_s);
      } else if (!touch) {
        releases_untouched.push_back(release_s);
      }
      ack(sock);
    }
    if (interrupted || !error.empty()) break;
    const double s = median(times);
    xs.push_back(static_cast<double>(b));
    ys.push_back(s);
    release_ys.push_back(median(releases));
    release_untouched_ys.push_back(median(releases_untouched));
    points.push_back({{"bytes", b}, {"s", s}, {"release_s", release_ys.back()},
                      {"release_untouched_s", release_untouched_ys.back()}});
    ctx.log(strf("ipc: %8zu KiB: %10.1f us (%.2f GB/s); release %.1f us after a read of every page, %.1f us without",
                 b >> 10, s * 1e6, static_cast<double>(b) / s / 1e9, release_ys.back() * 1e6,
                 release_untouched_ys.back() * 1e6));
  }
  // The pin thread's split, interleaved: every round visits every size, the touch and the copy alternating
  // which goes first, so a drift of the machine's speed falls on both alike.
  std::vector<std::vector<PinSplit>> split_by_size(split_sizes.size());
  std::vector<unsigned char> split_dst;
  if (!interrupted && error.empty()) {
    split_dst.assign(*std::max_element(split_sizes.begin(), split_sizes.end()), 0);  // touched now: the destination is resident, as pinned memory is
    for (int r = 0; r < split_rounds && error.empty() && !interrupted; ++r) {
      for (std::size_t i = 0; i < split_sizes.size(); ++i) {
        if (ctx.interrupted()) {
          interrupted = true;
          break;
        }
        PinSplit round;
        if (!split_round(sock, (r + static_cast<int>(i)) % 2 == 0, split_dst.data(), round, error)) break;
        if (r > 0) split_by_size[i].push_back(round);
      }
    }
  }
  close(sock);  // an interrupted writer sees EOF and exits
  int status = 0;
  waitpid(child, &status, 0);
  if (interrupted) return Problem::interrupted();
  if (!error.empty()) return Problem::failed(error);

  const auto fit = fit_affine_relative(xs, ys);
  if (!fit) return Problem::failed("receive times do not fit s = a + b * bytes (non-positive per-byte cost)");
  ctx.log(strf("ipc: fit %.1f us per batch + %.3g s per byte (%.2f GB/s), rel_rmse %.3f", fit->intercept * 1e6,
               fit->slope, 1e-9 / fit->slope, fit->rel_rmse));
  SectionReport report;
  report.profile_keys["ipc"] = {{"receive_s_per_batch", fit->intercept},
                                {"receive_s_per_byte", fit->slope},
                                {"points", points}};
  // The release's per-byte part, touched and not (slopes only: its fixed part is inside the receive's).
  const auto release_fit = fit_affine_relative(xs, release_ys);
  const auto untouched_fit = fit_affine_relative(xs, release_untouched_ys);
  if (release_fit) {
    report.profile_keys["ipc"]["release_s_per_byte"] = release_fit->slope;
    ctx.log(strf("ipc: release (munmap + close) after a read of every page %.3g s per byte (%.2f GB/s), %.0f%% of "
                 "the receive's per-byte cost; rel_rmse %.3f",
                 release_fit->slope, 1e-9 / release_fit->slope, 100.0 * release_fit->slope / fit->slope,
                 release_fit->rel_rmse));
  } else {
    ctx.log("ipc: the release times do not fit s = a + b * bytes (non-positive per-byte cost); release_s_per_byte "
            "left out");
  }
  if (untouched_fit) {
    report.profile_keys["ipc"]["release_untouched_s_per_byte"] = untouched_fit->slope;
    ctx.log(strf("ipc: release of pages never touched here %.3g s per byte (%.2f GB/s), rel_rmse %.3f",
                 untouched_fit->slope, 1e-9 / untouched_fit->slope, untouched_fit->rel_rmse));
  }

  // The pin thread's split: medians per size; the share is the touch over the fresh copy.
  nlohmann::json split_points = nlohmann::json::array();
  std::vector<double> shares;
  for (std::size_t i = 0; i < split_sizes.size(); ++i) {
    std::vector<double> touch, fresh, touched;
    for (const PinSplit& r : split_by_size[i]) {
      touch.push_back(r.touch_s);
      fresh.push_back(r.fresh_copy_s);
      touched.push_back(r.touched_copy_s);
    }
    const PinSplit split{median(touch), median(fresh), median(touched)};
    split_points.push_back({{"bytes", split_sizes[i]},
                            {"touch_s", split.touch_s},
                            {"fresh_copy_s", split.fresh_copy_s},
                            {"touched_copy_s", split.touched_copy_s}});
    shares.push_back(touch_share_of_fresh_copy(split));
    ctx.log(strf("ipc: pin split %5zu MiB: touch %.2f ms, copy from the fresh mapping %.2f ms, the same copy touched "
                 "%.2f ms; touch / fresh copy %.2f, fresh copy / (touch + touched copy) %.2f",
                 split_sizes[i] >> 20, split.touch_s * 1e3, split.fresh_copy_s * 1e3, split.touched_copy_s * 1e3,
                 shares.back(), one_pass_ratio(split)));
  }
  report.profile_keys["ipc"]["pin_split_points"] = split_points;
  report.profile_keys["ipc"]["pin_touch_share"] = median(shares);

  // The writer's side, as collate does it in a worker: fresh shared memory, filled once.
  std::vector<char> source(largest, 1);
  std::vector<double> wx, wy;
  nlohmann::json write_points = nlohmann::json::array();
  for (std::size_t b : sizes) {
    if (ctx.interrupted()) return Problem::interrupted();
    std::vector<double> times;
    for (int t = 0; t < trials + 1; ++t) {
      const double s = fresh_shm_write_s(source, b);
      if (s < 0) return Problem::failed(std::string("memfd/mmap for the shm write: ") + std::strerror(errno));
      if (t > 0) times.push_back(s);
    }
    const double s = median(times);
    wx.push_back(static_cast<double>(b));
    wy.push_back(s);
    write_points.push_back({{"bytes", b}, {"s", s}});
    ctx.log(strf("ipc: write %8zu KiB into fresh shared memory: %10.1f us (%.2f GB/s)", b >> 10, s * 1e6,
                 static_cast<double>(b) / s / 1e9));
  }
  if (const auto wfit = fit_affine_relative(wx, wy)) {
    ctx.log(strf("ipc: fresh shared-memory write %.3g s per byte (%.2f GB/s), rel_rmse %.3f", wfit->slope,
                 1e-9 / wfit->slope, wfit->rel_rmse));
    report.profile_keys["ipc"]["shm_write_s_per_byte"] = wfit->slope;
    report.profile_keys["ipc"]["shm_write_points"] = write_points;
  }
  return report;
}

}  // namespace pipeplan::calibrate
