// KernelNameFilter implementation over RE2 (see kernel_name_filter.h).
#include "analyzers/measures/kernel_name_filter.h"

#include <re2/re2.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

absl::StatusOr<KernelNameFilter> KernelNameFilter::Create(std::string_view pattern) {
  KernelNameFilter filter;
  if (pattern.empty()) return filter;
  RE2::Options options;
  // RE2 would print its complaint to stderr; it goes into the error message instead.
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kernel ", QuoteValue(pattern),
        " is not a valid regular expression (RE2 syntax, see docs/cli.md): ", re->error()));
  }
  filter.re_ = std::move(re);
  return filter;
}

KernelNameFilter::KernelNameFilter(KernelNameFilter&&) noexcept = default;
KernelNameFilter& KernelNameFilter::operator=(KernelNameFilter&&) noexcept = default;
KernelNameFilter::~KernelNameFilter() = default;

bool KernelNameFilter::Matches(std::string_view name) {
  if (re_ == nullptr) return true;
  auto [it, inserted] = seen_.try_emplace(name, false);
  if (inserted) {
    it->second = RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *re_);
  }
  return it->second;
}

}  // namespace warpscope
