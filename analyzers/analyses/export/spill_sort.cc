// External merge sort of keyed records (spill_sort.h).
#include "analyzers/analyses/export/spill_sort.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace warpscope {
namespace {

absl::Status RunError(std::string_view what) {
  return absl::InternalError(absl::StrCat(
      "cannot ", std::string(what), " a temporary file that sorts the trace's events (",
      std::strerror(errno), "); set TMPDIR to a directory with room"));
}

// A file in TMPDIR (else /tmp), unlinked at once: it goes when closed, however the run ends.
std::FILE* OpenRunFile() {
  const char* dir = std::getenv("TMPDIR");
  std::string path =
      absl::StrCat(dir != nullptr && *dir != '\0' ? dir : "/tmp", "/warpscope-sort-XXXXXX");
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return nullptr;
  ::unlink(path.c_str());
  std::FILE* f = ::fdopen(fd, "w+b");
  if (f == nullptr) ::close(fd);
  return f;
}

// One record appended to a run: its key, its size and its bytes.
bool WriteRecord(std::FILE* f, const SpillSorter::Key& key, std::string_view bytes) {
  const auto size = static_cast<uint32_t>(bytes.size());
  return std::fwrite(key.data(), sizeof(uint64_t), key.size(), f) == key.size() &&
         std::fwrite(&size, sizeof(size), 1, f) == 1 &&
         std::fwrite(bytes.data(), 1, size, f) == size;
}

// One run read back a record at a time.
struct RunReader {
  std::FILE* file = nullptr;
  SpillSorter::Key key{};
  std::string bytes;
  // False at the end of the run; an error when a record is cut short.
  absl::StatusOr<bool> Next() {
    uint32_t size = 0;
    if (std::fread(key.data(), sizeof(uint64_t), key.size(), file) != key.size()) {
      if (std::feof(file)) return false;
      return RunError("read");
    }
    if (std::fread(&size, sizeof(size), 1, file) != 1) return RunError("read");
    bytes.resize(size);
    if (size > 0 && std::fread(bytes.data(), 1, size, file) != size) return RunError("read");
    return true;
  }
};

}  // namespace

SpillSorter::~SpillSorter() { Clear(); }

void SpillSorter::Clear() {
  for (const Run& r : runs_) std::fclose(r.file);
  runs_.clear();
  std::string().swap(bytes_);
  std::vector<Held>().swap(held_);
}

absl::Status SpillSorter::Add(const Key& key, std::string_view bytes) {
  held_.push_back({key, bytes_.size(), static_cast<uint32_t>(bytes.size())});
  bytes_.append(bytes);
  if (bytes_.size() + held_.size() * sizeof(Held) >= budget_bytes_) return Spill();
  return absl::OkStatus();
}

void SpillSorter::SortHeld() {
  std::stable_sort(held_.begin(), held_.end(),
                   [](const Held& a, const Held& b) { return a.key < b.key; });
}

absl::Status SpillSorter::Spill() {
  SortHeld();
  std::FILE* f = OpenRunFile();
  if (f == nullptr) return RunError("create");
  runs_.push_back({f, 0});
  for (const Held& h : held_) {
    if (!WriteRecord(f, h.key, std::string_view(bytes_).substr(h.offset, h.size))) {
      return RunError("write");
    }
  }
  if (std::fflush(f) != 0) return RunError("write");
  bytes_.clear();
  held_.clear();
  return MergeFullLevels();
}

// While the last kFanIn runs share a level, merges them into one run of the next level. They
// are the latest runs, so the merged run keeps its place in the order of addition.
absl::Status SpillSorter::MergeFullLevels() {
  while (runs_.size() >= kFanIn) {
    const size_t first = runs_.size() - kFanIn;
    const int level = runs_.back().level;
    if (runs_[first].level != level) break;  // levels never rise towards the end
    std::FILE* out = OpenRunFile();
    if (out == nullptr) return RunError("create");
    bool written = true;
    absl::Status status = Merge(first, runs_.size(), [&](const Key& key, std::string_view b) {
      written = written && WriteRecord(out, key, b);
    });
    if (status.ok() && (!written || std::fflush(out) != 0)) status = RunError("write");
    for (size_t i = first; i < runs_.size(); ++i) std::fclose(runs_[i].file);
    runs_.resize(first);
    runs_.push_back({out, level + 1});
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status SpillSorter::Drain(const std::function<void(const Key&, std::string_view)>& visit) {
  absl::Status status;
  if (runs_.empty()) {
    SortHeld();
    for (const Held& h : held_) visit(h.key, std::string_view(bytes_).substr(h.offset, h.size));
  } else {
    if (!held_.empty()) status = Spill();
    if (status.ok()) status = Merge(0, runs_.size(), visit);
  }
  Clear();
  return status;
}

absl::Status SpillSorter::Merge(size_t first, size_t end,
                                const std::function<void(const Key&, std::string_view)>& visit) {
  std::vector<RunReader> readers(end - first);
  // The smallest key first; of equal keys, the earlier run's (added first).
  auto later = [&](size_t a, size_t b) {
    if (readers[a].key != readers[b].key) return readers[b].key < readers[a].key;
    return b < a;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> next(later);
  for (size_t i = 0; i < readers.size(); ++i) {
    std::rewind(runs_[first + i].file);
    readers[i].file = runs_[first + i].file;
    absl::StatusOr<bool> more = readers[i].Next();
    if (!more.ok()) return more.status();
    if (*more) next.push(i);
  }
  while (!next.empty()) {
    const size_t i = next.top();
    next.pop();
    visit(readers[i].key, readers[i].bytes);
    absl::StatusOr<bool> more = readers[i].Next();
    if (!more.ok()) return more.status();
    if (*more) next.push(i);
  }
  return absl::OkStatus();
}

}  // namespace warpscope
