/// \brief The NVRTC JIT, one include for its users. Each piece lives in its own file:
///   key.hpp           the cache key (source, headers, options, NVRTC library, kVersion)
///   nvrtc_identity.hpp  which NVRTC library is loaded (version, file, build id)
///   cache.hpp         get_instance(): memory cache -> disk cache -> NVRTC, once per key
///   disk_cache.hpp    ${F8GEMM_CACHE_DIR:-$HOME/.cache/f8gemm}/<key>.cubin, format, load, store
///   compiler.hpp      NVRTC: options, compile to cubin or PTX, warnings are errors
///   ptxas_report.hpp  registers, spills and shared memory from ptxas -v
///   instance.hpp      a compiled instance and its kernels, loaded with cudaLibraryLoadData
///   dump.hpp          F8GEMM_DUMP_DIR
///   io.hpp            stderr lines, F8GEMM_LOG, file writes
#pragma once

#include "jit/cache.hpp"
#include "jit/compiler.hpp"
#include "jit/disk_cache.hpp"
#include "jit/instance.hpp"
#include "jit/key.hpp"
#include "jit/ptxas_report.hpp"
