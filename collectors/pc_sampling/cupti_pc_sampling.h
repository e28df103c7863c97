// CuptiPcSampling: the only code that calls CUPTI's PC sampling API (cupti_pcsampling.h).
// CUPTI types stay in the .cc. Not thread-safe: PcSamplingController serializes all calls.
#ifndef WARPSCOPE_COLLECTORS_PC_SAMPLING_CUPTI_PC_SAMPLING_H_
#define WARPSCOPE_COLLECTORS_PC_SAMPLING_CUPTI_PC_SAMPLING_H_

#include <map>
#include <string>
#include <memory>
#include <vector>

#include "collectors/collector_interface.h"
#include "collectors/pc_sampling/pc_sampling_api.h"

namespace warpscope {

class CuptiPcSampling final : public PcSamplingApi {
 public:
  CuptiPcSampling();
  ~CuptiPcSampling() override;

  WARPSCOPE_PC_SAMPLING_API_OVERRIDES;

  struct ContextBuffers;  // the CUpti_PCSamplingData of one context (defined in the .cc)

 private:
  // Claims the context's GPU for this process (see the .cc); kBusy when another holds it.
  PcResult ClaimDevice(PcContext ctx);

  std::map<PcContext, std::unique_ptr<ContextBuffers>> contexts_;
  std::map<std::string, int> claims_;  // PCI bus id -> socket held until the process ends
};

// The collector with CUPTI behind it, for the session's list of collectors
// (libinject/collector_registry.cc), switched on by WARPSCOPE_PC_SAMPLING.
std::unique_ptr<SessionListener> MakePcSamplingCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_PC_SAMPLING_CUPTI_PC_SAMPLING_H_
