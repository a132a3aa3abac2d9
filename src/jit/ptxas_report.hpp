/// \brief ptxas's -v resource report (registers, spills, stack, static shared memory), read out
/// of an NVRTC program log.
#pragma once

#include <string>
#include <vector>

namespace f8gemm::jit {

/// ptxas's -v report for one kernel entry of an instance (or for a non-inlined device function
/// that ptxas reported separately: is_entry false, only the frame and spill fields are set).
struct KernelResources {
  std::string entry;       ///< mangled or extern "C" name as ptxas printed it
  bool is_entry = true;    ///< false for a called (non-inlined) function
  int registers = 0;
  int spill_stores = 0;    ///< bytes
  int spill_loads = 0;     ///< bytes
  int stack_frame = 0;     ///< bytes
  int shared_static = 0;   ///< bytes of static shared memory ("smem")
};

/// Parses ptxas -v lines out of an NVRTC log.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

/// Whether ptxas says it serialised the wgmmas ("(C75xx) Potential Performance Loss:
/// wgmma.mma_async instructions are serialized due to ..."): every wgmma then waits for the one
/// before it. An info line, not a warning, so the JIT's warnings-as-errors rule lets it through;
/// the kernel is right but slow (perf log, cards 41 and 54).
bool reports_wgmma_serialization(const std::string& log);

}  // namespace f8gemm::jit
