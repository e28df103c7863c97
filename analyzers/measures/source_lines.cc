// MapPcsToSource: the child process answers, per PC in order, one status byte (0 a line, 1 no
// line info, 2 refused), and for 0 the line (uint32), the path's length (uint32) and the path;
// at the end the first refusal's length and text.
#include "analyzers/measures/source_lines.h"

#include <unistd.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "analyzers/model/child_process.h"

namespace warpscope {
namespace {

constexpr uint8_t kLine = 0, kNoLineInfo = 1, kRefused = 2;

bool IsElf(const std::string& image) {
  return image.size() >= 64 && image.starts_with(
                                   "\x7f"
                                   "ELF");
}


}  // namespace

std::string JoinSourcePath(const std::string& dir, const std::string& file) {
  if (dir.empty() || file.starts_with('/')) return file;
  return dir.ends_with('/') ? dir + file : absl::StrCat(dir, "/", file);
}

namespace {

// A PC to look up, with the cubin it is in.
using PcLookup = std::pair<const PcKey*, const std::string*>;

// Runs in the child process: looks up every PC and writes the answers (see the top).
void LocateAll(const std::vector<PcLookup>& lookups, const SassLocator& locator, int fd) {
  std::string first_problem;
  for (const auto& [pc_ptr, cubin] : lookups) {
    const PcKey& pc = *pc_ptr;
    uint8_t status = kRefused;
    SassSourceLine found;
    absl::StatusOr<SassSourceLine> located = locator(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(cubin->data()), cubin->size()),
        pc.function, pc.pc_offset);
    if (!located.ok()) {
      if (first_problem.empty()) first_problem = std::string(located.status().message());
    } else if (located->line == 0 || located->file.empty()) {
      status = kNoLineInfo;
    } else {
      status = kLine;
      found = *std::move(located);
    }
    if (!WriteAll(fd, &status, 1)) _exit(3);
    if (status == kLine) {
      if (!WriteAll(fd, &found.line, sizeof found.line)) _exit(3);
      WriteText(fd, JoinSourcePath(found.dir, found.file));
    }
  }
  WriteText(fd, first_problem);
}

}  // namespace

SourceMapping MapPcsToSource(const std::vector<const TraceModel*>& traces,
                             const std::vector<PcKey>& pcs, const SassLocator& locator) {
  SourceMapping out;
  out.pcs = pcs.size();
  // The PCs whose cubin is in a trace, with it; the others are counted here, and when no PC
  // has a cubin no child process is needed.
  std::vector<PcLookup> lookups;
  for (const PcKey& pc : pcs) {
    const std::string* cubin = nullptr;
    for (const TraceModel* model : traces) {
      if ((cubin = model->FindCubin(pc.cubin_crc)) != nullptr) break;
    }
    if (cubin != nullptr && IsElf(*cubin)) {
      lookups.emplace_back(&pc, cubin);
    } else {
      ++out.without_cubin;
    }
  }
  if (lookups.empty()) return out;
  const ChildOutput child = RunInChildProcess([&](int fd) { LocateAll(lookups, locator, fd); });

  size_t offset = 0;
  size_t done = 0;
  for (; done < lookups.size(); ++done) {
    uint8_t status = 0;
    if (!TakeBytes(child.bytes, &offset, &status, 1)) break;
    if (status == kLine) {
      uint32_t line = 0;
      if (!TakeBytes(child.bytes, &offset, &line, sizeof line)) break;
      std::string path = TakeText(child.bytes, &offset);
      if (path.empty()) break;  // the output ended inside it
      out.lines[*lookups[done].first] = {std::move(path), line};
    } else if (status == kNoLineInfo) {
      ++out.without_line_info;
    } else {
      ++out.failed;
    }
  }
  if (done < lookups.size()) {
    out.failed += lookups.size() - done;
    out.problem = child.completed ? "the source line lookup ended early"
                                  : absl::StrCat("the source line lookup ", child.failure,
                                                 child.failure.starts_with("crashed")
                                                     ? ": a cubin in the trace is corrupt"
                                                     : "");
    return out;
  }
  out.problem = TakeText(child.bytes, &offset);
  return out;
}

}  // namespace warpscope
