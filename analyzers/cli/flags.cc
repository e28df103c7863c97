// Implementation of the shared subcommand flag parser (see flags.h).
#include "analyzers/cli/flags.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

FlagSet::FlagSet(std::string command, std::string usage_line, std::vector<FlagSpec> specs)
    : command_(std::move(command)), usage_line_(std::move(usage_line)), specs_(std::move(specs)) {}

const FlagSpec* FlagSet::Find(const std::string& name, bool is_short) const {
  for (const FlagSpec& spec : specs_) {
    if (is_short ? spec.short_name == name : spec.name == name) return &spec;
  }
  return nullptr;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args, bool stop_at_first_positional) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      rest_.assign(args.begin() + i + 1, args.end());
      return absl::OkStatus();
    }
    if (arg == "-h" || arg == "--help") {
      help_requested_ = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      if (stop_at_first_positional) {
        rest_.assign(args.begin() + i, args.end());
        return absl::OkStatus();
      }
      positionals_.push_back(arg);
      continue;
    }
    const bool is_long = arg[1] == '-';
    std::string name = is_long ? arg.substr(2) : arg.substr(1);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = Find(name, !is_long);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", QuoteValue(arg),
                                                     " for 'warpscope ", command_,
                                                     "' (see warpscope ", command_, " --help)"));
    }
    if (!spec->takes_value) {
      // As in Nsight Systems, a switch may be followed by true or false (`-f true`, `-f=false`):
      // the word is the switch's value, not a positional (not the program `record` runs).
      std::string value = "true";
      if (inline_value.has_value()) {
        if (*inline_value != "true" && *inline_value != "false") {
          return absl::InvalidArgumentError(
              absl::StrCat("flag --", spec->name, " is a switch: give it alone, or true or false "
                           "(got ", QuoteValue(*inline_value), ")"));
        }
        value = *inline_value;
      } else if (i + 1 < args.size() && (args[i + 1] == "true" || args[i + 1] == "false")) {
        value = args[++i];
      }
      if (value == "true") {
        values_[spec->name] = value;
      } else {
        values_.erase(spec->name);
      }
      continue;
    }
    if (inline_value.has_value()) {
      values_[spec->name] = *inline_value;
    } else if (i + 1 < args.size()) {
      values_[spec->name] = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " needs a value (",
                                                     spec->value_name.empty() ? "VALUE"
                                                                              : spec->value_name,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

bool FlagSet::Has(const std::string& name) const { return values_.count(name) > 0; }

std::string FlagSet::Get(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  const FlagSpec* spec = Find(name, false);
  return spec != nullptr ? spec->default_value : std::string();
}

absl::StatusOr<int64_t> FlagSet::GetInt(const std::string& name) const {
  const std::string value = Get(name);
  int64_t out = 0;
  if (!absl::SimpleAtoi(value, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --", name, " expects a whole number, got ", QuoteValue(value)));
  }
  return out;
}

absl::StatusOr<double> FlagSet::GetDouble(const std::string& name) const {
  const std::string value = Get(name);
  double out = 0;
  if (!absl::SimpleAtod(value, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --", name, " expects a number, got ", QuoteValue(value)));
  }
  return out;
}

absl::StatusOr<std::string> FlagSet::GetChoice(const std::string& name,
                                               const std::vector<std::string>& choices) const {
  const std::string value = Get(name);
  for (const std::string& choice : choices) {
    if (choice == value) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat("flag --", name, " must be one of ",
                                                 absl::StrJoin(choices, "|"), ", got ",
                                                 QuoteValue(value)));
}

std::string FlagSet::HelpText() const {
  std::string out = absl::StrCat("usage: warpscope ", command_, " ", usage_line_, "\n");
  if (!specs_.empty()) absl::StrAppend(&out, "\nflags:\n");
  for (const FlagSpec& spec : specs_) {
    std::string left = spec.short_name.empty() ? "    " : absl::StrCat("-", spec.short_name, ", ");
    absl::StrAppend(&left, "--", spec.name);
    if (spec.takes_value) absl::StrAppend(&left, " ", spec.value_name.empty() ? "VALUE" : spec.value_name);
    if (!spec.takes_value) absl::StrAppend(&left, " [true|false]");
    if (left.size() < 30) left.resize(30, ' ');
    absl::StrAppend(&out, "  ", left, " ", spec.help);
    if (spec.takes_value && !spec.default_value.empty()) {
      absl::StrAppend(&out, " (default: ", spec.default_value, ")");
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace warpscope
