// NVTX injection into CUPTI (see cupti_nvtx_injection.h).
#include "collectors/nvtx/cupti_nvtx_injection.h"

#include <cupti.h>

// Exported by libcupti but declared in no header.
extern "C" CUptiResult cuptiNvtxInitialize(void* pfnGetExportTable);
extern "C" CUptiResult cuptiNvtxInitialize2(void* pfnGetExportTable);
extern "C" CUptiResult cuptiNvtxExtensionInitialize(void* extInfo);

namespace warpscope {

bool CuptiNvtxInitialize(NvtxInjectionEntry entry, void* arg) {
  switch (entry) {
    case NvtxInjectionEntry::kV1:
      return cuptiNvtxInitialize(arg) == CUPTI_SUCCESS;
    case NvtxInjectionEntry::kV2:
      return cuptiNvtxInitialize2(arg) == CUPTI_SUCCESS;
    case NvtxInjectionEntry::kExtension:
      return cuptiNvtxExtensionInitialize(arg) == CUPTI_SUCCESS;
  }
  return false;
}

}  // namespace warpscope
