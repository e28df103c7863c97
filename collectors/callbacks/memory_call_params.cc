// Reading the parameters of CUDA 13.0's allocation and map functions (see
// memory_call_params.h). Every allocating function's parameters begin with where the result
// goes and the bytes asked for, except the pitched ones (width x height).
#include "collectors/callbacks/memory_call_params.h"

// cupti.h brings the parameter structs (generated_cuda_meta.h and
// generated_cuda_runtime_api_meta.h, which have no include guards).
#include <cupti.h>

namespace warpscope {
namespace {

template <typename Params>
bool Request(const void* p, MemoryKind kind, MemoryCallParams* out) {
  const auto* params = static_cast<const Params*>(p);
  out->operation = MemoryOperation::kAllocate;
  out->kind = kind;
  out->bytes = params->size;
  return true;
}

bool RuntimeCall(uint32_t cbid, const void* p, MemoryCallParams* out) {
  constexpr MemoryKind kDevice = MemoryKind::kDevice;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
      return Request<cudaMalloc_v3020_params>(p, kDevice, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
      return Request<cudaMallocAsync_v11020_params>(p, kDevice, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
      return Request<cudaMallocAsync_ptsz_v11020_params>(p, kDevice, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
      return Request<cudaMallocFromPoolAsync_v11020_params>(p, kDevice, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      return Request<cudaMallocFromPoolAsync_ptsz_v11020_params>(p, kDevice, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
      return Request<cudaMallocManaged_v6000_params>(p, MemoryKind::kManaged, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
      return Request<cudaHostAlloc_v3020_params>(p, MemoryKind::kPinned, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
      return Request<cudaMallocHost_v3020_params>(p, MemoryKind::kPinned, out);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      const auto* params = static_cast<const cudaMallocPitch_v3020_params*>(p);
      out->operation = MemoryOperation::kAllocate;
      out->kind = kDevice;
      out->bytes = static_cast<uint64_t>(params->width) * params->height;
      return true;
    }
    default:
      return false;
  }
}

// The driver functions name the bytes `bytesize`.
template <typename Params>
bool DriverRequest(const void* p, MemoryKind kind, MemoryCallParams* out) {
  const auto* params = static_cast<const Params*>(p);
  out->operation = MemoryOperation::kAllocate;
  out->kind = kind;
  out->bytes = params->bytesize;
  return true;
}

bool DriverCall(uint32_t cbid, const void* p, MemoryCallParams* out) {
  constexpr MemoryKind kDevice = MemoryKind::kDevice;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      return DriverRequest<cuMemAlloc_v2_params>(p, kDevice, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      return DriverRequest<cuMemAllocManaged_params>(p, MemoryKind::kManaged, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      return DriverRequest<cuMemAllocAsync_params>(p, kDevice, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      return DriverRequest<cuMemAllocAsync_ptsz_params>(p, kDevice, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      return DriverRequest<cuMemAllocFromPoolAsync_params>(p, kDevice, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return DriverRequest<cuMemAllocFromPoolAsync_ptsz_params>(p, kDevice, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      return DriverRequest<cuMemHostAlloc_params>(p, MemoryKind::kPinned, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
      return DriverRequest<cuMemAllocHost_v2_params>(p, MemoryKind::kPinned, out);
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      // Physical memory for a VMM mapping (PyTorch's expandable segments).
      const auto* params = static_cast<const cuMemCreate_params*>(p);
      out->operation = MemoryOperation::kAllocate;
      out->kind =
          params->prop != nullptr && params->prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE
              ? MemoryKind::kPinned
              : kDevice;
      out->bytes = params->size;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto* params = static_cast<const cuMemMap_params*>(p);
      out->operation = MemoryOperation::kMap;
      out->kind = kDevice;
      out->address = params->ptr;
      out->bytes = params->size;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto* params = static_cast<const cuMemUnmap_params*>(p);
      out->operation = MemoryOperation::kUnmap;
      out->kind = kDevice;
      out->address = params->ptr;
      out->bytes = params->size;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

bool IsMemoryCall(bool runtime, uint32_t cbid) {
  // Reads a zeroed struct: each case reads only its own fields, and follows no null pointer.
  MemoryCallParams ignored;
  static const uint8_t kZeros[256] = {};
  return ReadMemoryCallParams(runtime, cbid, kZeros, &ignored);
}

bool ReadMemoryCallParams(bool runtime, uint32_t cbid, const void* params, MemoryCallParams* out) {
  if (params == nullptr) return false;
  *out = MemoryCallParams();
  return runtime ? RuntimeCall(cbid, params, out) : DriverCall(cbid, params, out);
}

}  // namespace warpscope
