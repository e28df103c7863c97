// The runtime API functions that never block and that PyTorch calls around every op
// (cudaGetDevice, cudaGetLastError, the capture queries...): neither CUPTI's RUNTIME records
// nor the launch log's callbacks take them, so that they cost the program nothing. Shared by
// the recorder and the overhead benchmark's CUPTI floor (bench/overhead/cupti_floor.cc).
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_TRIVIAL_RUNTIME_APIS_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_TRIVIAL_RUNTIME_APIS_H_

#include <array>
#include <cstdint>

#include <cupti_runtime_cbid.h>

namespace warpscope {

inline constexpr std::array<uint32_t, 35> kTrivialRuntimeApis = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetStreamPriorityRange_v5050,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v10010,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_ptsz_v11030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010,
    CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetDevice_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetDevice_ptsz_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetSymbolAddress_v3020,
    // Error texts and topology queries: c10's checks and NCCL's set-up call them by the
    // thousand in a data-parallel job (8,844 error strings in a 40-step DDP run).
    CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetPCIBusId_v4010,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceCanAccessPeer_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_v11030,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_ptsz_v11030,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPointByVersion_v12050,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPointByVersion_ptsz_v12050,
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_TRIVIAL_RUNTIME_APIS_H_
