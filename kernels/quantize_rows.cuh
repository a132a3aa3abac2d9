/// \brief Rowwise e4m3 quantisation (quantize_fp8_row): the row engine shared with the fused
/// SiLU·mul op, the f8gemm_quantize_{f32,bf16,f16} entries, and the wide
/// f8gemm_quantize_{bf16,f16}_wide for large M.
///
/// A short row is latency-bound, so its time is a few dependent memory round trips plus the
/// launch. The engine therefore (1) loads every value of a CTA's part of the row with 16-byte
/// loads that are all in flight at once and keeps them in registers, (2) reduces the maximum in
/// the warp, across warps and across the CTAs of a cluster through distributed shared memory
/// (one cluster barrier per row), and (3) scales and stores from registers with 16-byte stores:
/// one DRAM read and one write per value, one launch, no workspace. The maximum is exact and
/// order-free, so any split of a row gives bit-identical results. When M is small the host
/// spreads a row over a cluster of up to 8 CTAs (8 SMs) to bring more load bandwidth to it.
#pragma once

#include "f8gemm_ptx.cuh"
#include "quantize_shared.cuh"

namespace f8gemm {
namespace dev {
namespace rowq {

// ---- clusters (PTX) -------------------------------------------------------------------------

__device__ __forceinline__ u32 cluster_ctas() {
  u32 n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

/// All threads of all CTAs of the cluster meet; shared-memory writes before it are visible to
/// the whole cluster after it.
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

/// Reads the float at the same shared-memory address in CTA `rank` of this cluster.
__device__ __forceinline__ float load_peer(const float* local, u32 rank) {
  float v;
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %1, %2;\n"
      "ld.shared::cluster.f32 %0, [remote];\n"
      "}\n"
      : "=f"(v)
      : "r"(static_cast<u32>(__cvta_generic_to_shared(local))), "r"(rank)
      : "memory");
  return v;
}

// ---- loading values -------------------------------------------------------------------------

enum InType : int { kF32 = 0, kBF16 = 1, kF16 = 2 };

/// How the row engine keeps a thread's packs between its two passes over a row.
enum class Keep : int {
  kValues = 0,  ///< as floats
  kRaw = 1,     ///< as raw 16-bit words, converted again in pass 2 (Op::decode: the same exact
                ///< conversion): four packs in the registers of two packs of floats
};

/// The raw 16-bit words of one pack of 16-bit values from element `index` of `base` (two 16-byte
/// loads; the caller guarantees the alignment) into w[0, 8): what the wide entries keep in
/// registers.
__device__ __forceinline__ void load_words(const void* base, i64 index, u32* w) {
  const uint4* src = reinterpret_cast<const uint4*>(static_cast<const u16*>(base) + index);
#pragma unroll
  for (int i = 0; i < kPackValues / 8; ++i) {
    const uint4 h = src[i];
    w[4 * i] = h.x;
    w[4 * i + 1] = h.y;
    w[4 * i + 2] = h.z;
    w[4 * i + 3] = h.w;
  }
}

/// Half `hi` (0: the low 16 bits) of a word of two bf16 or fp16 values, as a float (exact).
template <int kIn>
__device__ __forceinline__ float decode_word(u32 w, int hi) {
  static_assert(kIn == kBF16 || kIn == kF16, "16-bit inputs only");
  const u16 h = static_cast<u16>(hi ? w >> 16 : w & 0xffffu);
  return kIn == kBF16 ? bf16_to_float(h) : f16_to_float(h);
}

/// A pack's bf16 or fp16 words w[0, 8) as floats v[0, 16) (exact conversions), low half first.
template <int kIn>
__device__ __forceinline__ void decode_words(const u32* w, float* v) {
#pragma unroll
  for (int j = 0; j < kPackValues; ++j) v[j] = decode_word<kIn>(w[j / 2], j % 2);
}

/// kW consecutive values from element `index` of `base` as floats (exact conversions). kW = 16
/// is 64 (fp32) or 32 (bf16, fp16) bytes in 16-byte loads: the caller guarantees the alignment.
template <int kIn, int kW>
__device__ __forceinline__ void load_values(const void* base, i64 index, float (&v)[kW]) {
  if constexpr (kW == 1) {
    if constexpr (kIn == kF32) v[0] = static_cast<const float*>(base)[index];
    if constexpr (kIn == kBF16) v[0] = bf16_to_float(static_cast<const u16*>(base)[index]);
    if constexpr (kIn == kF16) v[0] = f16_to_float(static_cast<const u16*>(base)[index]);
  } else if constexpr (kIn == kF32) {
    const float4* src = reinterpret_cast<const float4*>(static_cast<const float*>(base) + index);
#pragma unroll
    for (int i = 0; i < kW / 4; ++i) {
      const float4 f = src[i];
      v[4 * i] = f.x;
      v[4 * i + 1] = f.y;
      v[4 * i + 2] = f.z;
      v[4 * i + 3] = f.w;
    }
  } else {
    static_assert(kW == kPackValues, "16-bit values load as whole packs");
    u32 words[kPackValues / 2];
    load_words(base, index, words);
    decode_words<kIn>(words, v);
  }
}

/// The plain op: the value is the input. For 16-bit inputs it also gives the wide engine a
/// pack's raw words (8 of them) and their values.
template <int kIn>
struct IdentityOp {
  static constexpr int kWidePacks = kWidePacksPlain;
  static constexpr Keep kWideKeep = Keep::kRaw;  // four packs in the registers of two
  template <int kW>
  static __device__ __forceinline__ void load(const Params& p, i64 row, i64 col, float (&v)[kW]) {
    load_values<kIn, kW>(p.in, row * p.cols + col, v);
  }
  static __device__ __forceinline__ void load_raw(const Params& p, i64 row, i64 col,
                                                  u32 (&w)[kPackValues / 2]) {
    load_words(p.in, row * p.cols + col, w);
  }
  static __device__ __forceinline__ void decode(const u32 (&w)[kPackValues / 2],
                                                float (&v)[kPackValues]) {
    decode_words<kIn>(w, v);
  }
};

/// Stores kW codes of v * inv (kW = 16: one 16-byte store).
template <int kW>
__device__ __forceinline__ void store_codes(u8* dst, const float (&v)[kW], float inv) {
  if constexpr (kW == 1) {
    *dst = static_cast<u8>(pack_e4m3x2(__fmul_rn(v[0], inv), 0.0f) & 0xffu);
  } else {
    u32 words[kW / 4];
#pragma unroll
    for (int i = 0; i < kW / 4; ++i) {
      const u32 lo = pack_e4m3x2(__fmul_rn(v[4 * i], inv), __fmul_rn(v[4 * i + 1], inv));
      const u32 hi = pack_e4m3x2(__fmul_rn(v[4 * i + 2], inv), __fmul_rn(v[4 * i + 3], inv));
      words[i] = lo | (hi << 16);
    }
#pragma unroll
    for (int i = 0; i < kW / 16; ++i) {
      reinterpret_cast<uint4*>(dst)[i] =
          make_uint4(words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]);
    }
  }
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

/// The row engine (see the file comment). Op::load<kW>(p, row, col, v) produces the values.
/// Every thread takes the packs tid, tid + threads, ... of its CTA's part of the row; the first
/// kRegPacks of them stay in registers (kRegisterValues / kW, or Op::kWidePacks in the wide
/// entries; 4 on the single-value path, which serves only rows whose length is not a multiple
/// of 16 and is kept small in registers: every unrolled scalar load costs a 64-bit address),
/// any further ones are read again in pass 2. kKeep says how (Keep); the raw form uses
/// Op::load_raw and Op::decode (8 words a pack).
template <class Op, int kW, int kRegPacks, Keep kKeep = Keep::kValues>
__device__ __forceinline__ void quantize_rows_engine(const Params& p) {
  constexpr bool kRaw = kKeep == Keep::kRaw;
  static_assert(kW == 1 || kW == kPackValues, "packs are single values or 16-byte stores");
  static_assert(kRegPacks >= 1 && kRegPacks <= 4, "packs kept in registers");
  static_assert(!kRaw || kW == kPackValues, "raw words are kept for whole packs");
  // Double-buffered by row parity: a peer can be at most one row ahead (it must pass the next
  // barrier, which waits for this CTA), so it never overwrites a slot that is still being read.
  __shared__ float warp_amax[2][kMaxThreads / 32];
  const u32 cluster = cluster_ctas();
  const u32 rank = blockIdx.x % cluster;  // == %cluster_ctarank for a (cluster, 1, 1) cluster
  const int warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const i64 packs = p.cols / kW;
  const i64 first = i64(rank) * p.chunk;
  const i64 last = first + p.chunk < packs ? first + p.chunk : packs;
  const float ub = p.scale_ub != nullptr ? *p.scale_ub : p.scale_ub_value;
  int buf = 0;
  for (i64 row = blockIdx.x / cluster; row < p.rows; row += gridDim.x / cluster, buf ^= 1) {
    // Pass 1: load (all loads in flight together) and take the maximum of |v|.
    float v[kRaw ? 1 : kRegPacks][kW];
    u32 raw[kRaw ? kRegPacks : 1][kRaw ? kPackValues / 2 : 1];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kRegPacks; ++j) {
      const i64 pack = first + i64(j) * blockDim.x + threadIdx.x;
      if (pack < last) {
        if constexpr (kRaw) {
          Op::load_raw(p, row, pack * kW, raw[j]);
        } else {
          Op::template load<kW>(p, row, pack * kW, v[j]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kRegPacks; ++j) {
      const i64 pack = first + i64(j) * blockDim.x + threadIdx.x;
      if (pack < last) {
        float(&vals)[kW] = v[kRaw ? 0 : j];
        if constexpr (kRaw) Op::decode(raw[j], vals);
#pragma unroll
        for (int e = 0; e < kW; ++e) amax = fmaxf(amax, fabsf(vals[e]));
      }
    }
    for (i64 pack = first + i64(kRegPacks) * blockDim.x + threadIdx.x; pack < last;
         pack += blockDim.x) {
      float t[kW];
      Op::template load<kW>(p, row, pack * kW, t);
#pragma unroll
      for (int e = 0; e < kW; ++e) amax = fmaxf(amax, fabsf(t[e]));
    }
    // The row's maximum: warp, then every warp of every CTA of the cluster.
    amax = warp_max(amax);
    if (lane == 0) warp_amax[buf][warp] = amax;
    if (cluster == 1) {
      __syncthreads();
    } else {
      cluster_barrier();
    }
    amax = 0.0f;
    for (int i = lane; i < int(cluster) * warps; i += 32) {
      const float* slot = &warp_amax[buf][i % warps];
      amax = fmaxf(amax, cluster == 1 ? *slot : load_peer(slot, u32(i / warps)));
    }
    amax = warp_max(amax);
    if (ub > 0.0f) amax = fminf(amax, ub);
    const float clamped = fmaxf(amax, p.eps);
    const float inv = __fdiv_rn(448.0f, clamped);
    if (rank == 0 && threadIdx.x == 0) p.scale[row] = __fdiv_rn(clamped, 448.0f);
    // Pass 2: scale and store.
    u8* q = p.q + row * p.cols;
#pragma unroll
    for (int j = 0; j < kRegPacks; ++j) {
      const i64 pack = first + i64(j) * blockDim.x + threadIdx.x;
      if (pack < last) {
        if constexpr (kRaw) Op::decode(raw[j], v[0]);
        store_codes<kW>(q + pack * kW, v[kRaw ? 0 : j], inv);
      }
    }
    for (i64 pack = first + i64(kRegPacks) * blockDim.x + threadIdx.x; pack < last;
         pack += blockDim.x) {
      float t[kW];
      Op::template load<kW>(p, row, pack * kW, t);
      store_codes<kW>(q + pack * kW, t, inv);
    }
  }
  // No CTA may exit while a peer can still read its shared memory.
  if (cluster > 1) cluster_barrier();
}

/// An entry's body: the narrow engine (one pack a thread in registers, or the single-value path)
/// or, kWide, the wide one (Op::kWidePacks packs a thread, kept as Op::kWideKeep says; vectorised
/// rows of 16-bit values only: the host plans it for those alone).
template <class Op, bool kWide = false>
__device__ __forceinline__ void quantize_rows_entry(const Params& p) {
  // Launched to overlap the previous kernel (programmatic launch), the input may still be in
  // the making: wait for it before the first load (f8gemm_ptx.cuh).
  grid_dependency_wait();
  if (p.early_dependents) allow_dependent_launch();
  if constexpr (kWide) {
    quantize_rows_engine<Op, kPackValues, Op::kWidePacks, Op::kWideKeep>(p);
  } else if (p.vectorized) {
    quantize_rows_engine<Op, kPackValues, kRegisterValues / kPackValues>(p);
  } else {
    quantize_rows_engine<Op, 1, 4>(p);
  }
  // More rows let their dependents in only now: a persistent GEMM scheduled while a large
  // quantisation was still running ran its whole course up to 1.5x slower (perf log, card 77).
  if (!p.early_dependents) allow_dependent_launch();
}

}  // namespace rowq

extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_quantize_f32(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::IdentityOp<rowq::kF32>>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_quantize_bf16(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::IdentityOp<rowq::kBF16>>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_quantize_f16(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::IdentityOp<rowq::kF16>>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_quantize_bf16_wide(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::IdentityOp<rowq::kBF16>, true>(p);
}
extern "C" __global__ void __launch_bounds__(rowq::kMaxThreads)
    f8gemm_quantize_f16_wide(const __grid_constant__ rowq::Params p) {
  rowq::quantize_rows_entry<rowq::IdentityOp<rowq::kF16>, true>(p);
}

}  // namespace dev
}  // namespace f8gemm
