// Maps the PCs of PC samples to source lines: PC -> (cubin, function, offset) -> file:line,
// with CUPTI's SASS-to-source correlation over the cubins stored in the trace (CubinImage).
// Cubins built with -lineinfo (or -G) have a line table; without one a PC keeps its offset.
// CUPTI parses the cubin it is given and trusts it, so the lookups run in a child process
// (child_process.h): a corrupt cubin costs its source lines, never the analysis.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_SOURCE_LINES_H_
#define WARPSCOPE_ANALYZERS_MEASURES_SOURCE_LINES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/model/cupti_host.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// One instruction of one function of one cubin.
struct PcKey {
  uint64_t cubin_crc = 0;
  std::string function;  // mangled, as in the PC records
  uint64_t pc_offset = 0;
  auto operator<=>(const PcKey&) const = default;
};

struct SourceLocation {
  std::string path;   // the source file, joined to its compile directory when relative
  uint32_t line = 0;  // >= 1
};

// Looks one PC up in its cubin: CuptiSassToSource in production, a fake in tests.
using SassLocator = std::function<absl::StatusOr<SassSourceLine>(
    std::span<const uint8_t> cubin, const std::string& function, uint64_t pc_offset)>;

struct SourceMapping {
  std::map<PcKey, SourceLocation> lines;  // the PCs that have a source line
  uint64_t pcs = 0;                       // looked up
  uint64_t without_cubin = 0;             // their cubin is not in any trace (or not an ELF image)
  uint64_t without_line_info = 0;  // the cubin has no line for them (built without -lineinfo)
  uint64_t failed = 0;             // CUPTI refused them, or the lookup process died first
  std::string problem;             // the first reason for `failed`, in words
};

// Looks up every PC in `pcs` in the cubins of `traces` (the first trace that has a cubin's
// CRC gives it). Runs `locator` in a child process.
SourceMapping MapPcsToSource(const std::vector<const TraceModel*>& traces,
                             const std::vector<PcKey>& pcs,
                             const SassLocator& locator = CuptiSassToSource);

// "dir/file" for a relative `file`, `file` as it is when absolute or `dir` is empty.
std::string JoinSourcePath(const std::string& dir, const std::string& file);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_SOURCE_LINES_H_
