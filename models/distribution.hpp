// Distribution of a per-sample cost or size, and a seeded, platform-independent sampler.
// std::lognormal_distribution's output is implementation-defined; ours is not, so the same
// seed gives byte-identical simulations everywhere.
#pragma once

#include <cstdint>
#include <string>

namespace pipeplan {

struct Distribution {
  enum class Kind { kLognormal, kGamma, kConstant };
  double mean = 0.0;
  double cv = 0.0;  // coefficient of variation: stddev / mean
  Kind kind = Kind::kLognormal;
};

const char* to_string(Distribution::Kind kind);

// splitmix64-seeded xoshiro256** generator: small, fast, fully specified.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next_u64();
  double uniform01();  // in (0, 1)
  double standard_normal();  // the ziggurat (distribution.cpp)

 private:
  std::uint64_t state_[4];
};

// Where the standard normal's ziggurat puts its tail (the r that closes its 256 layers); for the tests.
double ziggurat_tail_start();

// One draw. Lognormal and gamma have the given mean and cv exactly.
double sample(const Distribution& d, Rng& rng);

// One lognormal draw of the given mean whose log has variance sigma2 = ln(1 + cv^2), sigma its square root: sample()'s
// draw, for callers that draw many from one distribution and work sigma out once (sim's sum_of_draws).
double lognormal_draw(double mean, double sigma, double sigma2, Rng& rng);

// Stream seed for an independent component (rank, worker, ...), derived from the scenario seed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0);

}  // namespace pipeplan
