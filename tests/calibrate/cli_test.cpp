// `calibrate` end to end, in-process, at the tiny scale (PIPEPLAN_CALIBRATE_SCALE=tiny is set
// by CMake for these tests): exit codes and the shape and sanity of the written profile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/calibrate.hpp"
#include "calibrate/gpu.hpp"
#ifdef PIPEPLAN_TEST_PROFILE_READER
#include "models/profile.hpp"
#endif

namespace pipeplan::calibrate {
namespace {

int run(std::vector<std::string> args) {
  args.insert(args.begin(), "calibrate");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return run_cli(static_cast<int>(args.size()), argv.data());
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pipeplan-calibrate-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(CalibrateCli, UnknownSectionIsExit2) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({"--only", "bogus"}), 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("bogus"), std::string::npos) << err;
  EXPECT_NE(err.find("copy, host, ipc, storage, decode, compute, nccl"), std::string::npos) << err;
}

TEST(CalibrateCli, UnknownOptionAndBadPathAreExit2) {
  EXPECT_EQ(run({"--frobnicate"}), 2);
  EXPECT_EQ(run({"--storage-path", "/nonexistent/pipeplan"}), 2);
  EXPECT_EQ(run({"--out", "/nonexistent/dir/profile.json"}), 2);
}

// --wander-from-log reads the chunk lines back and fits them as the decode section does: two threads whose
// chunks hold 1.0 and 0.5 s for good (the fit_core_wander hand case: cv 0.357246, correlation 3600 s) and no
// paused lines (null). A log without chunk lines, or none at all, is one line and exit 2.
TEST(CalibrateCli, WanderFromLogRefitsTheLoggedChunks) {
  TempDir dir;
  const auto log = dir.path() / "calibrate.log";
  std::ofstream(log) << "calibrate: decode: start\n"
                     << "calibrate: decode: wander chunk seconds, thread 0: 1.0 1.0 1.0 1.0\n"
                     << "calibrate: decode: wander chunk seconds, thread 1: 0.5 0.5 0.5 0.5\n";
  testing::internal::CaptureStdout();
  EXPECT_EQ(run({"--wander-from-log", log.string()}), 0);
  const auto fit = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_NEAR(fit["no_pause"]["fast"]["cv"].get<double>(), 0.357246, 1e-6);
  EXPECT_EQ(fit["no_pause"]["fast"]["correlation_s"].get<double>(), 3600.0);
  EXPECT_EQ(fit["no_pause"]["threads"].get<int>(), 2);
  EXPECT_NEAR(fit["no_pause"]["seconds"].get<double>(), 4.0, 1e-12);
  EXPECT_TRUE(fit["paused"].is_null());
  const auto empty = dir.path() / "empty.log";
  std::ofstream(empty) << "calibrate: decode: start\n";
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({"--wander-from-log", empty.string()}), 2);
  EXPECT_EQ(run({"--wander-from-log", (dir.path() / "absent.log").string()}), 2);
  EXPECT_EQ(run({"--wander-from-log", dir.path().string()}), 2);  // a directory
  EXPECT_EQ(run({"--wander-from-log", "/dev/zero"}), 2);          // endless: refused past 256 MiB, not read forever
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
  EXPECT_NE(err.find("'/dev/zero' is more than 256 MiB"), std::string::npos) << err;
  EXPECT_NE(err.find("empty.log"), std::string::npos) << err;
  EXPECT_NE(err.find("absent.log"), std::string::npos) << err;
}

TEST(CalibrateCli, HelpIsExit0) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(run({"--help"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("--storage-path"), std::string::npos);
  EXPECT_NE(out.find("nccl"), std::string::npos);
}

TEST(CalibrateCli, CopyWithoutGpuIsExit3) {
  if (gpu::unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  TempDir dir;
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({"--only", "copy", "--out", (dir.path() / "p.json").string()}), 3);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("calibrate: copy: "), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "p.json"));  // nothing measured, nothing written
}

TEST(CalibrateCli, QuickCpuSectionsWriteASaneProfile) {
  TempDir dir;
  const auto out = dir.path() / "profile.json";
  ASSERT_EQ(run({"--only", "storage,decode,ipc,host", "--quick", "--out", out.string(), "--storage-path",
                 dir.path().string()}),
            0);
  std::ifstream in(out);
  const auto p = nlohmann::json::parse(in);
  EXPECT_EQ(p["schema"], "pipeplan-profile/1");
  EXPECT_TRUE(p["provenance"]["date"].is_string());
  EXPECT_GE(p["provenance"]["cpu_cores"].get<int>(), 1);

  // decode and the cpu curve it feeds
  ASSERT_TRUE(p["decode"]["cpu_jpeg"].is_array());
  for (const auto& d : p["decode"]["cpu_jpeg"]) EXPECT_GT(d["s_per_image"].get<double>(), 0.0);
  const auto& curve = p["cpu"]["speed_vs_busy_cores"];
  ASSERT_FALSE(curve.empty());
  EXPECT_EQ(curve[0]["busy_cores"], 1);
  EXPECT_DOUBLE_EQ(curve[0]["relative_speed"].get<double>(), 1.0);
  EXPECT_EQ(curve.back()["busy_cores"].get<int>(), p["cpu"]["cores"].get<int>());
  EXPECT_GE(p["cpu"]["oversubscription_cost"].get<double>(), 0.0);

  // memory bandwidth as threads are added: starts at one thread, relative to itself
  const auto& scaling = p["host"]["memcpy_scaling"];
  ASSERT_FALSE(scaling.empty());
  EXPECT_EQ(scaling[0]["threads"], 1);
  EXPECT_DOUBLE_EQ(scaling[0]["relative_speed"].get<double>(), 1.0);
  EXPECT_GT(scaling.back()["bytes_per_s"].get<double>(), 0.0);

  // ipc
  EXPECT_GT(p["ipc"]["receive_s_per_byte"].get<double>(), 0.0);
  // The writer side (collate into fresh shared memory) costs more per byte than a memcpy.
  EXPECT_GT(p["ipc"]["shm_write_s_per_byte"].get<double>(), 1.0 / p["host"]["memcpy_bytes_per_s"].get<double>());
  EXPECT_GE(p["ipc"]["receive_s_per_batch"].get<double>(), 0.0);
  EXPECT_GE(p["ipc"]["points"].size(), 2u);
  // The release (munmap + close) is a part of the receive, timed apart; pages read cost more to release.
  ASSERT_TRUE(p["ipc"]["points"][0].contains("release_s"));
  for (const auto& pt : p["ipc"]["points"]) {
    EXPECT_LE(pt["release_s"].get<double>(), pt["s"].get<double>());
    EXPECT_GE(pt["release_s"].get<double>(), 0.0);
    EXPECT_GE(pt["release_untouched_s"].get<double>(), 0.0);
  }
  // The pin thread's split: a copy from a fresh mapping faults every page the copy of the same, now touched,
  // pages does not, so it costs more; the faults alone (the touch) take time of their own.
  ASSERT_TRUE(p["ipc"]["pin_split_points"].is_array());
  ASSERT_FALSE(p["ipc"]["pin_split_points"].empty());
  for (const auto& pt : p["ipc"]["pin_split_points"]) {
    EXPECT_GT(pt["touch_s"].get<double>(), 0.0);
    EXPECT_GT(pt["fresh_copy_s"].get<double>(), pt["touched_copy_s"].get<double>()) << pt.dump();
  }
  EXPECT_GT(p["ipc"]["pin_touch_share"].get<double>(), 0.0);

  // storage, in fio's terms
  const auto& st = p["storage"];
  EXPECT_GT(st["read_bytes_per_s"].get<double>(), 0.0);
  EXPECT_GT(st["read_iops"].get<double>(), 0.0);
  EXPECT_GT(st["read_latency_s"].get<double>(), 0.0);
  ASSERT_FALSE(st["points"].empty());
  const auto& pt = st["points"][0];
  for (const char* k : {"rw", "bs", "numjobs", "bw_bytes", "iops"}) EXPECT_TRUE(pt.contains(k)) << k;
  EXPECT_LE(pt["clat_ns"]["p50"].get<double>(), pt["clat_ns"]["p99"].get<double>());
  // one worker's view, where the page cache can be dropped: small files read whole, cold then warm
  if (st.contains("buffered_read")) {
    const auto& b = st["buffered_read"];
    EXPECT_GT(b["bytes"].get<double>(), 0.0);
    EXPECT_LE(b["cold_cpu_s"].get<double>(), b["cold_s"].get<double>() * 1.05);  // CPU within the wall time
    EXPECT_GT(st["stream_read_bytes_per_s"].get<double>(), 0.0);
    EXPECT_GE(st["buffered_read_cpu_s_per_byte"].get<double>(), 0.0);
    // the two summary figures are the measurement's, by the formulas in docs/profile.md
    EXPECT_NEAR(st["stream_read_bytes_per_s"].get<double>(),
                b["bytes"].get<double>() / (b["cold_s"].get<double>() - b["cold_cpu_s"].get<double>()),
                1e-6 * st["stream_read_bytes_per_s"].get<double>());
    // the same files read cold again by forked reader processes (DataLoader workers): every byte read once, by
    // every process, within the wall of their read
    ASSERT_TRUE(b.contains("concurrent_processes"));
    ASSERT_FALSE(b["concurrent_processes"].empty());
    for (const auto& q : b["concurrent_processes"]) {
      EXPECT_EQ(q["bytes"].get<double>(), b["bytes"].get<double>()) << q.dump();
      EXPECT_GT(q["wall_s"].get<double>(), 0.0);
      EXPECT_LE(q["cpu_s"].get<double>(), q["wall_s"].get<double>() * q["processes"].get<double>() * 1.05) << q.dump();
    }
  }

  // host
  EXPECT_GT(p["host"]["memcpy_bytes_per_s"].get<double>(), 1e8);
  EXPECT_GT(p["host"]["pin_copy_bytes_per_s"].get<double>(), 1e8);

  // No stray temporary file beside the profile, and the storage file is gone.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "profile.json");
  }
  EXPECT_EQ(files, 1u);

#ifdef PIPEPLAN_TEST_PROFILE_READER
  EXPECT_NO_THROW(pipeplan::parse_profile(p, out.string(), nullptr));
#endif
}

}  // namespace
}  // namespace pipeplan::calibrate
