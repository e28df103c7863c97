// The explicit list behind Collectors() (collector_registry.h). The order is the order of
// CUPTI calls at start and of every hook: the subscription first; the launch log before
// activity (launches are logged before kernel records go on); activity before the NVTX
// capture range (at a window's close, activity kinds go off before the range is written) and
// before the optional collectors (kernel records are on before PC sampling starts).
#include "libinject/collector_registry.h"

#include "collectors/activity/cupti_activity.h"
#include "collectors/api_calls/api_calls_collector.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "collectors/nccl/nccl_collector.h"
#include "collectors/nvtx/nvtx_capture_range.h"
#include "collectors/pc_sampling/cupti_pc_sampling.h"
#include "collectors/pm_sampling/cupti_pm_sampling.h"
#include "proto/settings/settings.h"

namespace warpscope {

std::span<const CollectorRegistration> Collectors() {
  static constexpr CollectorRegistration kCollectors[] = {
      {"callbacks", "", &MakeCallbackCollector, CollectorStage::kBeforeTrace},
      // Launch calls (trace kind `launch`) and call stacks (WARPSCOPE_STACKS); it never refuses
      // (a bad stack setting: no stacks). Before activity: it logs launches from before the
      // kinds go on at a window's opening, so that every recorded kernel has its launch.
      {"api_calls", "", &MakeApiCallsCollector, CollectorStage::kRequired},
      {"activity", "", &MakeActivityCollector, CollectorStage::kRequired},
      {"nvtx", "", &MakeNvtxCaptureRangeCollector, CollectorStage::kRequired},
      {"nccl", "", &MakeNcclCallCollector, CollectorStage::kRequired},
      {"pm_sampling", Setting(SettingId::kPmSampling).variable.data(), &MakePmSamplingCollector},
      // PC sampling needs kernel records on before it starts (collector_interface.h).
      {"pc_sampling", Setting(SettingId::kPcSampling).variable.data(), &MakePcSamplingCollector,
       CollectorStage::kOptional, /*kernel_records_throughout=*/true},
  };
  return kCollectors;
}

}  // namespace warpscope
