// Dispatch of a setting's value to its owner's parser (see setting_check.h).
#include "analyzers/launcher/setting_check.h"

#include <string>

#include "collectors/pc_sampling/pc_sampling_config.h"
#include "collectors/pm_sampling/pm_sampling_config.h"
#include "collectors/stacks/stack_config.h"
#include "libinject/config.h"
#include "proto/settings/setting_values.h"

namespace warpscope {

std::optional<SettingError> CheckSettingValue(const SettingSpec& spec, std::string_view value) {
  std::string problem;
  bool ok = true;
  switch (spec.owner) {
    case SettingOwner::kLibrary: {
      Config scratch;
      ok = ApplyLibrarySetting(spec, value, &scratch, &problem);
      break;
    }
    case SettingOwner::kPmSampling: {
      PmSamplingConfig scratch;
      ok = ApplyPmSamplingSetting(spec, value, &scratch, &problem);
      break;
    }
    case SettingOwner::kPcSampling: {
      PcSamplingConfig scratch;
      ok = ApplyPcSamplingSetting(spec, value, &scratch, &problem);
      break;
    }
    case SettingOwner::kStacks: {
      StackConfig scratch;
      ok = ApplyStackSetting(spec, value, &scratch, &problem);
      break;
    }
    case SettingOwner::kCollectors: {
      // The session's collector registry reads the switches with the library's ParseBool.
      bool on = false;
      std::string what;
      ok = ParseBool(value, &on, &what);
      problem = " is not " + what;
      break;
    }
    case SettingOwner::kShim:
    case SettingOwner::kLauncher:
    case SettingOwner::kAnalyzers:
      if (spec.parser == SettingParser::kWholeNumber) {
        uint64_t n = 0;
        ok = ParseWholeNumber(value, spec.min, spec.max, &n);
      } else if (spec.parser == SettingParser::kBool) {
        bool on = false;
        ok = ParseBoolSetting(value, &on);
      }
      problem = std::string(spec.refusal);
      break;
  }
  if (ok) return std::nullopt;
  return SettingError{std::string(spec.variable), std::string(value), problem};
}

}  // namespace warpscope
