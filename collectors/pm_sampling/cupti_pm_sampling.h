// CuptiPmSampling: the only code that calls CUPTI's PM sampling and profiler host APIs
// (cupti_pmsampling.h, cupti_profiler_host.h, cupti_target.h). CUPTI types stay in the .cc.
#ifndef WARPSCOPE_COLLECTORS_PM_SAMPLING_CUPTI_PM_SAMPLING_H_
#define WARPSCOPE_COLLECTORS_PM_SAMPLING_CUPTI_PM_SAMPLING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "collectors/collector_interface.h"
#include "collectors/pm_sampling/pm_sampling_api.h"

namespace warpscope {

class CuptiPmSampling final : public PmSamplingApi {
 public:
  CuptiPmSampling();
  ~CuptiPmSampling() override;

  PmResult Initialize() override;
  PmResult PrepareDevice(const PmDeviceSettings& settings, std::string* chip_name,
                         std::string* counter_availability, size_t* num_passes) override;
  PmResult EnableDevice(uint32_t device_index) override;
  PmResult Start(uint32_t device_index) override;
  PmResult Stop(uint32_t device_index) override;
  PmResult Decode(uint32_t device_index, const PmSampleVisitor& visitor,
                  const PmImageVisitor& image_visitor, bool flush,
                  PmDecodeResult* result) override;
  void DisableDevice(uint32_t device_index) override;
  void Deinitialize() override;

  struct DeviceState;  // CUPTI objects and images of one device (defined in the .cc)

 private:
  std::map<uint32_t, std::unique_ptr<DeviceState>> devices_;
};

// The collector with CUPTI behind it, for the session's list of collectors
// (libinject/collector_registry.cc), switched on by WARPSCOPE_PM_SAMPLING.
std::unique_ptr<SessionListener> MakePmSamplingCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PM_SAMPLING_CUPTI_PM_SAMPLING_H_
