// The explicit list behind Collectors() (collector_registry.h).
#include "libinject/collector_registry.h"

#include "collectors/pc_sampling/cupti_pc_sampling.h"
#include "collectors/pm_sampling/cupti_pm_sampling.h"

namespace warpscope {

std::span<const CollectorRegistration> Collectors() {
  static constexpr CollectorRegistration kCollectors[] = {
      {"pm_sampling", "WARPSCOPE_PM_SAMPLING", &MakePmSamplingCollector},
      // PC sampling needs kernel records on before it starts (collector_interface.h).
      {"pc_sampling", "WARPSCOPE_PC_SAMPLING", &MakePcSamplingCollector,
       /*kernel_records_throughout=*/true},
  };
  return kCollectors;
}

}  // namespace warpscope
