// The launch of each piece of GPU work, for the flows the exports draw from a launch to its
// work, joined by correlation id in bounded memory. A launch and its work may come in either
// order in the file, so the API calls and the GPU work (kernels, copies, memsets) are read once
// more and put in correlation order through temporary files (spill_sort.h); what each export
// needs comes back in the order it writes the events: per API call in file order, its recorded
// stack and whether it is the driver call beneath a runtime call; per GPU work in file order,
// its launch. What is held is a few sorters' budgets (kJoinSortBudgetBytes each), not a table
// per call or kernel.
//
// The rules: the launch of a correlation id is its runtime call (the call the program made)
// rather than the driver call beneath it when both were traced, else its first call in the
// file; for Kineto (Options), an NCCL call stands for the launch of the kernel it made when no
// API call has that id, and GPU work whose launch is in no record gets a stand-in launch
// placed by launch_times.h's rule, one per correlation id (the earliest placed).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_LAUNCH_JOIN_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_LAUNCH_JOIN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/analyses/export/spill_sort.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// What each of the join's sorters holds before it writes a run to a temporary file.
inline constexpr size_t kJoinSortBudgetBytes = 8 << 20;

// Where a flow to GPU work starts.
struct LaunchOf {
  enum Kind : uint32_t { kNone = 0, kApiCall = 1, kNcclCall = 2, kStandIn = 3 };
  Kind kind = kNone;
  uint32_t device_id = 0;  // kStandIn: the stream of the stand-in's row
  uint32_t stream_id = 0;
  uint32_t api_index = 0;  // kApiCall: the call's place among the API calls, in file order
  uint64_t thread_id = 0;  // kApiCall, kNcclCall: the calling thread (warpscope's id)
  uint64_t ns = 0;         // the launch's time (trace time)
};

// A stand-in for a launch that no record of the trace holds (export_kineto.cc).
struct StandInLaunch {
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;  // where the work ran (the earliest placed, when several share it)
  uint32_t stream_id = 0;
  bool at_start = false;  // PlacedLaunch::at_start: no known launch before it on its stream
  uint64_t ns = 0;        // trace time
};

class LaunchJoin {
 public:
  struct Options {
    // NCCL calls by the correlation id of the kernel launch each made: the launch of that
    // kernel when no API call has its id.
    const std::unordered_map<uint32_t, const NcclCall*>* nccl_launches = nullptr;
    // Stand-ins for the launches of GPU work with neither (ForEachStandIn).
    bool stand_ins = false;
    // What each sorter holds before it writes a run (tests make runs with a small one).
    size_t budget_bytes = kJoinSortBudgetBytes;
  };

  // Reads the API calls and the GPU work of `model` once and joins them.
  static absl::StatusOr<std::unique_ptr<LaunchJoin>> Of(const TraceModel& model,
                                                        const Options& options);
  LaunchJoin(const LaunchJoin&) = delete;
  LaunchJoin& operator=(const LaunchJoin&) = delete;

  // Whether the API call at `api_index` (in file order) is a driver call made inside a runtime
  // call of the same correlation id. Asked in increasing order of `api_index`.
  bool InsideRuntimeCall(uint32_t api_index);
  // The id of the stack recorded for the API call at `api_index` (of several records of its
  // correlation id, the first in the file, as TraceModel::StackOfCall finds it); nullopt when
  // none. Asked in increasing order of `api_index`.
  std::optional<uint64_t> StackOf(uint32_t api_index);
  // Whether an API call has `correlation_id` (of a launch an NCCL call made).
  bool HasApiCall(uint32_t nccl_launch_correlation_id) const {
    return nccl_with_calls_.count(nccl_launch_correlation_id) != 0;
  }
  // The streams of the stand-ins, ordered: a row each.
  const std::vector<std::pair<uint32_t, uint32_t>>& stand_in_streams() const {
    return stand_in_streams_;
  }
  // The stand-ins by correlation id; at most once, before the first Launch.
  absl::Status ForEachStandIn(const std::function<void(const StandInLaunch&)>& visit);
  // The launch of the GPU work at `seq`: its place among the kernels, then copies, then
  // memsets, each in file order. Asked in increasing order of `seq`.
  LaunchOf Launch(uint64_t seq);
  // The first error of reading the temporary files back.
  const absl::Status& status() const { return status_; }

 private:
  explicit LaunchJoin(const Options& options);
  absl::Status Read(const TraceModel& model);
  absl::Status Join();
  absl::Status PlaceStandIns();
  absl::Status GroupStandIns();
  // A sorter read in the order of the first field of its keys, up to a place asked for.
  struct Reader {
    explicit Reader(size_t budget_bytes) : sorter(budget_bytes) {}
    SpillSorter sorter;
    bool started = false;
    bool done = false;
    bool has = false;  // a record read past the place asked for last
    SpillSorter::Key key{};
    std::string_view bytes;
  };
  // Reads `r` up to the record at `at`: whether there is one (its bytes into `bytes`).
  bool Seek(Reader& r, uint64_t at, std::string_view* bytes);
  void Keep(absl::Status s) {
    if (status_.ok() && !s.ok()) status_ = std::move(s);
  }

  const Options options_;
  SpillSorter by_correlation_;  // API calls and GPU work
  Reader inside_;               // driver calls inside runtime calls
  Reader stacks_;               // API calls' stacks
  Reader launches_;             // GPU work's launch, by its place
  SpillSorter by_stream_;       // kernels and work with no launch
  SpillSorter placed_;          // placed launches, by correlation id
  SpillSorter stand_ins_;       // one per correlation id
  std::set<uint32_t> nccl_with_calls_;
  std::vector<std::pair<uint32_t, uint32_t>> stand_in_streams_;
  bool stand_ins_done_ = false;
  absl::Status status_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_LAUNCH_JOIN_H_
