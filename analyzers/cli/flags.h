// Command-line flag parsing shared by every `warpscope` subcommand: GNU-style long flags
// (--name value, --name=value), short aliases (-o value), boolean switches (alone, or followed
// by true or false as in Nsight Systems: `-f true`, `--quiet=false`), positionals and
// a `--` that ends flag parsing (everything after it is kept verbatim, for `record`).
#ifndef WARPSCOPE_ANALYZERS_CLI_FLAGS_H_
#define WARPSCOPE_ANALYZERS_CLI_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warpscope {

struct FlagSpec {
  std::string name;        // long name without dashes, e.g. "format"
  std::string short_name;  // one letter without dash, or empty
  bool takes_value = true;
  std::string value_name;  // shown in help, e.g. "FILE"
  std::string help;
  std::string default_value;  // shown in help; what Get() returns when the flag is absent
};

class FlagSet {
 public:
  FlagSet(std::string command, std::string usage_line, std::vector<FlagSpec> specs);

  // Parses args (without the program and command names). Stops flag parsing at the first
  // `--` or, when stop_at_first_positional is true, at the first positional (so `record
  // -o x ./app --app-flag` keeps `--app-flag` for the app). Unknown flags and missing values
  // are InvalidArgument errors whose message names the flag and points at --help.
  absl::Status Parse(const std::vector<std::string>& args, bool stop_at_first_positional = false);

  // Given on the command line; for a switch, given and not turned off (`--quiet false`).
  bool Has(const std::string& name) const;
  std::string Get(const std::string& name) const;  // value or default
  absl::StatusOr<int64_t> GetInt(const std::string& name) const;
  absl::StatusOr<double> GetDouble(const std::string& name) const;
  // Value that must be one of `choices`; error lists them.
  absl::StatusOr<std::string> GetChoice(const std::string& name,
                                        const std::vector<std::string>& choices) const;
  bool help_requested() const { return help_requested_; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after `--` (or the command)

  std::string HelpText() const;
  const std::string& command() const { return command_; }

 private:
  const FlagSpec* Find(const std::string& name, bool is_short) const;

  std::string command_;
  std::string usage_line_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
  std::vector<std::string> rest_;
  bool help_requested_ = false;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_CLI_FLAGS_H_
