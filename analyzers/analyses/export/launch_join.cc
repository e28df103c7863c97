// Launches joined to their GPU work by correlation id through temporary files (launch_join.h).
#include "analyzers/analyses/export/launch_join.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "analyzers/measures/launch_times.h"

namespace warpscope {
namespace {

// The records' values: plain structs, copied as bytes.
template <typename T>
std::string_view Bytes(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(&value), sizeof(T)};
}
template <typename T>
T From(std::string_view bytes) {
  T value{};
  std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof(T)));
  return value;
}

// by_correlation_: {correlation id, kStack, its place, 0} with the stack's id, {correlation id,
// kApi, 0 for a runtime call else 1, its place} or {correlation id, kWork, its place, 0}: per
// id, its stacks (the first in the file first), its calls (the launch first), then its work.
constexpr uint64_t kStack = 0;
constexpr uint64_t kApi = 1;
constexpr uint64_t kWork = 2;
struct CallValue {
  uint64_t start_ns = 0;
  uint64_t thread_id = 0;
};
struct WorkValue {
  uint64_t start_ns = 0;
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
  uint32_t kernel = 0;  // placing a stand-in goes by kernels alone (launch_times.h)
};
// by_stream_: {device << 32 | stream, start, kKnown, launch} for a kernel whose launch is known
// (of those starting together, the latest launch last, as launch_times.h takes it), or
// {device << 32 | stream, start, kUnknown, place} with the work's correlation id.
constexpr uint64_t kKnown = 0;
constexpr uint64_t kUnknown = 1;
// placed_: {correlation id, placed time, place, 0}.
struct PlacedValue {
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
  uint32_t at_start = 0;
};

uint64_t StreamKey(uint32_t device_id, uint32_t stream_id) {
  return uint64_t{device_id} << 32 | stream_id;
}

}  // namespace

LaunchJoin::LaunchJoin(const Options& options)
    : options_(options),
      by_correlation_(options.budget_bytes),
      inside_(options.budget_bytes),
      stacks_(options.budget_bytes),
      launches_(options.budget_bytes),
      by_stream_(options.budget_bytes),
      placed_(options.budget_bytes),
      stand_ins_(options.budget_bytes) {}

absl::StatusOr<std::unique_ptr<LaunchJoin>> LaunchJoin::Of(const TraceModel& model,
                                                           const Options& options) {
  std::unique_ptr<LaunchJoin> join(new LaunchJoin(options));
  if (absl::Status s = join->Read(model); !s.ok()) return s;
  if (absl::Status s = join->Join(); !s.ok()) return s;
  if (options.stand_ins) {
    if (absl::Status s = join->PlaceStandIns(); !s.ok()) return s;
    if (absl::Status s = join->GroupStandIns(); !s.ok()) return s;
  }
  return join;
}

absl::Status LaunchJoin::Read(const TraceModel& model) {
  uint32_t index = 0;
  absl::Status added;
  auto keep = [&](absl::Status s) {
    if (added.ok()) added = std::move(s);
  };
  uint64_t stack_index = 0;
  // Every stack record: one recorded as a call began before the slice still belongs to it.
  absl::Status read = ForEachEvent<ApiStack>(
      model,
      [&](const ApiStack& a) {
        keep(by_correlation_.Add({a.correlation_id, kStack, stack_index++, 0}, Bytes(a.stack_id)));
      },
      /*whole_file=*/true);
  if (!read.ok()) return read;
  read = ForEachEvent<ApiCallEvent>(model, [&](const ApiCallEvent& call) {
    if (call.correlation_id != 0) {
      const uint64_t driver = call.domain == v1::API_DOMAIN_RUNTIME ? 0 : 1;
      keep(by_correlation_.Add({call.correlation_id, kApi, driver, index},
                               Bytes(CallValue{call.start_ns, call.thread_id})));
    }
    ++index;
  });
  uint64_t seq = 0;
  auto work = [&](const StreamWork& w, bool kernel) {
    keep(by_correlation_.Add(
        {w.correlation_id, kWork, seq++, 0},
        Bytes(WorkValue{w.start_ns, w.device_id, w.stream_id, kernel ? 1u : 0u})));
  };
  if (read.ok()) {
    read = ForEachEvent<KernelEvent>(model, [&](const KernelEvent& k) { work(k, true); });
  }
  if (read.ok()) {
    read = ForEachEvent<MemcpyEvent>(model, [&](const MemcpyEvent& c) { work(c, false); });
  }
  if (read.ok()) {
    read = ForEachEvent<MemsetEvent>(model, [&](const MemsetEvent& s) { work(s, false); });
  }
  return read.ok() ? added : read;
}

// Per correlation id: its launch, the calls beneath a runtime call, its work's launch (or, for
// work with none, its place among the work of its stream, to be given a stand-in).
absl::Status LaunchJoin::Join() {
  std::optional<uint64_t> group;
  std::optional<LaunchOf> launch;  // of the current correlation id
  std::optional<uint64_t> stack;   // its first stack's id
  bool runtime = false;
  absl::Status added;
  auto keep = [&](absl::Status s) {
    if (added.ok()) added = std::move(s);
  };
  absl::Status drained = by_correlation_.Drain([&](const SpillSorter::Key& key,
                                                   std::string_view bytes) {
    const auto correlation_id = static_cast<uint32_t>(key[0]);
    if (group != key[0]) {
      group = key[0];
      launch.reset();
      stack.reset();
      if (options_.nccl_launches != nullptr) {
        auto it = options_.nccl_launches->find(correlation_id);
        if (it != options_.nccl_launches->end()) {
          launch = LaunchOf{LaunchOf::kNcclCall, 0, 0, 0, it->second->thread_id,
                            it->second->start_ns};
        }
      }
    }
    if (key[1] == kStack) {
      if (!stack.has_value()) stack = From<uint64_t>(bytes);
      return;
    }
    if (key[1] == kApi) {
      if (stack.has_value()) keep(stacks_.sorter.Add({key[3], 0, 0, 0}, Bytes(*stack)));
      const CallValue call = From<CallValue>(bytes);
      if (!launch.has_value() || launch->kind != LaunchOf::kApiCall) {
        if (launch.has_value()) nccl_with_calls_.insert(correlation_id);
        launch = LaunchOf{LaunchOf::kApiCall, 0, 0, static_cast<uint32_t>(key[3]),
                          call.thread_id, call.start_ns};
        runtime = key[2] == 0;
      } else if (runtime && key[2] != 0) {
        keep(inside_.sorter.Add({key[3], 0, 0, 0}, {}));
      }
      return;
    }
    const WorkValue work = From<WorkValue>(bytes);
    const uint64_t stream = StreamKey(work.device_id, work.stream_id);
    if (launch.has_value()) {
      keep(launches_.sorter.Add({key[2], 0, 0, 0}, Bytes(*launch)));
      if (options_.stand_ins && work.kernel != 0) {
        keep(by_stream_.Add({stream, work.start_ns, kKnown, launch->ns}, {}));
      }
    } else if (options_.stand_ins) {
      keep(by_stream_.Add({stream, work.start_ns, kUnknown, key[2]}, Bytes(correlation_id)));
    }
  });
  return drained.ok() ? added : drained;
}

// launch_times.h's rule, stream by stream in order of start: the launch of the latest kernel
// before the work whose launch is known, else the work's own start.
absl::Status LaunchJoin::PlaceStandIns() {
  std::optional<uint64_t> stream;
  StreamLaunchPlacer placer;
  absl::Status added;
  absl::Status drained = by_stream_.Drain([&](const SpillSorter::Key& key,
                                              std::string_view bytes) {
    if (stream != key[0]) {
      stream = key[0];
      placer = StreamLaunchPlacer();
    }
    if (key[2] == kKnown) {
      placer.Known(key[3]);
      return;
    }
    const PlacedLaunch placed = placer.Place(key[1]);
    const PlacedValue value{static_cast<uint32_t>(key[0] >> 32),
                            static_cast<uint32_t>(key[0] & 0xffffffffu), placed.at_start ? 1u : 0u};
    absl::Status s =
        placed_.Add({From<uint32_t>(bytes), placed.ns, key[3], 0}, Bytes(value));
    if (added.ok()) added = std::move(s);
  });
  return drained.ok() ? added : drained;
}

// One stand-in per correlation id, the earliest placed, and the launch of each work of that id.
absl::Status LaunchJoin::GroupStandIns() {
  std::optional<uint64_t> group;
  LaunchOf launch;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  absl::Status added;
  auto keep = [&](absl::Status s) {
    if (added.ok()) added = std::move(s);
  };
  absl::Status drained = placed_.Drain([&](const SpillSorter::Key& key, std::string_view bytes) {
    if (group != key[0]) {
      group = key[0];
      const PlacedValue placed = From<PlacedValue>(bytes);
      launch = LaunchOf{LaunchOf::kStandIn, placed.device_id, placed.stream_id, 0, 0, key[1]};
      streams.emplace(placed.device_id, placed.stream_id);
      const StandInLaunch stand_in{static_cast<uint32_t>(key[0]), placed.device_id,
                                   placed.stream_id, placed.at_start != 0, key[1]};
      keep(stand_ins_.Add({key[0], 0, 0, 0}, Bytes(stand_in)));
    }
    keep(launches_.sorter.Add({key[2], 0, 0, 0}, Bytes(launch)));
  });
  stand_in_streams_.assign(streams.begin(), streams.end());
  return drained.ok() ? added : drained;
}

absl::Status LaunchJoin::ForEachStandIn(const std::function<void(const StandInLaunch&)>& visit) {
  stand_ins_done_ = true;
  return stand_ins_.Drain([&](const SpillSorter::Key&, std::string_view bytes) {
    visit(From<StandInLaunch>(bytes));
  });
}

bool LaunchJoin::Seek(Reader& r, uint64_t at, std::string_view* bytes) {
  if (!r.started) {
    r.started = true;
    absl::Status s = r.sorter.StartReading();
    r.done = !s.ok();
    Keep(std::move(s));
  }
  while (!r.done) {
    if (!r.has) {
      absl::StatusOr<bool> more = r.sorter.Next(&r.key, &r.bytes);
      if (!more.ok()) Keep(more.status());
      r.done = !more.ok() || !*more;
      r.has = !r.done;
      continue;
    }
    if (r.key[0] > at) return false;
    r.has = false;
    if (r.key[0] == at) {
      *bytes = r.bytes;
      return true;
    }
  }
  return false;
}

std::optional<uint64_t> LaunchJoin::StackOf(uint32_t api_index) {
  std::string_view bytes;
  if (!Seek(stacks_, api_index, &bytes)) return std::nullopt;
  return From<uint64_t>(bytes);
}

bool LaunchJoin::InsideRuntimeCall(uint32_t api_index) {
  std::string_view bytes;
  return Seek(inside_, api_index, &bytes);
}

LaunchOf LaunchJoin::Launch(uint64_t seq) {
  if (options_.stand_ins && !stand_ins_done_) {
    Keep(ForEachStandIn([](const StandInLaunch&) {}));
  }
  std::string_view bytes;
  if (!Seek(launches_, seq, &bytes)) return LaunchOf{};
  return From<LaunchOf>(bytes);
}

}  // namespace warpscope
