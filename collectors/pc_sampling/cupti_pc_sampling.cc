// CUPTI PC sampling wrapper and the collector's registration. Call sequence per context
// (docs/cupti_notes.md §4, CUDA 13.0 cupti_pcsampling.h):
//   cuptiPCSamplingEnable -> GetNumStallReasons -> GetStallReasons (char[128] names)
//   -> SetConfigurationAttribute(COLLECTION_MODE=CONTINUOUS, STALL_REASON=all,
//      SAMPLING_PERIOD (unless CUPTI's default), SCRATCH_BUFFER_SIZE, HARDWARE_BUFFER_SIZE,
//      ENABLE_START_STOP_CONTROL=1, OUTPUT_DATA_FORMAT=PARSED,
//      SAMPLING_DATA_BUFFER=our preallocated CUpti_PCSamplingData), all in one call
//   -> [Start -> GetData* (while remainingNumPcs > 0) -> Stop -> GetData*]* -> Disable.
// Module loads: cuptiGetCubinCrc. From threads without the context (the controller's drain
// thread, capture edges) the context is pushed current first (BindContext).
// GetData's functionName strings are CUPTI's, shared across rounds: copied, never freed.
// GetData reads into a buffer of ours; the configured SAMPLING_DATA_BUFFER is CUPTI's until
// Disable, and read then (see ContextBuffers).
#include "collectors/pc_sampling/cupti_pc_sampling.h"

#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#include "collectors/common/cupti_params.h"
#include "collectors/pc_sampling/pc_sampling_collector.h"
#include "proto/settings/settings.h"

namespace warpscope {

namespace {

// One CUpti_PCSamplingData with room for max_pcs PCs of num_reasons stall reasons each.
struct PcDataBuffer {
  CUpti_PCSamplingData data;
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> reasons;  // max_pcs x num_reasons
  size_t reasons_per_pc = 1;

  void Allocate(size_t max_pcs, size_t num_reasons) {
    const size_t per_pc = std::max<size_t>(num_reasons, 1);
    reasons_per_pc = per_pc;
    pcs.resize(max_pcs);
    reasons.resize(max_pcs * per_pc);
    std::memset(pcs.data(), 0, pcs.size() * sizeof(CUpti_PCSamplingPCData));
    for (size_t i = 0; i < max_pcs; ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReason = &reasons[i * per_pc];
    }
    data = CuptiSizedParams<CUpti_PCSamplingData>(sizeof(CUpti_PCSamplingData));
    data.collectNumPcs = max_pcs;
    data.pPcData = pcs.data();
    ResetCounts();
  }

  // Zeroes what CUPTI writes, so that a failed call cannot hand back an earlier round's PCs,
  // and gives every PC its stall reason room back. The header marks stallReasonCount [r], but
  // a public CUDA 13 user found CUPTI treating it as the room in stallReason[] as well: left
  // at 0 (memset, or the previous round's count) CUPTI had nowhere to put a PC's samples.
  // Setting it to the room we allocated is right under either reading.
  void ResetCounts() {
    for (CUpti_PCSamplingPCData& pc : pcs) pc.stallReasonCount = reasons_per_pc;
    data.totalNumPcs = 0;
    data.remainingNumPcs = 0;
    data.totalSamples = 0;
    data.droppedSamples = 0;
    data.nonUsrKernelsTotalSamples = 0;
    data.hardwareBufferFull = 0;
  }

  // Copies what CUPTI put here into *batch. The function names are CUPTI's strings, shared
  // with later rounds and with activity records of the same function (cupti_pcsampling.h):
  // they are copied and never freed here (freeing them after each round was a double free on
  // the H200). They are one per sampled function, held until the process ends.
  void CopyOut(PcRawBatch* batch) {
    batch->total_samples = data.totalSamples;
    batch->dropped_samples = data.droppedSamples;
    batch->non_user_kernel_samples = data.nonUsrKernelsTotalSamples;
    batch->remaining_num_pcs = data.remainingNumPcs;
    batch->hardware_buffer_full = data.hardwareBufferFull != 0;
    const size_t n = std::min(data.totalNumPcs, pcs.size());
    batch->pcs.resize(n);
    for (size_t i = 0; i < n; ++i) {
      CUpti_PCSamplingPCData& src = pcs[i];
      PcRawPc& dst = batch->pcs[i];
      dst.cubin_crc = src.cubinCrc;
      dst.pc_offset = src.pcOffset;
      dst.correlation_id = src.correlationId;
      dst.function_name.assign(src.functionName != nullptr ? src.functionName : "");
      const size_t count = std::min(src.stallReasonCount, reasons_per_pc);
      dst.stall_samples.resize(count);
      for (size_t k = 0; k < count; ++k) {
        const uint32_t index = src.stallReason[k].pcSamplingStallReasonIndex;  // packed struct
        const uint32_t samples = src.stallReason[k].samples;
        dst.stall_samples[k] = {index, samples};
      }
      src.functionName = nullptr;
      src.stallReasonCount = reasons_per_pc;
    }
    data.totalNumPcs = 0;
  }
};

}  // namespace

// Two buffers per context. `configured` is the SAMPLING_DATA_BUFFER attribute: CUPTI fills
// it on its own (at cuptiPCSamplingDisable, with what was not read yet), so it is read only
// after Disable. GetData gets `read`, a buffer CUPTI does not hold. Passing the configured
// buffer to GetData too let CUPTI and the reader write the same PCs and names: heap
// corruption (malloc_consolidate aborts, double frees) in sampled programs on the H200.
struct CuptiPcSampling::ContextBuffers {
  PcDataBuffer configured;
  PcDataBuffer read;
  std::vector<uint32_t> reason_indices;  // kept alive for CUPTI
  size_t num_reasons = 0;
};

namespace {

CUcontext Ctx(PcContext ctx) { return static_cast<CUcontext>(ctx); }

// Zeroed params of a call on one context.
template <typename T>
T ContextParams(size_t size, PcContext ctx) {
  T params = CuptiSizedParams<T>(size);
  params.ctx = Ctx(ctx);
  return params;
}

PcResult Check(CUptiResult status, const char* call) {
  if (status == CUPTI_SUCCESS) return PcResult::Ok();
  const char* text = nullptr;
  cuptiGetResultString(status, &text);
  PcResult r;
  r.message = std::string(call) + ": " + (text ? text : "unknown CUPTI error") + " (" +
              std::to_string(static_cast<int>(status)) + ")";
  switch (status) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      r.kind = PcErrorKind::kInsufficientPrivileges;
      break;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_DEVICE:
      r.kind = PcErrorKind::kUnsupported;
      break;
    case CUPTI_ERROR_OUT_OF_MEMORY:
      r.kind = PcErrorKind::kOutOfMemory;
      break;
    case CUPTI_ERROR_HARDWARE_BUSY:
      r.kind = PcErrorKind::kBusy;
      break;
    default:
      r.kind = PcErrorKind::kOther;
      break;
  }
  return r;
}

PcResult NotConfigured() {
  PcResult r;
  r.kind = PcErrorKind::kOther;
  r.message = "the context was not configured for PC sampling";
  return r;
}

const char* AttributeName(CUpti_PCSamplingConfigurationAttributeType type) {
  switch (type) {
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
      return "SAMPLING_PERIOD";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
      return "STALL_REASON";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
      return "SCRATCH_BUFFER_SIZE";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
      return "HARDWARE_BUFFER_SIZE";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
      return "COLLECTION_MODE";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
      return "ENABLE_START_STOP_CONTROL";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
      return "OUTPUT_DATA_FORMAT";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
      return "SAMPLING_DATA_BUFFER";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN:
      return "WORKER_THREAD_PERIODIC_SLEEP_SPAN";
    default:
      return "?";
  }
}

CUpti_PCSamplingConfigurationInfo Attribute(CUpti_PCSamplingConfigurationAttributeType type) {
  CUpti_PCSamplingConfigurationInfo info;
  std::memset(&info, 0, sizeof(info));
  info.attributeType = type;
  return info;
}

}  // namespace

CuptiPcSampling::CuptiPcSampling() = default;

CuptiPcSampling::~CuptiPcSampling() {
  PcRawBatch ignored;
  while (!contexts_.empty()) Disable(contexts_.begin()->first, &ignored);
}

namespace {

// The GPU's PCI bus id ("0000:19:00.0"), which names it the same way in every process
// whatever CUDA_VISIBLE_DEVICES says; "" when the driver cannot tell.
std::string PciBusId(PcContext ctx) {
  uint32_t ordinal = 0;
  if (cuptiGetDeviceId(Ctx(ctx), &ordinal) != CUPTI_SUCCESS) return "";
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) return "";
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using GetBusId = CUresult (*)(char*, int, CUdevice);
  auto device_get = reinterpret_cast<DeviceGet>(dlsym(cuda, "cuDeviceGet"));
  auto get_bus_id = reinterpret_cast<GetBusId>(dlsym(cuda, "cuDeviceGetPCIBusId"));
  CUdevice device = 0;
  char bus_id[64] = {0};
  std::string out;
  if (device_get != nullptr && get_bus_id != nullptr &&
      device_get(&device, static_cast<int>(ordinal)) == CUDA_SUCCESS &&
      get_bus_id(bus_id, sizeof bus_id - 1, device) == CUDA_SUCCESS) {
    out = bus_id;
  }
  dlclose(cuda);
  return out;
}

}  // namespace

// One process per GPU may sample PCs. When a second one tried (a program that forks and
// execs another CUDA program, several processes on one GPU), cuptiPCSamplingStart failed
// with HARDWARE_BUSY in it, and from then on CUPTI delivered none of that process's activity
// records (H200): its trace had no kernels. So every warpscope process first claims the GPU
// with an abstract Unix socket named after its PCI bus id, which the kernel releases when
// the process ends, and does not enable PC sampling where another one holds it.
PcResult CuptiPcSampling::ClaimDevice(PcContext ctx) {
  const std::string bus_id = PciBusId(ctx);
  if (bus_id.empty()) return PcResult::Ok();  // cannot tell: let CUPTI decide
  if (claims_.count(bus_id) != 0) return PcResult::Ok();
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return PcResult::Ok();
  sockaddr_un addr;
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  const std::string name = "warpscope-pc-sampling-" + bus_id;
  std::memcpy(addr.sun_path + 1, name.data(), std::min(name.size(), sizeof addr.sun_path - 2));
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                               std::min(name.size(), sizeof addr.sun_path - 2));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
    claims_[bus_id] = fd;
    return PcResult::Ok();
  }
  const int err = errno;
  close(fd);
  if (err != EADDRINUSE) return PcResult::Ok();
  PcResult r;
  r.kind = PcErrorKind::kBusy;
  r.message = "another process already samples the PCs of GPU " + bus_id;
  return r;
}

// CUPTI's *ParamsSize macros below are offsetof/sizeof expressions, as they should be.
// NOLINTBEGIN(bugprone-sizeof-expression)
PcResult CuptiPcSampling::Enable(PcContext ctx) {
  if (PcResult claim = ClaimDevice(ctx); !claim.ok()) return claim;
  auto p = ContextParams<CUpti_PCSamplingEnableParams>(CUpti_PCSamplingEnableParamsSize, ctx);
  return Check(cuptiPCSamplingEnable(&p), "cuptiPCSamplingEnable");
}

PcResult CuptiPcSampling::GetStallReasons(PcContext ctx, std::vector<PcStallReason>* reasons) {
  size_t count = 0;
  auto n = ContextParams<CUpti_PCSamplingGetNumStallReasonsParams>(
      CUpti_PCSamplingGetNumStallReasonsParamsSize, ctx);
  n.numStallReasons = &count;
  if (PcResult r =
          Check(cuptiPCSamplingGetNumStallReasons(&n), "cuptiPCSamplingGetNumStallReasons");
      !r.ok()) {
    return r;
  }
  std::vector<uint32_t> index(count);
  std::vector<std::vector<char>> names(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
  std::vector<char*> name_ptrs(count);
  for (size_t i = 0; i < count; ++i) name_ptrs[i] = names[i].data();
  auto s = ContextParams<CUpti_PCSamplingGetStallReasonsParams>(
      CUpti_PCSamplingGetStallReasonsParamsSize, ctx);
  s.numStallReasons = count;
  s.stallReasonIndex = index.data();
  s.stallReasons = name_ptrs.data();
  if (PcResult r = Check(cuptiPCSamplingGetStallReasons(&s), "cuptiPCSamplingGetStallReasons");
      !r.ok()) {
    return r;
  }
  reasons->clear();
  reasons->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    names[i].back() = '\0';
    reasons->push_back({index[i], std::string(names[i].data())});
  }
  return PcResult::Ok();
}

PcResult CuptiPcSampling::Configure(PcContext ctx, const PcContextSettings& settings) {
  auto buffers = std::make_unique<ContextBuffers>();
  ContextBuffers& b = *buffers;
  b.num_reasons = settings.stall_reason_indices.size();
  b.reason_indices = settings.stall_reason_indices;
  const size_t max_pcs = std::max<size_t>(settings.max_pcs_per_read, 1);
  b.configured.Allocate(max_pcs, b.num_reasons);
  b.read.Allocate(max_pcs, b.num_reasons);

  // One call with every attribute, collection mode first as in NVIDIA's samples (the header
  // names no order; attributes set in a later call after Start are not documented to apply).
  std::vector<CUpti_PCSamplingConfigurationInfo> infos;
  auto info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE);
  info.attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  infos.push_back(info);
  info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
  info.attributeData.stallReasonData.stallReasonCount = b.num_reasons;
  info.attributeData.stallReasonData.pStallReasonIndex = b.reason_indices.data();
  infos.push_back(info);
  if (settings.period_exponent != 0) {  // 0: CUPTI's own default
    info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
    info.attributeData.samplingPeriodData.samplingPeriod = settings.period_exponent;
    infos.push_back(info);
  }
  info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE);
  info.attributeData.scratchBufferSizeData.scratchBufferSize = settings.scratch_buffer_bytes;
  infos.push_back(info);
  info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE);
  info.attributeData.hardwareBufferSizeData.hardwareBufferSize = settings.hardware_buffer_bytes;
  infos.push_back(info);
  info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL);
  info.attributeData.enableStartStopControlData.enableStartStopControl = 1;
  infos.push_back(info);
  info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT);
  info.attributeData.outputDataFormatData.outputDataFormat =
      CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  infos.push_back(info);
  info = Attribute(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
  info.attributeData.samplingDataBufferData.samplingDataBuffer = &b.configured.data;
  infos.push_back(info);

  auto p = ContextParams<CUpti_PCSamplingConfigurationInfoParams>(
      CUpti_PCSamplingConfigurationInfoParamsSize, ctx);
  p.numAttributes = infos.size();
  p.pPCSamplingConfigurationInfo = infos.data();
  PcResult r = Check(cuptiPCSamplingSetConfigurationAttribute(&p),
                     "cuptiPCSamplingSetConfigurationAttribute");
  if (!r.ok()) {
    for (const auto& i : infos) {
      if (i.attributeStatus != CUPTI_SUCCESS) {
        r.message += std::string("; attribute ") + AttributeName(i.attributeType) + " status " +
                     std::to_string(static_cast<int>(i.attributeStatus));
        break;
      }
    }
    return r;
  }
  contexts_[ctx] = std::move(buffers);
  return PcResult::Ok();
}

namespace {

// The driver's context-stack calls, looked up in the libcuda.so.1 the program loaded (the
// library does not link libcuda itself).
struct ContextStackCalls {
  CUresult (*get_current)(CUcontext*) = nullptr;
  CUresult (*push)(CUcontext) = nullptr;
  CUresult (*pop)(CUcontext*) = nullptr;
  bool ok() const { return get_current != nullptr && push != nullptr && pop != nullptr; }
};

const ContextStackCalls& ContextStack() {
  static const ContextStackCalls calls = [] {
    ContextStackCalls c;
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr) return c;
    c.get_current = reinterpret_cast<CUresult (*)(CUcontext*)>(dlsym(cuda, "cuCtxGetCurrent"));
    c.push = reinterpret_cast<CUresult (*)(CUcontext)>(dlsym(cuda, "cuCtxPushCurrent_v2"));
    c.pop = reinterpret_cast<CUresult (*)(CUcontext*)>(dlsym(cuda, "cuCtxPopCurrent_v2"));
    dlclose(cuda);  // RTLD_NOLOAD: the program's reference keeps it loaded
    return c;
  }();
  return calls;
}

}  // namespace

PcBinding CuptiPcSampling::BindContext(PcContext ctx) {
  const ContextStackCalls& stack = ContextStack();
  if (!stack.ok()) return PcBinding::kFailed;
  CUcontext current = nullptr;
  if (stack.get_current(&current) == CUDA_SUCCESS && current == Ctx(ctx)) {
    return PcBinding::kAlreadyCurrent;
  }
  return stack.push(Ctx(ctx)) == CUDA_SUCCESS ? PcBinding::kPushed : PcBinding::kFailed;
}

void CuptiPcSampling::UnbindContext(PcContext /*ctx*/, PcBinding binding) {
  if (binding != PcBinding::kPushed) return;
  CUcontext popped = nullptr;
  ContextStack().pop(&popped);
}

std::string CuptiPcSampling::DescribeConfiguration(PcContext ctx) {
  const CUpti_PCSamplingConfigurationAttributeType types[] = {
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE,
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD,
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE,
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE,
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL,
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN,
  };
  std::string out;
  // One attribute per call: a rejected one must not hide the others.
  for (const auto type : types) {
    CUpti_PCSamplingConfigurationInfo info = Attribute(type);
    auto p = ContextParams<CUpti_PCSamplingConfigurationInfoParams>(
        CUpti_PCSamplingConfigurationInfoParamsSize, ctx);
    p.numAttributes = 1;
    p.pPCSamplingConfigurationInfo = &info;
    const CUptiResult r = cuptiPCSamplingGetConfigurationAttribute(&p);
    if (!out.empty()) out += ' ';
    out += AttributeName(type);
    out += '=';
    if (r != CUPTI_SUCCESS || info.attributeStatus != CUPTI_SUCCESS) {
      out += "error(" + std::to_string(static_cast<int>(r)) + "/" +
             std::to_string(static_cast<int>(info.attributeStatus)) + ")";
      continue;
    }
    const auto& d = info.attributeData;
    switch (type) {
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
        out += std::to_string(static_cast<int>(d.collectionModeData.collectionMode));
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
        out += std::to_string(d.samplingPeriodData.samplingPeriod);
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
        out += std::to_string(d.scratchBufferSizeData.scratchBufferSize);
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
        out += std::to_string(d.hardwareBufferSizeData.hardwareBufferSize);
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
        out += std::to_string(d.enableStartStopControlData.enableStartStopControl);
        break;
      default:
        out += std::to_string(d.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan);
        break;
    }
  }
  return out;
}

PcResult CuptiPcSampling::CubinCrc(const void* cubin, size_t size, uint64_t* crc) {
  *crc = 0;
  auto p = CuptiSizedParams<CUpti_GetCubinCrcParams>(CUpti_GetCubinCrcParamsSize);
  p.cubinSize = size;
  p.cubin = cubin;
  PcResult r = Check(cuptiGetCubinCrc(&p), "cuptiGetCubinCrc");
  if (r.ok()) *crc = p.cubinCrc;
  return r;
}

PcResult CuptiPcSampling::Start(PcContext ctx) {
  auto p = ContextParams<CUpti_PCSamplingStartParams>(CUpti_PCSamplingStartParamsSize, ctx);
  return Check(cuptiPCSamplingStart(&p), "cuptiPCSamplingStart");
}

PcResult CuptiPcSampling::Stop(PcContext ctx) {
  auto p = ContextParams<CUpti_PCSamplingStopParams>(CUpti_PCSamplingStopParamsSize, ctx);
  return Check(cuptiPCSamplingStop(&p), "cuptiPCSamplingStop");
}

PcResult CuptiPcSampling::GetData(PcContext ctx, PcRawBatch* batch) {
  batch->Clear();
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return NotConfigured();
  ContextBuffers& b = *it->second;
  b.read.ResetCounts();
  auto p = ContextParams<CUpti_PCSamplingGetDataParams>(CUpti_PCSamplingGetDataParamsSize, ctx);
  p.pcSamplingData = &b.read.data;
  PcResult r = Check(cuptiPCSamplingGetData(&p), "cuptiPCSamplingGetData");
  if (!r.ok() && r.kind != PcErrorKind::kOutOfMemory) {
    batch->hardware_buffer_full = b.read.data.hardwareBufferFull != 0;
    return r;
  }
  b.read.CopyOut(batch);
  return r;
}

void CuptiPcSampling::Disable(PcContext ctx, PcRawBatch* leftover) {
  leftover->Clear();
  auto p = ContextParams<CUpti_PCSamplingDisableParams>(CUpti_PCSamplingDisableParamsSize, ctx);
  auto it = contexts_.find(ctx);
  if (it != contexts_.end()) it->second->configured.ResetCounts();
  const CUptiResult r = cuptiPCSamplingDisable(&p);  // fails on a context never enabled
  if (it == contexts_.end()) return;
  if (r == CUPTI_SUCCESS) it->second->configured.CopyOut(leftover);
  contexts_.erase(it);
}
// NOLINTEND(bugprone-sizeof-expression)

namespace {

std::unique_ptr<PcSamplingApi> MakeCuptiPcSampling() { return std::make_unique<CuptiPcSampling>(); }

}  // namespace

std::unique_ptr<SessionListener> MakePcSamplingCollector() {
  return std::make_unique<PcSamplingCollector>(&MakeCuptiPcSampling);
}

}  // namespace warpscope
