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

// Marsaglia and Tsang's ziggurat ("The Ziggurat Method for Generating Random Variables", J. Stat. Softw. 5(8),
// 2000) with 256 layers of equal area v under exp(-x^2/2): layer i >= 1 is [0, x[i]] x [f(x[i]), f(x[i+1])], layer 0
// the strip below f(r) with the tail beyond r = x[1] folded in (pseudo-width x[0] = v / f(r)), x[256] = 0. About 99%
// of draws take one 64-bit number and a multiply. Until the ninety-second session this was Box-Muller, whose log,
// sqrt and sincos were about a tenth of the cold benchmark (sessions.md); the law is the same, the stream is not.
namespace {
constexpr int kZigguratLayers = 256;

struct ZigguratTable {
  double x[kZigguratLayers + 1];
  double f[kZigguratLayers + 1];  // f[i] = exp(-x[i]^2 / 2)
  double r = 0.0;                 // where the tail starts

  static double density(double x) { return std::exp(-0.5 * x * x); }

  // The layers for a trial r (v: the area under the curve beyond r plus the rectangle r x f(r)). Returns whether
  // the layers overshoot: true when a layer below the top already reaches the curve's peak (v too large: r must
  // grow), false when the top layer still falls short of it (r must shrink). The r that closes them exactly is the
  // table's (3.6541528853610088 for 256 layers, Marsaglia and Tsang's).
  bool fill(double r_try) {
    r = r_try;
    const double v = r * density(r) + std::sqrt(M_PI / 2.0) * std::erfc(r / std::sqrt(2.0));
    x[0] = v / density(r);
    x[1] = r;
    for (int i = 1; i < kZigguratLayers - 1; ++i) {
      const double top = density(x[i]) + v / x[i];
      if (top >= 1.0) return true;
      x[i + 1] = std::sqrt(-2.0 * std::log(top));
    }
    const bool overshoots = density(x[kZigguratLayers - 1]) + v / x[kZigguratLayers - 1] >= 1.0;
    x[kZigguratLayers] = 0.0;
    for (int i = 0; i <= kZigguratLayers; ++i) f[i] = density(x[i]);
    return overshoots;
  }

  ZigguratTable() {
    double lo = 3.0, hi = 4.0;  // bisection to the double's resolution
    for (int k = 0; k < 100; ++k) {
      const double mid = 0.5 * (lo + hi);
      if (mid == lo || mid == hi) break;
      (fill(mid) ? lo : hi) = mid;
    }
    fill(hi);
  }
};

const ZigguratTable& ziggurat() {
  static const ZigguratTable table;
  return table;
}
}  // namespace

double ziggurat_tail_start() { return ziggurat().r; }

double Rng::standard_normal() {
  const ZigguratTable& t = ziggurat();
  for (;;) {
    // one draw gives both the layer (its low 8 bits) and the signed position in it (its high 53): disjoint bits
    const std::uint64_t bits = next_u64();
    const int i = static_cast<int>(bits & 0xFF);
    const double u = 2.0 * ((static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53) - 1.0;  // in (-1, 1)
    const double z = u * t.x[i];
    if (std::fabs(z) < t.x[i + 1]) return z;  // inside the layer's rectangle that lies wholly under the curve
    if (i == 0) {                             // the tail beyond r (Marsaglia's exponential rejection)
      double dx, dy;
      do {
        dx = -std::log(uniform01()) / t.r;
        dy = -std::log(uniform01());
      } while (2.0 * dy < dx * dx);
      return u < 0.0 ? -(t.r + dx) : t.r + dx;
    }
    // the wedge between the rectangle and the curve: a point uniform in the layer, kept when under the curve
    if (t.f[i] + uniform01() * (t.f[i + 1] - t.f[i]) < std::exp(-0.5 * z * z)) return z;
  }
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
