// Memory over time (memory_timeline.h): a replay of the memory events in time order that
// keeps the live blocks, each device's totals, its pools and its bytes by owner and call site.
#include "analyzers/measures/memory_timeline.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

namespace warpscope {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool Adds(v1::MemoryOperation op) {
  return op == v1::MEMORY_OPERATION_ALLOCATE || op == v1::MEMORY_OPERATION_MAP;
}
bool Removes(v1::MemoryOperation op) {
  return op == v1::MEMORY_OPERATION_RELEASE || op == v1::MEMORY_OPERATION_UNMAP;
}
bool IsMapping(v1::MemoryOperation op) {
  return op == v1::MEMORY_OPERATION_MAP || op == v1::MEMORY_OPERATION_UNMAP;
}

template <typename Key>
std::vector<std::pair<Key, uint64_t>> MostFirst(const std::map<Key, uint64_t>& bytes) {
  std::vector<std::pair<Key, uint64_t>> out;
  for (const auto& [key, value] : bytes) {
    if (value != 0) out.emplace_back(key, value);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

struct Pool {
  uint64_t reserved = 0;
  uint64_t used = 0;
};

using SiteKey = std::pair<uint64_t, std::string>;  // (stack id, owner)

// What one device holds at the replay's current instant.
struct DeviceState {
  uint64_t in_use = 0;
  uint64_t outside_pools = 0;
  uint64_t pools_reserved = 0;
  std::map<uint64_t, Pool> pools;
  std::map<v1::MemoryKind, uint64_t> by_kind;
  std::map<std::string, uint64_t> by_owner;
  std::map<SiteKey, uint64_t> by_site;
  uint64_t reserved() const { return outside_pools + pools_reserved; }
};

// The live blocks and each device's state, moved on one event at a time.
class MemoryReplay {
 public:
  MemoryReplay(const TraceModel& model, std::optional<uint32_t> device)
      : model_(model), device_(device) {}

  // Applies `e`; false when it is another device's (the filter) and was skipped.
  bool Apply(const MemoryEvent& e) {
    if (device_ && e.device_id != *device_) return false;
    DeviceState& d = devices_[e.device_id];
    if (e.pool_address != 0) SetPool(d, e);
    if (Adds(e.operation)) {
      if (!Shadows(d, e)) Add(d, e);
    } else if (Removes(e.operation)) {
      if (shadowed_.erase({e.device_id, e.address}) == 0) Remove(d, e);
    }
    return true;
  }

  std::map<uint32_t, DeviceState>& devices() { return devices_; }
  uint64_t unknown_releases() const { return unknown_releases_; }
  // The live blocks of one device.
  std::vector<MemoryBlock> Blocks(uint32_t device) const {
    std::vector<MemoryBlock> out;
    for (const auto& [key, block] : live_) {
      if (std::get<0>(key) == device) out.push_back(block);
    }
    return out;
  }
  uint64_t StackOf(uint32_t correlation_id) {
    if (correlation_id == 0) return 0;
    const CallStackInfo* stack = model_.StackOfCall(correlation_id);
    return stack == nullptr ? 0 : stack->id;
  }

 private:
  using Key = std::tuple<uint32_t, bool, uint64_t>;  // device, mapping, address

  void SetPool(DeviceState& d, const MemoryEvent& e) {
    Pool& pool = d.pools[e.pool_address];
    d.pools_reserved -= pool.reserved;
    if (e.operation == v1::MEMORY_OPERATION_POOL_DESTROY) {
      d.pools.erase(e.pool_address);
      return;
    }
    pool.reserved = e.pool_reserved_bytes;
    pool.used = e.pool_used_bytes;
    d.pools_reserved += pool.reserved;
  }

  // CUPTI reports a VMM mapping (cuMemMap) as an ALLOCATE of the same address and size, and
  // its cuMemUnmap as a RELEASE, beside the MAP/UNMAP of the mapping call: one block, counted
  // once, as the MAP (the call's stack), owned by the module CUPTI names. The duplicate's
  // address is kept so that its RELEASE is skipped too. True when `e` was such a duplicate.
  bool Shadows(DeviceState& d, const MemoryEvent& e) {
    const bool mapping = IsMapping(e.operation);
    auto twin = live_.find(Key{e.device_id, !mapping, e.address});
    if (twin == live_.end() || twin->second.bytes != e.bytes) return false;
    shadowed_.insert({e.device_id, e.address});
    if (mapping) {  // the ALLOCATE came first: the MAP takes its place and its owner
      const std::string owner = twin->second.owner;
      Forget(d, twin);
      Add(d, e, owner);
      return true;
    }
    if (twin->second.owner == MemoryOwner("") && !e.source.empty()) {
      const std::string owner = MemoryOwner(e.source);
      MemoryEvent map = e;
      map.operation = v1::MEMORY_OPERATION_MAP;
      map.correlation_id = twin->second.correlation_id;
      map.timestamp_ns = twin->second.allocated_ns;
      Forget(d, twin);
      Add(d, map, owner);
    }
    return true;
  }

  void Add(DeviceState& d, const MemoryEvent& e, std::string owner = "") {
    const Key key{e.device_id, IsMapping(e.operation), e.address};
    if (auto it = live_.find(key); it != live_.end()) Forget(d, it);  // its free was lost
    MemoryBlock b{e.address, e.bytes, e.timestamp_ns, e.device_id, e.correlation_id,
                  e.memory_kind, e.pool_address, StackOf(e.correlation_id),
                  owner.empty() ? MemoryOwner(e.source) : std::move(owner)};
    d.by_kind[b.kind] += b.bytes;
    if (IsDeviceMemoryKind(b.kind)) {
      d.in_use += b.bytes;
      if (b.pool_address == 0) d.outside_pools += b.bytes;
      d.by_owner[b.owner] += b.bytes;
      d.by_site[{b.stack_id, b.owner}] += b.bytes;
    }
    live_.emplace(key, std::move(b));
  }

  void Remove(DeviceState& d, const MemoryEvent& e) {
    auto it = live_.find(Key{e.device_id, IsMapping(e.operation), e.address});
    if (it == live_.end()) {
      ++unknown_releases_;
      return;
    }
    Forget(d, it);
  }

  template <typename It>
  void Forget(DeviceState& d, It it) {
    const MemoryBlock& b = it->second;
    d.by_kind[b.kind] -= b.bytes;
    if (IsDeviceMemoryKind(b.kind)) {
      d.in_use -= b.bytes;
      if (b.pool_address == 0) d.outside_pools -= b.bytes;
      d.by_owner[b.owner] -= b.bytes;
      d.by_site[{b.stack_id, b.owner}] -= b.bytes;
    }
    live_.erase(it);
  }

  const TraceModel& model_;
  std::optional<uint32_t> device_;
  std::map<Key, MemoryBlock> live_;
  std::set<std::pair<uint32_t, uint64_t>> shadowed_;  // device, address (Shadows)
  std::map<uint32_t, DeviceState> devices_;
  uint64_t unknown_releases_ = 0;
};

// `e` with the device it is on. CUPTI records the statics of a module registered before any
// context (by the runtime, as a library loads) with no context and device 0 whatever the
// device: counted on the process's only device, and left out (nullopt) when it used several;
// kept as recorded in a trace that names no context.
std::optional<MemoryEvent> Placed(const TraceModel& model, const MemoryEvent& e) {
  if (e.memory_kind != v1::MEMORY_KIND_DEVICE_STATIC || e.context_id != 0 ||
      model.contexts.empty()) {
    return e;
  }
  const uint32_t device = model.contexts.front().device_id;
  for (const ContextInfo& c : model.contexts) {
    if (c.device_id != device) return std::nullopt;
  }
  MemoryEvent placed = e;
  placed.device_id = device;
  return placed;
}

// The memory events' indices in time order (file order among equal times).
std::vector<uint32_t> TimeOrder(const std::vector<MemoryEvent>& events) {
  std::vector<uint32_t> order(events.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return events[a].timestamp_ns < events[b].timestamp_ns;
  });
  return order;
}

// The first pass's running figures for one device.
struct DeviceFigures {
  DeviceMemory out;
  uint64_t peak_ordinal = 0;  // the event that made the peak, in time order
  bool seen = false;
  uint64_t low_since_instant = UINT64_MAX;  // the least in use since the last instant
  std::map<SiteKey, uint64_t> first_sites, last_sites;
};

class FirstPass {
 public:
  FirstPass(const TraceModel& model, const MemoryTimelineOptions& options, MemoryTimeline& out)
      : model_(model), options_(options), out_(out), replay_(model, options.device) {
    for (size_t i = 0; i < options.intervals.size(); ++i) by_start_.push_back(i);
    std::stable_sort(by_start_.begin(), by_start_.end(), [&](size_t a, size_t b) {
      return options.intervals[a].start_ns < options.intervals[b].start_ns;
    });
  }

  void Run(const std::vector<MemoryEvent>& events, const std::vector<uint32_t>& order) {
    if (!order.empty()) {
      out_.first_ns = events[order.front()].timestamp_ns;
      out_.last_ns = events[order.back()].timestamp_ns;
    }
    for (uint64_t ordinal = 0; ordinal < order.size(); ++ordinal) {
      const std::optional<MemoryEvent> e = Placed(model_, events[order[ordinal]]);
      if (!e) continue;
      Before(e->timestamp_ns);
      if (!replay_.Apply(*e)) continue;
      ++out_.events;
      After(*e, ordinal);
    }
    Before(UINT64_MAX);
    out_.unknown_releases = replay_.unknown_releases();
  }

  std::map<uint32_t, DeviceFigures>& figures() { return figures_; }

 private:
  DeviceFigures& Figures(uint32_t device) {
    DeviceFigures& f = figures_[device];
    if (!f.seen) {
      f.seen = true;
      f.out.device_id = device;
      f.out.interval_peak_bytes.assign(options_.intervals.size(), 0);
      f.out.in_use_at_bytes.assign(options_.instants.size(), 0);
      f.out.low_before_bytes.assign(options_.instants.size(), 0);
      f.out.curve.resize(options_.curve_points);
    }
    return f;
  }

  // Opens the intervals and takes the instants up to `t`, with the values before the event
  // at t; closes the intervals that ended before it.
  void Before(uint64_t t) {
    while (next_instant_ < options_.instants.size() && options_.instants[next_instant_] <= t) {
      for (auto& [device, d] : replay_.devices()) {
        DeviceFigures& f = Figures(device);
        f.out.in_use_at_bytes[next_instant_] = d.in_use;
        f.out.low_before_bytes[next_instant_] = std::min(f.low_since_instant, d.in_use);
        f.low_since_instant = d.in_use;
        if (next_instant_ == options_.growth_from_instant) f.first_sites = d.by_site;
        if (next_instant_ + 1 == options_.instants.size()) f.last_sites = d.by_site;
      }
      ++next_instant_;
    }
    while (next_start_ < by_start_.size() &&
           options_.intervals[by_start_[next_start_]].start_ns <= t) {
      const size_t i = by_start_[next_start_++];
      for (auto& [device, d] : replay_.devices()) {
        uint64_t& peak = Figures(device).out.interval_peak_bytes[i];
        peak = std::max(peak, d.in_use);
      }
      active_.push_back(i);
    }
    std::erase_if(active_, [&](size_t i) { return options_.intervals[i].end_ns < t; });
  }

  void After(const MemoryEvent& e, uint64_t ordinal) {
    DeviceState& d = replay_.devices()[e.device_id];
    DeviceFigures& f = Figures(e.device_id);
    DeviceMemory& out = f.out;
    f.low_since_instant = std::min(f.low_since_instant, d.in_use);
    for (size_t i : active_) {
      out.interval_peak_bytes[i] = std::max(out.interval_peak_bytes[i], d.in_use);
    }
    for (const auto& [kind, bytes] : d.by_kind) {
      out.peak_by_kind[kind] = std::max(out.peak_by_kind[kind], bytes);
    }
    out.peak_reserved_bytes = std::max(out.peak_reserved_bytes, d.reserved());
    out.end_bytes = d.in_use;
    if (d.in_use > out.peak_bytes) {
      out.peak_bytes = d.in_use;
      out.peak_ns = e.timestamp_ns;
      out.reserved_at_peak_bytes = d.reserved();
      out.owners_at_peak = MostFirst(d.by_owner);
      f.peak_ordinal = ordinal;
    }
    AddToCurve(out, e.timestamp_ns, d);
    if (e.operation == v1::MEMORY_OPERATION_ALLOCATE_FAILED) AddFailure(e, d);
  }

  void AddToCurve(DeviceMemory& out, uint64_t t, const DeviceState& d) {
    if (out.curve.empty()) return;
    const uint64_t span = out_.last_ns - out_.first_ns + 1;
    const size_t n = out.curve.size();
    using Wide = unsigned __int128;
    const size_t slot =
        std::min(n - 1, static_cast<size_t>(static_cast<Wide>(t - out_.first_ns) * n / span));
    MemoryPoint& p = out.curve[slot];
    p.time_ns = out_.first_ns + static_cast<uint64_t>(static_cast<Wide>(slot) * span / n);
    p.filled = true;
    p.in_use_bytes = std::max(p.in_use_bytes, d.in_use);
    p.reserved_bytes = std::max(p.reserved_bytes, d.reserved());
  }

  void AddFailure(const MemoryEvent& e, const DeviceState& d) {
    MemoryFailure f;
    f.timestamp_ns = e.timestamp_ns;
    f.device_id = e.device_id;
    f.bytes_asked = e.bytes;
    f.result = e.result;
    f.in_use_bytes = d.in_use;
    f.reserved_bytes = d.reserved();
    for (const auto& [address, pool] : d.pools) {
      if (e.pool_address == 0 || address == e.pool_address) {
        f.pool_free_bytes += pool.reserved > pool.used ? pool.reserved - pool.used : 0;
      }
    }
    f.stack_id = replay_.StackOf(e.correlation_id);
    f.owner = MemoryOwner(e.source);
    f.owners = MostFirst(d.by_owner);
    out_.failures.push_back(std::move(f));
  }

  const TraceModel& model_;
  const MemoryTimelineOptions& options_;
  MemoryTimeline& out_;
  MemoryReplay replay_;
  std::map<uint32_t, DeviceFigures> figures_;
  std::vector<size_t> by_start_;  // intervals by start
  size_t next_start_ = 0;
  size_t next_instant_ = 0;
  std::vector<size_t> active_;  // intervals open at the replay's instant
};

// Sites live at the first or the last instant, with their bytes at both.
std::vector<SiteGrowth> SiteGrowthOf(const DeviceFigures& f) {
  std::map<SiteKey, SiteGrowth> sites;
  for (const auto& [key, bytes] : f.first_sites) {
    SiteGrowth& s = sites[key];
    s.first_bytes = bytes;
  }
  for (const auto& [key, bytes] : f.last_sites) sites[key].last_bytes = bytes;
  std::vector<SiteGrowth> out;
  for (auto& [key, s] : sites) {
    if (s.first_bytes == 0 && s.last_bytes == 0) continue;
    s.stack_id = key.first;
    s.owner = key.second;
    out.push_back(std::move(s));
  }
  return out;
}

// The second pass: replays up to each device's peak and keeps its largest live blocks.
void ListPeakBlocks(const TraceModel& model, const MemoryTimelineOptions& options,
                    const std::vector<uint32_t>& order,
                    std::map<uint32_t, DeviceFigures>& figures) {
  std::map<uint64_t, std::vector<uint32_t>> devices_at;  // peak ordinal -> devices
  for (const auto& [device, f] : figures) {
    if (f.out.peak_bytes != 0) devices_at[f.peak_ordinal].push_back(device);
  }
  if (devices_at.empty()) return;
  MemoryReplay replay(model, options.device);
  const uint64_t last = devices_at.rbegin()->first;
  for (uint64_t ordinal = 0; ordinal <= last; ++ordinal) {
    if (const std::optional<MemoryEvent> e = Placed(model, model.memory_events[order[ordinal]])) {
      replay.Apply(*e);
    }
    auto it = devices_at.find(ordinal);
    if (it == devices_at.end()) continue;
    for (uint32_t device : it->second) {
      std::vector<MemoryBlock> blocks = replay.Blocks(device);
      std::erase_if(blocks, [](const MemoryBlock& b) { return !IsDeviceMemoryKind(b.kind); });
      std::stable_sort(
          blocks.begin(), blocks.end(),
          [](const MemoryBlock& a, const MemoryBlock& b) { return a.bytes > b.bytes; });
      if (options.top != 0 && blocks.size() > options.top) blocks.resize(options.top);
      figures[device].out.largest_at_peak = std::move(blocks);
    }
  }
}

}  // namespace

std::string MemoryOwner(std::string_view source_module) {
  const size_t slash = source_module.rfind('/');
  const std::string_view base =
      slash == std::string_view::npos ? source_module : source_module.substr(slash + 1);
  if (base.empty()) return "program";
  if (StartsWith(base, "libc10") || StartsWith(base, "libtorch")) {
    return "PyTorch caching allocator";
  }
  if (StartsWith(base, "libnccl")) return "NCCL";
  if (StartsWith(base, "libcublas")) return "cuBLAS workspace";
  if (StartsWith(base, "libcudnn")) return "cuDNN";
  return std::string(base);
}

bool IsDeviceMemoryKind(v1::MemoryKind kind) {
  return kind != v1::MEMORY_KIND_PINNED && kind != v1::MEMORY_KIND_PAGEABLE;
}

MemoryTimeline ComputeMemoryTimeline(const TraceModel& model,
                                     const MemoryTimelineOptions& options) {
  MemoryTimeline out;
  const std::vector<uint32_t> order = TimeOrder(model.memory_events);
  FirstPass first(model, options, out);
  first.Run(model.memory_events, order);
  ListPeakBlocks(model, options, order, first.figures());
  for (auto& [device, f] : first.figures()) {
    if (!options.instants.empty()) f.out.site_growth = SiteGrowthOf(f);
    std::erase_if(f.out.curve, [](const MemoryPoint& p) { return !p.filled; });
    out.devices.push_back(std::move(f.out));
  }
  return out;
}

std::optional<Slope> TheilSenSlope(const std::vector<uint64_t>& values) {
  const size_t n = values.size();
  if (n < 3) return std::nullopt;
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      slopes.push_back((static_cast<double>(values[j]) - static_cast<double>(values[i])) /
                       static_cast<double>(j - i));
    }
  }
  std::sort(slopes.begin(), slopes.end());
  const size_t count = slopes.size();
  Slope s;
  s.per_step = count % 2 == 1 ? slopes[count / 2]
                              : (slopes[count / 2 - 1] + slopes[count / 2]) / 2;
  // Sen (1968): the ranks (N -+ C) / 2 of the sorted slopes, C = z * sd of Kendall's S.
  const double nd = static_cast<double>(n);
  const double c = 1.96 * std::sqrt(nd * (nd - 1) * (2 * nd + 5) / 18);
  const double lower_rank = std::floor((static_cast<double>(count) - c) / 2);
  const double upper_rank = std::ceil((static_cast<double>(count) + c) / 2);
  s.low = slopes[static_cast<size_t>(std::max(0.0, lower_rank))];
  s.high = slopes[std::min(count - 1, static_cast<size_t>(std::max(0.0, upper_rank)))];
  return s;
}

}  // namespace warpscope
