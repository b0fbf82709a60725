// The pin thread's split of pin_memory() (ipc section): PyTorch's pin_memory() copies a received batch
// into page-locked memory in one pass, faulting each page of the worker's fresh mapping as the copy first
// reads it. The faults are the part that holds the process's memory map (what a training loop beside it
// stalls on: validation run 17); the copy itself holds nothing.
#pragma once

namespace pipeplan::calibrate {

struct PinSplit {
  double touch_s = 0.0;         // a read of one byte per page of a fresh mapping: the faults alone
  double fresh_copy_s = 0.0;    // the copy of a fresh mapping into resident memory: what pin_memory() does
  double touched_copy_s = 0.0;  // the same copy again, its pages now mapped: the copy alone
};

// The share of pin_memory()'s one pass spent faulting: the touch over the fresh copy. 0 when the
// fresh copy took no time (nothing measured).
inline double touch_share_of_fresh_copy(const PinSplit& s) {
  return s.fresh_copy_s > 0.0 ? s.touch_s / s.fresh_copy_s : 0.0;
}

// How the one pass compares with its two parts done apart: 1 when the fresh copy costs exactly the touch
// plus the copy of touched pages, below 1 when the copy's reads hide part of the faults' cost.
inline double one_pass_ratio(const PinSplit& s) {
  const double parts = s.touch_s + s.touched_copy_s;
  return parts > 0.0 ? s.fresh_copy_s / parts : 0.0;
}

}  // namespace pipeplan::calibrate
