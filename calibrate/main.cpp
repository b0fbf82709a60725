// pipeplan-calibrate: the calibration alone, small enough to travel to a GPU machine
// (no SimGrid; static CUDA runtime, Boost, libjpeg-turbo and liburing).
#include "calibrate/calibrate.hpp"

int main(int argc, char** argv) { return pipeplan::calibrate::run_cli(argc, argv); }
