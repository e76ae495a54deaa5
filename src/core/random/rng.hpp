// The engines' generator (agent and session engines): xoshiro256** seeded
// through splitmix64, so that seeds 1, 2, 3 give unrelated streams. Same seed, same numbers, on
// every platform (no std:: distributions, whose output is implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace retrystorm {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
  }

  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform on [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform on (0, 1]: safe under log().
  double uniform_open0() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }
  // Exponential by the ziggurat method (Marsaglia and Tsang, 2000): one
  // draw, a table look-up and a multiply in 98.9% of calls, no log(). That
  // case is inline and needs no registers saved; the rest is out of line.
  double exponential(double mean) { return mean * standard_exponential(); }
  double standard_exponential() {
    const uint64_t r = next();
    const auto i = static_cast<uint32_t>(r & 255);
    const auto j = static_cast<uint32_t>(r >> 32);
    if (j < kZiggurat.k[i]) [[likely]]
      return j * kZiggurat.w[i];
    return exponential_beyond(i, j);
  }
  // Standard normal (Box-Muller; one value per call keeps the stream simple).
  double normal() {
    double r = std::sqrt(-2 * std::log(uniform_open0()));
    return r * std::cos(2 * std::numbers::pi * uniform());
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  // 256 layers of equal area under exp(-x); the base layer holds the tail.
  struct Ziggurat {
    static constexpr double kR = 7.697117470131487;     // start of the tail
    static constexpr double kV = 3.949659822581572e-3;  // area of each layer
    uint32_t k[256];
    double w[256], f[256];
    Ziggurat() {
      const double m = 4294967296.0;  // 2^32
      double d = kR, prev = kR;
      double q = kV / std::exp(-d);
      k[0] = static_cast<uint32_t>(d / q * m);
      k[1] = 0;
      w[0] = q / m;
      w[255] = d / m;
      f[0] = 1;
      f[255] = std::exp(-d);
      for (int i = 254; i >= 1; --i) {
        d = -std::log(kV / d + std::exp(-d));
        k[i + 1] = static_cast<uint32_t>(d / prev * m);
        prev = d;
        f[i] = std::exp(-d);
        w[i] = d / m;
      }
    }
  };
  // Built once at start-up, so that a draw does not test a guard first.
  static inline const Ziggurat kZiggurat{};

  // The draw (i, j) fell outside its layer's inner rectangle: the tail, a
  // wedge test, or a rejection and a fresh draw (the same numbers, in the
  // same order, as one loop would take).
  [[gnu::noinline]] double exponential_beyond(uint32_t i, uint32_t j) {
    const Ziggurat& z = kZiggurat;
    for (;;) {
      if (i == 0) return Ziggurat::kR - std::log(uniform_open0());  // the tail
      double x = j * z.w[i];
      if (z.f[i] + uniform() * (z.f[i - 1] - z.f[i]) < std::exp(-x)) return x;
      const uint64_t r = next();
      i = static_cast<uint32_t>(r & 255);
      j = static_cast<uint32_t>(r >> 32);
      if (j < z.k[i]) return j * z.w[i];
    }
  }
  uint64_t s_[4];
};

}  // namespace retrystorm
