// How often DataLoader batches reach the main process out of index order.
//
// PyTorch hands batches to the training loop in index order (in_order=True, the default), but the
// workers finish them in their own order, and the pin_memory thread serves its queue in arrival
// order. When batch i+1 is ready before batch i, the loop waits for i (two receive/pin times when
// the pin thread is the limit) and then gets i+1 at once: a long step followed by a short one. On
// validation run 10 the pin-bound tensor cases had 12-23% of consecutive pairs swapped and a p90
// step of 1.8-2.0x the mean; with under 4% swapped, 1.2x (docs/validation.md).
#pragma once

#include <vector>

namespace pipeplan::sim {

// done_s[b]: the time worker finished batch b (negative: never finished). Counts the consecutive
// pairs (b, b+1) both finished within [from_s, to_s] and returns the fraction with
// done_s[b] > done_s[b + 1]; 0 when there is no such pair.
double out_of_order_fraction(const std::vector<double>& done_s, double from_s, double to_s);

}  // namespace pipeplan::sim
