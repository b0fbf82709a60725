// pipeplan: one binary, subcommands. This file is the CLI boundary: the only place where
// exceptions are turned into the contract's exit codes (0 ok, 1 other, 2 bad input,
// 3 a measurement that cannot run here).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "models/input_error.hpp"

namespace {

const char* kUsage =
    "pipeplan: why is my training slower than the GPU allows?\n"
    "\n"
    "usage: pipeplan COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  simulate   simulate a training job's input pipeline and name its bottleneck\n"
    "  sweep      simulate every combination of some knobs' values and rank them\n"
    "  recommend  which loader and copy knobs to change, one at a time while one clearly helps\n"
    "  budget     storage bandwidth and IOPS a cluster needs so input keeps up with the GPUs\n"
    "  calibrate  measure this machine (copies, host, IPC, storage, decode, compute, NCCL)\n"
    "\n"
    "  pipeplan COMMAND --help   lists the command's options\n"
    "  pipeplan --version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "--version") {
    std::printf("pipeplan %s\n", PIPEPLAN_VERSION);
    return 0;
  }
  try {
    if (command == "simulate") return pipeplan::cli::simulate_command(argc - 1, argv + 1);
    if (command == "sweep") return pipeplan::cli::sweep_command(argc - 1, argv + 1);
    if (command == "budget") return pipeplan::cli::budget_command(argc - 1, argv + 1);
    if (command == "recommend") return pipeplan::cli::recommend_command(argc - 1, argv + 1);
    if (command == "calibrate") return pipeplan::cli::calibrate_command(argc - 1, argv + 1);
    std::fprintf(stderr, "pipeplan: unknown command \"%s\"; expected simulate, sweep, recommend, budget or calibrate (see pipeplan --help)\n", command.c_str());
    return 2;
  } catch (const pipeplan::InputError& e) {
    std::fprintf(stderr, "pipeplan %s: %s\n", command.c_str(), e.what());
    return 2;
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "pipeplan %s: %s (see pipeplan %s --help)\n", command.c_str(), e.what(), command.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeplan %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
