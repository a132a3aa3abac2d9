/// \brief The seeded random operands of the tests and the CLI (the f8gemm_testing target): one
/// e4m3 generator and one uniform fp32 generator, counter-based, so that element i depends only
/// on (seed, i): not on the number of host threads, the machine, or the order of calls. The CLI's
/// bench, run and demo draw their inputs from these, and the output hashes in the committed logs
/// depend on the bytes they produce (tests/cpu/test_random.cpp holds them fixed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace f8gemm::test {

/// `count` e4m3fn codes of normal(0, stddev) samples rounded to nearest even, saturating at +-448
/// (never a NaN code). Box-Muller on splitmix64 counters: pair p gives elements 2p and 2p + 1.
void random_e4m3_codes(uint8_t* out, size_t count, uint64_t seed, float stddev);

/// `count` floats uniform in [lo, hi), in steps of (hi - lo) * 2^-24.
void random_uniform_f32(float* out, size_t count, uint64_t seed, float lo, float hi);

/// `count` floats normal(0, stddev): the Box-Muller pairs of random_e4m3_codes, not rounded.
void random_normal_f32(float* out, size_t count, uint64_t seed, float stddev);

/// The same values written to device memory at `dev` (synchronous).
void fill_random_e4m3(void* dev, size_t count, uint64_t seed, float stddev);
void fill_random_f32(float* dev, size_t count, uint64_t seed, float lo, float hi);
void fill_random_normal_f32(float* dev, size_t count, uint64_t seed, float stddev);

/// random_e4m3_codes seeded by one draw of `rng`: the tests' form, which takes its seed from the
/// test's own generator.
std::vector<uint8_t> random_e4m3(std::mt19937_64& rng, size_t count, double stddev = 1.0);

}  // namespace f8gemm::test
