// Where and when a profile was measured: host, CPU, memory, GPU, driver, CUDA, NCCL, date,
// command line (the profile's "provenance" object).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pipeplan::calibrate {

// Reads /proc/cpuinfo, sysconf, gethostname and (when built with CUDA) the device.
nlohmann::json collect_provenance(const std::string& command_line);

// "2026-11-29T14:00:00Z" for the current time.
std::string utc_iso8601_now();

// The "model name" line of a /proc/cpuinfo text, or "" (pure, for tests).
std::string cpu_model_from_cpuinfo(const std::string& cpuinfo_text);

}  // namespace pipeplan::calibrate
