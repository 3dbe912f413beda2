// Deterministic randomness for the crawl generator: the PRNG (xoshiro256**), the seed mixer that
// gives every entity its own stream, exp/log from IEEE basic operations, and an alias table for
// fixed discrete distributions. Every gencrawl file draws its randomness from here.
//
// Only integer arithmetic and IEEE basic operations (+ - * /, floor, frexp, ldexp) are used, so
// the results are the same on every conforming platform. The gencrawl sources are compiled with
// -ffp-contract=off so no fused multiply-add changes a rounding.
//
// Thread safety: Rng and AliasTable are values; the functions are pure.
#pragma once

#include <cstdint>
#include <vector>

namespace neardup::gencrawl {

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A well-mixed 64-bit function of two values: seeds for per-entity streams.
inline uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t s = a ^ Rotl(b * 0xD6E8FEB86659FD93ull, 29) ^ 0x3C6EF372FE94F82Bull;
  SplitMix64(&s);
  return SplitMix64(&s);
}

// Salts for the per-entity random streams (Mix(entity seed, salt)). One list, so that no two
// streams share a salt; the values are part of the output's definition.
enum Salt : uint64_t {
  kSaltPlan = 1, kSaltSlug, kSaltSession, kSaltVariant, kSaltBoilerplate, kSaltNav, kSaltFooter,
  kSaltNavWords, kSaltFooterWords, kSaltBlocks, kSaltWords, kSaltDeco, kSaltTemplate, kSaltPage,
  kSaltHost, kSaltGone,
};

// xoshiro256**.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& x : s_) x = SplitMix64(&s);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n); n >= 1.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in [0, 1), 53 bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  bool Chance(double p) { return Uniform() < p; }
  // Approximately standard normal: Irwin-Hall sum of 12 uniforms.
  double Normal() {
    double s = 0;
    for (int i = 0; i < 12; ++i) s += Uniform();
    return s - 6.0;
  }

 private:
  uint64_t s_[4];
};

// Natural logarithm from basic operations (x > 0).
double DetLog(double x);

// e^x from basic operations (x clamped to 700 above; 0 below -700).
double DetExp(double x);

// Walker/Vose alias table: O(1) sampling from a fixed discrete distribution.
class AliasTable {
 public:
  explicit AliasTable(const std::vector<double>& weights);

  uint32_t Sample(Rng& r) const {
    const uint32_t i = static_cast<uint32_t>(r.Below(prob_.size()));
    return r.Uniform() < prob_[i] ? i : alias_[i];
  }

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

}  // namespace neardup::gencrawl
