// Session 42: the host cost of one f8gemm::gemm_problem() (the whole validation of a call), which
// the torch ops' functional GEMMs now run once more before allocating their output (check_functional_call).
// Build from the repo root after a Release build:
//   g++ -O2 -std=c++17 -Iinclude -I/usr/local/cuda/include docs/experiments/s42-validation-cost.cpp \
//     build/libf8gemm.a -L/usr/local/cuda/lib64 -lcudart -lnvrtc -lcuda -ldl -lpthread -o vcost && ./vcost
// Fake device addresses: validation reads no memory and calls no CUDA function.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include "f8gemm/f8gemm.hpp"
using namespace f8gemm;
int main() {
  auto fake = [](uintptr_t a) { return reinterpret_cast<void*>(a); };
  const int64_t m = 16, n = 4096, k = 14336;
  TensorView x = make_view(fake(0x10000000), DType::kE4M3, {m, k}, 0);
  TensorView w = make_view(fake(0x20000000), DType::kE4M3, {(k + 127) / 128, n / 8, 1024}, 0);
  TensorView xs = make_view(fake(0x30000000), DType::kF32, {m}, 0);
  TensorView ws = make_view(fake(0x40000000), DType::kF32, {n}, 0);
  TensorView y = make_view(fake(0x50000000), DType::kBF16, {m, n}, 0);
  GemmOptions opt;
  for (int rep = 0; rep < 3; ++rep) {
    const int iters = 200000;
    auto t0 = std::chrono::steady_clock::now();
    int64_t sink = 0;
    for (int i = 0; i < iters; ++i) sink += gemm_problem(x, w, WeightLayout::kPreshuffled, xs, ws, y, opt).m;
    auto t1 = std::chrono::steady_clock::now();
    std::printf("gemm_problem: %.3f us/call (sink %lld)\n",
                std::chrono::duration<double, std::micro>(t1 - t0).count() / iters, (long long)sink);
    // What the functional ops ran before instead: the shape rules alone.
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      sink += check_gemm_shapes(x, w, WeightLayout::kPreshuffled, xs, ws, y, opt, false).m;
    t1 = std::chrono::steady_clock::now();
    std::printf("check_gemm_shapes: %.3f us/call (sink %lld)\n",
                std::chrono::duration<double, std::micro>(t1 - t0).count() / iters, (long long)sink);
  }
}
