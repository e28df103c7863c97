// External merge sort of keyed records (spill_sort.h).
#include "analyzers/analyses/export/spill_sort.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
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

// The records of some runs in key order, the smallest first; of equal keys, the earlier run's
// (added first). A run's next record is read only when the one handed out before is done with.
class SpillSorter::Cursor {
 public:
  absl::Status Start(const std::vector<Run>& runs, size_t first, size_t end) {
    readers_.resize(end - first);
    for (size_t i = 0; i < readers_.size(); ++i) {
      std::rewind(runs[first + i].file);
      readers_[i].file = runs[first + i].file;
      if (absl::Status s = Advance(i); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Next(Key* key, std::string_view* bytes) {
    if (taken_.has_value()) {
      if (absl::Status s = Advance(*taken_); !s.ok()) return s;
      taken_.reset();
    }
    if (next_.empty()) return false;
    taken_ = next_.top();
    next_.pop();
    *key = readers_[*taken_].key;
    *bytes = readers_[*taken_].bytes;
    return true;
  }

 private:
  absl::Status Advance(size_t i) {
    absl::StatusOr<bool> more = readers_[i].Next();
    if (!more.ok()) return more.status();
    if (*more) next_.push(i);
    return absl::OkStatus();
  }
  struct Later {
    const std::vector<RunReader>* readers;
    bool operator()(size_t a, size_t b) const {
      const Key& ka = (*readers)[a].key;
      const Key& kb = (*readers)[b].key;
      if (ka != kb) return kb < ka;
      return b < a;
    }
  };
  std::vector<RunReader> readers_;
  std::priority_queue<size_t, std::vector<size_t>, Later> next_{Later{&readers_}};
  std::optional<size_t> taken_;
};

SpillSorter::SpillSorter(size_t budget_bytes) : budget_bytes_(budget_bytes) {}

SpillSorter::~SpillSorter() { Clear(); }

void SpillSorter::Clear() {
  cursor_.reset();
  next_held_ = 0;
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
  absl::Status status = StartReading();
  Key key{};
  std::string_view bytes;
  while (status.ok()) {
    absl::StatusOr<bool> more = Next(&key, &bytes);
    if (!more.ok()) status = more.status();
    if (!more.ok() || !*more) break;
    visit(key, bytes);
  }
  Clear();
  return status;
}

absl::Status SpillSorter::StartReading() {
  next_held_ = 0;
  if (runs_.empty()) {
    SortHeld();
    return absl::OkStatus();
  }
  if (!held_.empty()) {
    if (absl::Status s = Spill(); !s.ok()) return s;
  }
  std::string().swap(bytes_);  // spilled: its room is not needed while the runs are read
  std::vector<Held>().swap(held_);
  cursor_ = std::make_unique<Cursor>();
  return cursor_->Start(runs_, 0, runs_.size());
}

absl::StatusOr<bool> SpillSorter::Next(Key* key, std::string_view* bytes) {
  if (cursor_ == nullptr) {
    if (next_held_ == held_.size()) {
      Clear();
      return false;
    }
    const Held& h = held_[next_held_++];
    *key = h.key;
    *bytes = std::string_view(bytes_).substr(h.offset, h.size);
    return true;
  }
  absl::StatusOr<bool> more = cursor_->Next(key, bytes);
  if (!more.ok() || !*more) Clear();
  return more;
}

absl::Status SpillSorter::Merge(size_t first, size_t end,
                                const std::function<void(const Key&, std::string_view)>& visit) {
  Cursor cursor;
  if (absl::Status s = cursor.Start(runs_, first, end); !s.ok()) return s;
  Key key{};
  std::string_view bytes;
  while (true) {
    absl::StatusOr<bool> more = cursor.Next(&key, &bytes);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    visit(key, bytes);
  }
}

}  // namespace warpscope
