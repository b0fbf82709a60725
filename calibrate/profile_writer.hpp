// Writes the profile so a reader never sees half a file: a temporary file in the same
// directory, fsync, then rename over the target.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace pipeplan::calibrate {

// Returns "" on success, else what failed (with the OS's reason).
std::string write_json_atomically(const std::filesystem::path& target, const nlohmann::json& document);

}  // namespace pipeplan::calibrate
