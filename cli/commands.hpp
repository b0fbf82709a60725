// The subcommands. Each takes argv with argv[0] the command name, returns an exit code and
// may throw InputError (exit 2) or boost::program_options::error (exit 2).
#pragma once

namespace pipeplan::cli {

int simulate_command(int argc, char** argv);
int calibrate_command(int argc, char** argv);
int sweep_command(int argc, char** argv);
int budget_command(int argc, char** argv);
int recommend_command(int argc, char** argv);

}  // namespace pipeplan::cli
