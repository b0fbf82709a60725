#include "models/distribution.hpp"

#include <cmath>

namespace pipeplan {

const char* to_string(Distribution::Kind kind) {
  switch (kind) {
    case Distribution::Kind::kLognormal: return "lognormal";
    case Distribution::Kind::kGamma: return "gamma";
    case Distribution::Kind::kConstant: return "constant";
  }
  return "?";
}

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Marsaglia-Tsang; shape >= 1 (boosted for shape < 1).
double sample_gamma(double shape, Rng& rng) {
  if (shape < 1.0) {
    const double u = rng.uniform01();
    return sample_gamma(shape + 1.0, rng) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.standard_normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.uniform01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : state_) s = splitmix64(seed);
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform01() { return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53; }

double Rng::standard_normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = uniform01(), u2 = uniform01();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * M_PI * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

double sample(const Distribution& d, Rng& rng) {
  if (d.cv <= 0.0 || d.kind == Distribution::Kind::kConstant) return d.mean;
  if (d.kind == Distribution::Kind::kGamma) {
    const double shape = 1.0 / (d.cv * d.cv);
    return sample_gamma(shape, rng) * d.mean / shape;
  }
  // lognormal with E = mean, CV = cv: sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2/2
  const double sigma2 = std::log1p(d.cv * d.cv);
  return lognormal_draw(d.mean, std::sqrt(sigma2), sigma2, rng);
}

double lognormal_draw(double mean, double sigma, double sigma2, Rng& rng) {
  return mean * std::exp(sigma * rng.standard_normal() - 0.5 * sigma2);
}

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
  return splitmix64(x);
}

}  // namespace pipeplan
