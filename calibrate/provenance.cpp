#include "calibrate/provenance.hpp"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "calibrate/gpu.hpp"

namespace pipeplan::calibrate {

std::string utc_iso8601_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model_from_cpuinfo(const std::string& cpuinfo_text) {
  std::istringstream in(cpuinfo_text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

nlohmann::json collect_provenance(const std::string& command_line) {
  nlohmann::json p = nlohmann::json::object();
  p["date"] = utc_iso8601_now();
  p["command"] = command_line;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) p["hostname"] = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream text;
  text << cpuinfo.rdbuf();
  p["cpu_model"] = cpu_model_from_cpuinfo(text.str());
  p["cpu_cores"] = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  p["memory_bytes"] = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));

  const gpu::Provenance g = gpu::provenance();
  p["gpu_count"] = g.gpu_count;
  if (!g.gpu.empty()) p["gpu"] = g.gpu;
  if (!g.driver.empty()) p["driver"] = g.driver;
  if (!g.cuda.empty()) p["cuda"] = g.cuda;
  if (!g.nccl.empty()) p["nccl"] = g.nccl;
  return p;
}

}  // namespace pipeplan::calibrate
