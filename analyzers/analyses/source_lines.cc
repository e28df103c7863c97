// MapPcsToSource: the child process answers, per PC in order, one status byte (0 a line, 1 no
// line info, 2 refused), and for 0 the line (uint32), the path's length (uint32) and the path;
// at the end the first refusal's length and text.
#include "analyzers/analyses/source_lines.h"

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

bool Take(const std::string& bytes, size_t* offset, void* data, size_t size) {
  if (bytes.size() - *offset < size) return false;
  std::memcpy(data, bytes.data() + *offset, size);
  *offset += size;
  return true;
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
  std::string message;
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
    message.assign(1, static_cast<char>(status));
    if (status == kLine) {
      const std::string path = JoinSourcePath(found.dir, found.file);
      const uint32_t length = static_cast<uint32_t>(path.size());
      message.append(reinterpret_cast<const char*>(&found.line), sizeof found.line);
      message.append(reinterpret_cast<const char*>(&length), sizeof length);
      message += path;
    }
    if (!WriteAll(fd, message.data(), message.size())) _exit(3);
  }
  const uint32_t length = static_cast<uint32_t>(first_problem.size());
  WriteAll(fd, &length, sizeof length);
  WriteAll(fd, first_problem.data(), length);
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
    if (!Take(child.bytes, &offset, &status, 1)) break;
    if (status == kLine) {
      uint32_t line = 0, length = 0;
      if (!Take(child.bytes, &offset, &line, sizeof line) ||
          !Take(child.bytes, &offset, &length, sizeof length) ||
          child.bytes.size() - offset < length) {
        break;
      }
      out.lines[*lookups[done].first] = {child.bytes.substr(offset, length), line};
      offset += length;
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
  uint32_t length = 0;
  if (Take(child.bytes, &offset, &length, sizeof length) && length < (1u << 16) &&
      child.bytes.size() - offset >= length) {
    out.problem = child.bytes.substr(offset, length);
  }
  return out;
}

}  // namespace warpscope
