// The NVTX injection entry points of libwarpscope_core.so: NVTX (through the shim, or
// directly when NVTX_INJECTION64_PATH names the core) hands its export table to *this*
// library's libcupti, the one the core resolved by SONAME, so NVTX and activity records go
// to the same CUPTI as the process's other users (PyTorch's wheel-bundled copy included).
#include <cupti.h>

// Exported by libcupti but declared in no header (CUPTI_NOTES §1).
extern "C" CUptiResult cuptiNvtxInitialize(void* pfnGetExportTable);
extern "C" CUptiResult cuptiNvtxInitialize2(void* pfnGetExportTable);
extern "C" CUptiResult cuptiNvtxExtensionInitialize(void* extInfo);

#define WS_EXPORT extern "C" __attribute__((visibility("default")))

WS_EXPORT int warpscope_core_initialize_nvtx2(void* get_export_table) {
  return cuptiNvtxInitialize2(get_export_table) == CUPTI_SUCCESS;
}
WS_EXPORT int warpscope_core_initialize_nvtx(void* get_export_table) {
  return cuptiNvtxInitialize(get_export_table) == CUPTI_SUCCESS;
}
WS_EXPORT int warpscope_core_initialize_nvtx_extension(void* ext_info) {
  return cuptiNvtxExtensionInitialize(ext_info) == CUPTI_SUCCESS;
}
// Same entry points under the names NVTX looks for, for NVTX_INJECTION64_PATH=<core>.
WS_EXPORT int InitializeInjectionNvtx2(void* t) { return warpscope_core_initialize_nvtx2(t); }
WS_EXPORT int InitializeInjectionNvtx(void* t) { return warpscope_core_initialize_nvtx(t); }
WS_EXPORT int InitializeInjectionNvtxExtension(void* e) {
  return warpscope_core_initialize_nvtx_extension(e);
}
