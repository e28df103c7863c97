// Hands NVTX's export table to the libcupti the core was linked against (by SONAME), so NVTX
// ranges and activity records go to the same CUPTI as the process's other users (PyTorch's
// wheel-bundled copy included). The C entry points NVTX looks for live in
// libinject/core_entry.cc, which makes sure CUPTI is initialised first.
#ifndef WARPSCOPE_COLLECTORS_NVTX_CUPTI_NVTX_INJECTION_H_
#define WARPSCOPE_COLLECTORS_NVTX_CUPTI_NVTX_INJECTION_H_

namespace warpscope {

// Which of NVTX's three injection interfaces is being initialised.
enum class NvtxInjectionEntry { kV1, kV2, kExtension };

// cuptiNvtxInitialize / cuptiNvtxInitialize2 / cuptiNvtxExtensionInitialize. Only valid once
// CUPTI itself is initialised (any CUPTI API call such as cuptiSubscribe does that): these
// three calls skip CUPTI's global initialisation, and the program crashed inside libcupti
// when NVTX came before everything else. Returns true on success.
bool CuptiNvtxInitialize(NvtxInjectionEntry entry, void* arg);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_NVTX_CUPTI_NVTX_INJECTION_H_
