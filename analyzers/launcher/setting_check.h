// One value of any WARPSCOPE_* setting checked with the parser of the layer that reads it
// (libinject/config.h, the PM and PC sampling collectors' configs), so that what `warpscope
// record` accepts is what the library accepts.
#ifndef WARPSCOPE_ANALYZERS_LAUNCHER_SETTING_CHECK_H_
#define WARPSCOPE_ANALYZERS_LAUNCHER_SETTING_CHECK_H_

#include <optional>
#include <string_view>

#include "proto/settings/setting_error.h"
#include "proto/settings/settings.h"

namespace warpscope {

// The refusal of `value` for `spec` (its variable, the value, what is wrong), or nullopt when
// the owner's parser accepts it. Rows the launcher cannot check (kText) are accepted.
std::optional<SettingError> CheckSettingValue(const SettingSpec& spec, std::string_view value);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_LAUNCHER_SETTING_CHECK_H_
