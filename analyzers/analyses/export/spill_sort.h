// Records sorted in bounded memory (an external merge sort), for the commands that need events
// in an order the file does not have (export_perfetto.cc; the exports' launch_join.cc; the PM
// sweep of occupancy, analyses/pm_sweep.cc): records are held until they reach a budget, then
// sorted and written to a temporary file as one run; Drain merges the runs. Runs are merged as
// they accumulate, kFanIn of one level into one of the next, so that at most about kFanIn open
// files per level are held (two levels for a 10 GB trace at a 16 MiB budget) and each record is
// written once per level. Memory: the budget, plus a record and stdio's buffer per run being
// merged. The records come back through a visitor (Drain) or one at a time (StartReading,
// Next), for a reader driven by another walk of the trace.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_SPILL_SORT_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_SPILL_SORT_H_

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warpscope {

class SpillSorter {
 public:
  // Compared field by field.
  using Key = std::array<uint64_t, 4>;
  // Runs of one level merged into one of the next once there are this many.
  static constexpr size_t kFanIn = 32;

  explicit SpillSorter(size_t budget_bytes);
  ~SpillSorter();
  SpillSorter(const SpillSorter&) = delete;
  SpillSorter& operator=(const SpillSorter&) = delete;

  // Errors: those of writing a run (the temporary directory full or not writable).
  absl::Status Add(const Key& key, std::string_view bytes);
  // Hands visit each record in key order, records with equal keys in the order added, and
  // empties the sorter. Errors: those of writing or reading a run.
  absl::Status Drain(const std::function<void(const Key&, std::string_view)>& visit);
  // The same order, a record at a time: StartReading once every record is in, then Next until
  // it gives false, which empties the sorter. `bytes` stays valid until the next call. Errors:
  // those of writing or reading a run.
  absl::Status StartReading();
  absl::StatusOr<bool> Next(Key* key, std::string_view* bytes);

 private:
  class Cursor;  // the records of some runs, merged in key order
  struct Held {
    Key key;
    size_t offset = 0;
    uint32_t size = 0;
  };
  struct Run {
    std::FILE* file = nullptr;
    int level = 0;  // 0: spilled from memory; L + 1: kFanIn runs of level L merged
  };
  void SortHeld();
  absl::Status Spill();
  absl::Status MergeFullLevels();
  // Visits the records of runs_[first, end) in key order, equal keys in the order added.
  absl::Status Merge(size_t first, size_t end,
                     const std::function<void(const Key&, std::string_view)>& visit);
  void Clear();

  const size_t budget_bytes_;
  std::string bytes_;
  std::vector<Held> held_;
  std::vector<Run> runs_;  // in the order added: levels never rise towards the end
  // While reading: the held records' next (when nothing spilled), else the merge of the runs.
  size_t next_held_ = 0;
  std::unique_ptr<Cursor> cursor_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_SPILL_SORT_H_
