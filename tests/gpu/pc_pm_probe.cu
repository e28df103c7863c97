// Probe: can PM sampling and PC sampling take turns on one GPU in one process? (Run by
// tests/gpu/gpu_pc.sh; no warpscope involved, CUPTI called directly.) Each step prints
//   PROBE <step>: <call> -> <CUPTI result> [samples]
// and the last line is "PROBE VERDICT: ..." saying which combinations CUPTI accepted:
//   A  PC Start while PM sampling runs
//   B  PC Start after PM Stop (PM still enabled)
//   C  PC Start after PM Disable
//   D  PM Enable+Start while PC sampling is enabled but stopped
//   E  PM Enable+Start after PC Disable
// Exit 0 whatever CUPTI answers (the answers are the result); 2 when CUDA itself fails.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__device__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void ws_probe_spin(float* out, unsigned long long ns) {
  const unsigned long long end = GlobalNs() + ns;
  float a = threadIdx.x;
  while (GlobalNs() < end) a = a * 1.0001f + 0.5f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

float* g_out = nullptr;
void Spin(int ms) {
  ws_probe_spin<<<264, 256>>>(g_out, ms * 1000000ull);
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "PROBE: kernel failed\n");
    std::exit(2);
  }
}

std::string Text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(s ? s : "?") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

CUptiResult Report(const char* step, const char* call, CUptiResult r) {
  std::printf("PROBE %s: %s -> %s\n", step, call, Text(r).c_str());
  std::fflush(stdout);
  return r;
}

template <typename T>
T P(size_t size) {
  T p;
  std::memset(&p, 0, sizeof p);
  p.structSize = size;
  return p;
}

// PM sampling of one metric on device 0.
struct Pm {
  std::vector<uint8_t> availability, config;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_PmSampling_Object* sampler = nullptr;

  CUptiResult Prepare() {
    auto init = P<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    CUptiResult r = Report("setup", "cuptiProfilerInitialize", cuptiProfilerInitialize(&init));
    if (r != CUPTI_SUCCESS) return r;
    auto chip = P<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = 0;
    if ((r = Report("setup", "cuptiDeviceGetChipName", cuptiDeviceGetChipName(&chip))) != CUPTI_SUCCESS) return r;
    auto avail = P<CUpti_PmSampling_GetCounterAvailability_Params>(
        CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE);
    avail.deviceIndex = 0;
    if ((r = cuptiPmSamplingGetCounterAvailability(&avail)) != CUPTI_SUCCESS) {
      return Report("setup", "cuptiPmSamplingGetCounterAvailability", r);
    }
    availability.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability.data();
    if ((r = Report("setup", "cuptiPmSamplingGetCounterAvailability",
                    cuptiPmSamplingGetCounterAvailability(&avail))) != CUPTI_SUCCESS) return r;
    auto h = P<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    h.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    h.pChipName = chip.pChipName;
    h.pCounterAvailabilityImage = availability.data();
    if ((r = Report("setup", "cuptiProfilerHostInitialize", cuptiProfilerHostInitialize(&h))) != CUPTI_SUCCESS) return r;
    host = h.pHostObject;
    const char* metrics[] = {"gr__cycles_elapsed.max"};
    auto add = P<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host;
    add.ppMetricNames = metrics;
    add.numMetrics = 1;
    if ((r = Report("setup", "cuptiProfilerHostConfigAddMetrics", cuptiProfilerHostConfigAddMetrics(&add))) != CUPTI_SUCCESS) return r;
    auto size = P<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host;
    if ((r = cuptiProfilerHostGetConfigImageSize(&size)) != CUPTI_SUCCESS) return Report("setup", "GetConfigImageSize", r);
    config.resize(size.configImageSize);
    auto image = P<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = host;
    image.configImageSize = config.size();
    image.pConfigImage = config.data();
    return Report("setup", "cuptiProfilerHostGetConfigImage", cuptiProfilerHostGetConfigImage(&image));
  }

  CUptiResult EnableAndStart(const char* step) {
    auto e = P<CUpti_PmSampling_Enable_Params>(CUpti_PmSampling_Enable_Params_STRUCT_SIZE);
    e.deviceIndex = 0;
    CUptiResult r = Report(step, "cuptiPmSamplingEnable", cuptiPmSamplingEnable(&e));
    if (r != CUPTI_SUCCESS) return r;
    sampler = e.pPmSamplingObject;
    auto c = P<CUpti_PmSampling_SetConfig_Params>(CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE);
    c.pPmSamplingObject = sampler;
    c.configSize = config.size();
    c.pConfig = config.data();
    c.hardwareBufferSize = 64ull << 20;
    c.samplingInterval = 100000;  // 100 us
    c.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    c.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if ((r = Report(step, "cuptiPmSamplingSetConfig", cuptiPmSamplingSetConfig(&c))) != CUPTI_SUCCESS) return r;
    auto s = P<CUpti_PmSampling_Start_Params>(CUpti_PmSampling_Start_Params_STRUCT_SIZE);
    s.pPmSamplingObject = sampler;
    return Report(step, "cuptiPmSamplingStart", cuptiPmSamplingStart(&s));
  }
  CUptiResult Stop(const char* step) {
    auto s = P<CUpti_PmSampling_Stop_Params>(CUpti_PmSampling_Stop_Params_STRUCT_SIZE);
    s.pPmSamplingObject = sampler;
    return Report(step, "cuptiPmSamplingStop", cuptiPmSamplingStop(&s));
  }
  CUptiResult Disable(const char* step) {
    auto d = P<CUpti_PmSampling_Disable_Params>(CUpti_PmSampling_Disable_Params_STRUCT_SIZE);
    d.pPmSamplingObject = sampler;
    sampler = nullptr;
    return Report(step, "cuptiPmSamplingDisable", cuptiPmSamplingDisable(&d));
  }
};

// PC sampling of one context, CUPTI's defaults except start/stop control.
struct Pc {
  CUcontext ctx = nullptr;
  size_t reasons = 0;
  std::vector<uint32_t> index;
  std::vector<std::vector<char>> names;
  std::vector<char*> name_ptrs;
  CUpti_PCSamplingData configured{}, read{};
  std::vector<CUpti_PCSamplingPCData> pcs_configured, pcs_read;
  std::vector<CUpti_PCSamplingStallReason> stalls_configured, stalls_read;
  bool enabled = false;

  void Buffer(CUpti_PCSamplingData* d, std::vector<CUpti_PCSamplingPCData>* pcs,
              std::vector<CUpti_PCSamplingStallReason>* stalls) {
    const size_t n = 4096;
    pcs->assign(n, CUpti_PCSamplingPCData{});
    stalls->assign(n * reasons, CUpti_PCSamplingStallReason{});
    for (size_t i = 0; i < n; ++i) {
      (*pcs)[i].size = sizeof(CUpti_PCSamplingPCData);
      (*pcs)[i].stallReason = &(*stalls)[i * reasons];
      (*pcs)[i].stallReasonCount = reasons;
    }
    std::memset(d, 0, sizeof *d);
    d->size = sizeof(CUpti_PCSamplingData);
    d->collectNumPcs = n;
    d->pPcData = pcs->data();
  }

  CUptiResult EnableAndConfigure(const char* step) {
    CUpti_PCSamplingEnableParams e{};
    e.size = CUpti_PCSamplingEnableParamsSize;
    e.ctx = ctx;
    CUptiResult r = Report(step, "cuptiPCSamplingEnable", cuptiPCSamplingEnable(&e));
    if (r != CUPTI_SUCCESS) return r;
    enabled = true;
    CUpti_PCSamplingGetNumStallReasonsParams n{};
    n.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    n.ctx = ctx;
    n.numStallReasons = &reasons;
    if ((r = Report(step, "cuptiPCSamplingGetNumStallReasons", cuptiPCSamplingGetNumStallReasons(&n))) != CUPTI_SUCCESS) return r;
    index.resize(reasons);
    names.assign(reasons, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
    name_ptrs.clear();
    for (auto& v : names) name_ptrs.push_back(v.data());
    CUpti_PCSamplingGetStallReasonsParams s{};
    s.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    s.ctx = ctx;
    s.numStallReasons = reasons;
    s.stallReasonIndex = index.data();
    s.stallReasons = name_ptrs.data();
    if ((r = Report(step, "cuptiPCSamplingGetStallReasons", cuptiPCSamplingGetStallReasons(&s))) != CUPTI_SUCCESS) return r;
    Buffer(&configured, &pcs_configured, &stalls_configured);
    Buffer(&read, &pcs_read, &stalls_read);
    CUpti_PCSamplingConfigurationInfo info[4];
    std::memset(info, 0, sizeof info);
    info[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    info[0].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    info[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    info[1].attributeData.samplingPeriodData.samplingPeriod = 15;
    info[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    info[2].attributeData.enableStartStopControlData.enableStartStopControl = 1;
    info[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    info[3].attributeData.samplingDataBufferData.samplingDataBuffer = &configured;
    CUpti_PCSamplingConfigurationInfoParams c{};
    c.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    c.ctx = ctx;
    c.numAttributes = 4;
    c.pPCSamplingConfigurationInfo = info;
    return Report(step, "cuptiPCSamplingSetConfigurationAttribute",
                  cuptiPCSamplingSetConfigurationAttribute(&c));
  }
  CUptiResult Start(const char* step) {
    CUpti_PCSamplingStartParams p{};
    p.size = CUpti_PCSamplingStartParamsSize;
    p.ctx = ctx;
    return Report(step, "cuptiPCSamplingStart", cuptiPCSamplingStart(&p));
  }
  CUptiResult Stop(const char* step) {
    CUpti_PCSamplingStopParams p{};
    p.size = CUpti_PCSamplingStopParamsSize;
    p.ctx = ctx;
    return Report(step, "cuptiPCSamplingStop", cuptiPCSamplingStop(&p));
  }
  // Drains and returns the sum of per-PC samples.
  unsigned long long Drain(const char* step) {
    unsigned long long samples = 0, total = 0, pcs = 0;
    for (int round = 0; round < 1000; ++round) {
      for (auto& pc : pcs_read) pc.stallReasonCount = reasons;
      read.totalNumPcs = read.remainingNumPcs = 0;
      CUpti_PCSamplingGetDataParams g{};
      g.size = CUpti_PCSamplingGetDataParamsSize;
      g.ctx = ctx;
      g.pcSamplingData = &read;
      const CUptiResult r = cuptiPCSamplingGetData(&g);
      total += read.totalSamples;
      pcs += read.totalNumPcs;
      for (size_t i = 0; i < read.totalNumPcs; ++i) {
        for (size_t k = 0; k < read.pPcData[i].stallReasonCount; ++k) samples += read.pPcData[i].stallReason[k].samples;
      }
      if (r != CUPTI_SUCCESS || read.remainingNumPcs == 0) {
        std::printf("PROBE %s: cuptiPCSamplingGetData -> %s; %llu PCs, %llu samples (CUPTI total %llu, buffer full %d)\n",
                    step, Text(r).c_str(), pcs, samples, total, read.hardwareBufferFull);
        break;
      }
    }
    return samples;
  }
  void Disable(const char* step) {
    if (!enabled) return;
    CUpti_PCSamplingDisableParams p{};
    p.size = CUpti_PCSamplingDisableParamsSize;
    p.ctx = ctx;
    Report(step, "cuptiPCSamplingDisable", cuptiPCSamplingDisable(&p));
    enabled = false;
  }
};

}  // namespace

int main() {
  if (cudaMalloc(&g_out, 264 * 256 * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "PROBE: no CUDA device\n");
    return 2;
  }
  Pc pc;
  cuCtxGetCurrent(&pc.ctx);
  Pm pm;
  std::string verdict;
  auto note = [&verdict](const char* what, bool ok) {
    verdict += std::string(what) + (ok ? "=yes " : "=no ");
  };
  if (pm.Prepare() != CUPTI_SUCCESS || pm.EnableAndStart("setup") != CUPTI_SUCCESS) {
    std::printf("PROBE VERDICT: PM sampling could not start alone; nothing to compare\n");
    return 0;
  }
  Spin(20);
  // A: PC sampling while PM sampling runs.
  bool a = pc.EnableAndConfigure("A") == CUPTI_SUCCESS && pc.Start("A") == CUPTI_SUCCESS;
  if (a) {
    Spin(50);
    pc.Stop("A");
    a = pc.Drain("A") > 0;
  }
  note("A:pc_while_pm_runs", a);
  // PC Start, 50 ms of work, Stop, drain: true when CUPTI accepted it and gave samples.
  auto try_pc = [&pc](const char* step) {
    if (!pc.enabled && pc.EnableAndConfigure(step) != CUPTI_SUCCESS) pc.enabled = false;
    if (!pc.enabled || pc.Start(step) != CUPTI_SUCCESS) return false;
    Spin(50);
    pc.Stop(step);
    return pc.Drain(step) > 0;
  };
  // B: PM stopped (still enabled), then PC.
  pm.Stop("B");
  note("B:pc_after_pm_stop", try_pc("B"));
  // C: PM disabled, then PC.
  pm.Disable("C");
  note("C:pc_after_pm_disable", try_pc("C"));
  // D: PM again while PC is enabled but stopped.
  const bool d = pm.EnableAndStart("D") == CUPTI_SUCCESS;
  if (d) {
    Spin(20);
    pm.Stop("D");
    pm.Disable("D");
  }
  note("D:pm_while_pc_enabled_stopped", d);
  // E: PM after PC is disabled.
  pc.Disable("E");
  const bool e = pm.EnableAndStart("E") == CUPTI_SUCCESS;
  if (e) {
    Spin(20);
    pm.Stop("E");
    pm.Disable("E");
  }
  note("E:pm_after_pc_disable", e);
  std::printf("PROBE VERDICT: %s(yes = CUPTI accepted it%s)\n", verdict.c_str(),
              " and, for PC steps, returned samples");
  return 0;
}
