#include <cstdio>

#include "cli/commands.hpp"
#ifdef PIPEPLAN_HAVE_CALIBRATE
#include "calibrate/calibrate.hpp"
#endif

namespace pipeplan::cli {

int calibrate_command(int argc, char** argv) {
#ifdef PIPEPLAN_HAVE_CALIBRATE
  return pipeplan::calibrate::run_cli(argc, argv);
#else
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "pipeplan calibrate: this build has no calibration library\n");
  return 3;
#endif
}

}  // namespace pipeplan::cli
