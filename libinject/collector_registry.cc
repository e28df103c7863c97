// The explicit list behind Collectors() (collector_registry.h).
#include "libinject/collector_registry.h"

#include "collectors/pc_sampling/cupti_pc_sampling.h"
#include "collectors/pm_sampling/cupti_pm_sampling.h"
#include "proto/common/settings.h"

namespace warpscope {

std::span<const CollectorRegistration> Collectors() {
  static constexpr CollectorRegistration kCollectors[] = {
      {"pm_sampling", Setting(SettingId::kPmSampling).variable.data(), &MakePmSamplingCollector},
      // PC sampling needs kernel records on before it starts (collector_interface.h).
      {"pc_sampling", Setting(SettingId::kPcSampling).variable.data(), &MakePcSamplingCollector,
       /*kernel_records_throughout=*/true},
  };
  return kCollectors;
}

}  // namespace warpscope
