// calibrate: the `pipeplan calibrate` subcommand. Measures the machine it runs on and writes a
// `pipeplan-profile/1` hardware profile (docs/profile.md, method in docs/calibrate.md).
#pragma once

namespace pipeplan::calibrate {

// Runs `calibrate [--out PROFILE.json] [--only SECTION,...] [--quick] [--storage-path DIR]`.
// argv[0] is the subcommand name ("calibrate"). Returns the process exit code:
// 0 success, 2 bad option, 3 nothing requested could run here, 1 anything else,
// 130 interrupted by SIGINT (the profile then holds the sections completed so far).
// Never throws.
int run_cli(int argc, char** argv);

}  // namespace pipeplan::calibrate
