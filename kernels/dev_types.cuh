/// \brief Fixed-width names and the tensor-map image shared by device sources and the host.
/// Plain C++17 with no includes, so that NVRTC needs no include path.
#pragma once

namespace f8gemm {
namespace dev {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

/// Same size and alignment as the driver's CUtensorMap (128 bytes, 128-byte aligned).
struct alignas(128) TensorMap {
  u64 opaque[16];
};

}  // namespace dev
}  // namespace f8gemm
