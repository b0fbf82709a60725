#include "run_pipeplan.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace pipeplan::test {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string test_data(const std::string& name) { return std::string(PIPEPLAN_TEST_DATA) + "/" + name; }

std::string write_temp(const std::string& contents, const std::string& suffix) {
  std::string pattern = "/tmp/pipeplan-test-XXXXXX" + suffix;
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = ::mkstemps(buf.data(), static_cast<int>(suffix.size()));
  if (fd < 0) throw std::runtime_error("mkstemps failed");
  const ssize_t n = ::write(fd, contents.data(), contents.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(contents.size())) throw std::runtime_error("short write");
  return buf.data();
}

RunResult run_pipeplan(const std::vector<std::string>& args) {
  const std::string out_path = write_temp("", ".out");
  const std::string err_path = write_temp("", ".err");
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_TRUNC);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_TRUNC);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> argv;
    std::string binary = PIPEPLAN_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

nlohmann::json simulate(const nlohmann::json& scenario, const std::vector<std::string>& extra, const std::string& profile) {
  const std::string path = write_temp(scenario.dump());
  std::vector<std::string> args = {"simulate", path, "--format", "json", "--profile",
                                   profile.empty() ? test_data("flat_profile.json") : profile};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = run_pipeplan(args);
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

}  // namespace pipeplan::test
