/// \brief Uses the installed f8gemm through its public header only: the version and a host
/// preshuffle/unshuffle round trip (no GPU needed).
#include <f8gemm/f8gemm.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  std::printf("f8gemm %s, preshuffle layout %d\n", f8gemm::kVersion,
              f8gemm::kPreshuffleLayoutVersion);
  const int64_t n = 16, k = 160;
  std::vector<uint8_t> w(n * k), back(n * k, 0);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 7 + 3);
  const std::vector<int64_t> shuffled_shape = f8gemm::preshuffled_shape(1, n, k);
  int64_t bytes = 1;
  for (int64_t s : shuffled_shape) bytes *= s;
  std::vector<uint8_t> shuffled(bytes);
  const auto view = [](void* data, std::vector<int64_t> shape) {
    return f8gemm::make_view(data, f8gemm::DType::kE4M3, shape, f8gemm::kHost);
  };
  try {
    f8gemm::preshuffle(view(w.data(), {1, n, k}), view(shuffled.data(), shuffled_shape), nullptr);
    f8gemm::unshuffle(view(shuffled.data(), shuffled_shape), view(back.data(), {1, n, k}),
                      nullptr);
  } catch (const f8gemm::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  if (back != w) {
    std::printf("preshuffle/unshuffle round trip differs\n");
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
