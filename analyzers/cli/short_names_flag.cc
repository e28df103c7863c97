// --short-names, the one flag every command that prints kernel names shares (commands.h).
#include <string_view>
#include <vector>

#include "analyzers/cli/commands.h"

namespace warpscope {

FlagSpec ShortNamesFlag() {
  return {"short-names",
          "",
          false,
          "",
          "kernel names short; template arguments where two would read alike (docs/cli.md)",
          ""};
}

KernelNames KernelNamesOfFlag(const FlagSet& flags, const std::vector<const TraceModel*>& models,
                              const std::vector<std::string_view>& more) {
  if (!flags.Has("short-names")) return KernelNames();
  std::vector<std::string_view> names = more;
  for (const TraceModel* model : models) {
    for (std::string_view name : KernelDisplayNames(*model)) names.push_back(name);
  }
  return KernelNames::Short(names);
}

}  // namespace warpscope
