/// \brief PTX wrappers for sm_90a: mbarrier, TMA and bulk copies, wgmma, setmaxnreg, conversions.
/// Self-contained: NVRTC compiles it with no include path, so no toolkit header is used.
#pragma once

#include "dev_types.cuh"

namespace f8gemm {
namespace dev {

__device__ __forceinline__ u32 smem_addr(const void* ptr) {
  return static_cast<u32>(__cvta_generic_to_shared(ptr));
}

/// Stores four 8x8 b16 matrices to shared memory (stmatrix.x4): register m of every lane holds
/// its two elements of matrix m (row lane / 4, columns 2 * (lane % 4) and + 1, the wgmma
/// accumulator layout), and lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void stmatrix_x4(void* row_addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                   smem_addr(row_addr)),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// ---- mbarrier -----------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

/// Makes the barrier initialisation visible to the async proxy (TMA) and the other threads.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

/// True in exactly one lane of the (converged) calling warp (PTX elect.sync). ptxas sees the
/// instruction, so the warp's other values can stay in uniform registers around the branch on it.
__device__ __forceinline__ bool elect_one_lane() {
  u32 elected;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "elect.sync _|p, 0xffffffff;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(elected));
  return elected != 0;
}

/// Spins until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

/// Arrives on the barrier at the same shared-memory offset in CTA `rank` of this cluster (this
/// CTA included). Release at CTA scope (the default) as CUTLASS's cluster barriers do: what it
/// orders is this warpgroup's finished wgmma reads of the slot before the peer's copy refills it.
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, u32 rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(rank)
      : "memory");
}

// ---- thread-block clusters ----------------------------------------------------------------

/// Arrives on the barrier at the same offset in CTA `rank` of the cluster, releasing this
/// thread's prior writes (and those it has observed, e.g. through a named barrier) at cluster
/// scope: the waiter's acquire (mbar_wait_cluster) then sees them.
__device__ __forceinline__ void mbar_arrive_release_cluster(u64* bar, u32 rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(rank)
      : "memory");
}

/// mbar_wait with acquire at cluster scope: for phases completed by other CTAs' releases.
__device__ __forceinline__ void mbar_wait_cluster(u64* bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

/// 16 bytes from the same shared-memory offset in CTA `rank` of the cluster (DSMEM).
__device__ __forceinline__ float4 ld_shared_cluster_f32x4(const void* local, u32 rank) {
  float4 v;
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %4, %5;\n"
      "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n"
      "}\n"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "r"(smem_addr(local)), "r"(rank)
      : "memory");
  return v;
}

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

/// Every thread of every CTA in the cluster meets here; shared-memory writes before it are
/// visible to the whole cluster after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

// ---- TMA and bulk copies ------------------------------------------------------------------

__device__ __forceinline__ void tma_prefetch_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// ---- programmatic dependent launch --------------------------------------------------------
// A kernel launched with programmatic stream serialization may start while the kernel before it
// on the stream still runs. The calling thread's grid_dependency_wait() returns once every
// prerequisite grid has completed and its memory operations are visible; without such a launch
// it returns at once. Every thread of every kernel that can be launched so (the GEMMs and the
// row-quantisation kernels; not the one-time weight preshuffle) calls it before its first
// access to global memory that another kernel may write, and before it writes any (a GEMM
// prefetches its tensor maps, kernel parameters, before it, and W when the caller vouches that
// no running kernel writes it: GemmOptions::prefetch_w). Calling it in every thread
// also keeps the chain transitive: a grid cannot complete before the grids it depends on.
__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

/// Lets the kernels that depend on this one be scheduled once every CTA of this grid has called
/// it or exited (the first call in a CTA counts). They still wait for this grid to complete in
/// grid_dependency_wait(); this only lets their launch and prologue overlap this grid's tail.
__device__ __forceinline__ void allow_dependent_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

/// 3-D tiled TMA load of one box into shared memory, completing on bar.
__device__ __forceinline__ void tma_load_3d(void* dst, const TensorMap* map, u64* bar, int c0,
                                            int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

/// 3-D tiled TMA load of one box into the same shared-memory offset of every CTA in `cta_mask`,
/// completing on the barrier at the same offset in each of them.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const TensorMap* map, u64* bar,
                                                      int c0, int c1, int c2, u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "h"(cta_mask)
      : "memory");
}

/// 3-D tiled TMA store of one box from shared memory, tracked by the thread's bulk group.
__device__ __forceinline__ void tma_store_3d(const TensorMap* map, const void* src, int c0, int c1,
                                             int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          reinterpret_cast<u64>(map)),
      "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

/// Contiguous bulk copy global -> shared (bytes % 16 == 0, both 16-byte aligned).
__device__ __forceinline__ void bulk_load(void* dst, const void* src, u32 bytes, u64* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_addr(dst)),
      "l"(reinterpret_cast<u64>(src)), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

/// bulk_load into the same shared-memory offset of every CTA in `cta_mask`.
__device__ __forceinline__ void bulk_load_multicast(void* dst, const void* src, u32 bytes, u64* bar,
                                                    u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<u64>(src)), "r"(bytes), "r"(smem_addr(bar)), "h"(cta_mask)
      : "memory");
}

/// Contiguous bulk copy shared -> global, tracked by the issuing thread's bulk group.
__device__ __forceinline__ void bulk_store(void* dst, const void* src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                   reinterpret_cast<u64>(dst)),
               "r"(smem_addr(src)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
/// Waits until at most kPending of this thread's bulk store groups still read shared memory.
template <int kPending = 0>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
/// Waits until this thread's bulk stores are complete (written to global memory).
__device__ __forceinline__ void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
/// Orders this thread's ordinary shared-memory writes before later async-proxy (bulk copy) reads.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/// A barrier among `threads` threads (a multiple of 32) under the hardware barrier `id` (1..15).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
/// Waits at barrier `id` until `threads` threads have arrived or synced (the same as
/// named_barrier; named for the producer/consumer pairing with named_barrier_arrive).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) { named_barrier(id, threads); }
/// Arrives at barrier `id` without waiting (counts toward the `threads` that a sync waits for).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------

/// Shared-memory matrix descriptor for a K-major operand in the 128-byte swizzle layout:
/// rows of 128 bytes, 8-row (1024-byte) swizzle atoms stacked densely (stride 1024 bytes).
/// The tile must start 1024-byte aligned; advancing K by 32 bytes adds 2 to the address field.
__device__ __forceinline__ u64 make_smem_desc_sw128(const void* tile) {
  u64 addr = smem_addr(tile);
  u64 desc = (addr & 0x3FFFFull) >> 4;  // start address, 16-byte units
  desc |= 1ull << 16;                   // leading byte offset: unused for swizzled K-major
  desc |= (1024ull >> 4) << 32;         // stride byte offset: one 8-row atom
  desc |= 1ull << 62;                   // layout: 128-byte swizzle
  return desc;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

/// Keeps the compiler from moving accumulator reads/writes across wgmma fences and waits.
__device__ __forceinline__ void fence_operand(float& reg) { asm volatile("" : "+f"(reg)::"memory"); }

// ---- register reallocation between warpgroups ---------------------------------------------

template <int kRegs>
__device__ __forceinline__ void regs_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void regs_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// ---- conversions (PTX cvt: exact IEEE round-to-nearest-even) -----------------------------------

/// Packs (lo, hi) into bf16x2 with round-to-nearest-even.
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 out;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  u32 out;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ u16 to_bf16(float v) {
  u16 out;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(out) : "f"(v));
  return out;
}
__device__ __forceinline__ u16 to_f16(float v) {
  u16 out;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(out) : "f"(v));
  return out;
}
/// The special-function unit's 2^x and 1/x (one MUFU each; subnormal inputs and results flush
/// to zero): their error in use is bounded where they are used (silu_sfu.cuh).
__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float bf16_to_float(u16 v) { return __uint_as_float(u32(v) << 16); }
__device__ __forceinline__ float f16_to_float(u16 v) {
  float out;
  asm("cvt.f32.f16 %0, %1;" : "=f"(out) : "h"(v));
  return out;
}
/// Two floats to two e4m3fn codes (lo in bits 0-7), round-to-nearest-even, saturating to +-448.
__device__ __forceinline__ u16 pack_e4m3x2(float lo, float hi) {
  u16 out;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(out) : "f"(hi), "f"(lo));
  return out;
}
/// Exact value of an e4m3fn code (0x7f/0xff are NaN).
__device__ __forceinline__ float e4m3_to_float(u8 code) {
  const int sign = code >> 7, exp = (code >> 3) & 15, mant = code & 7;
  float mag;
  if (exp == 15 && mant == 7) {
    mag = __int_as_float(0x7fc00000);
  } else if (exp == 0) {
    mag = mant * 0.001953125f;  // subnormal: mant/8 * 2^-6
  } else {
    mag = __int_as_float(((exp - 7 + 127) << 23) | (mant << 20));
  }
  return sign ? -mag : mag;
}

}  // namespace dev
}  // namespace f8gemm
