// A rank's kernels, calls, copies and synchronisations folded as they stream by (rank_stream.h).
#include "analyzers/analyses/job/rank_stream.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "analyzers/measures/collectives.h"

namespace warpscope {

bool RunningUnion::Add(TimeInterval t, TimeInterval* closed) {
  if (!any_) {
    any_ = true;
    begin_ns_ = t.begin_ns;
    end_ns_ = t.end_ns;
    return false;
  }
  if (t.begin_ns > end_ns_) {
    if (closed != nullptr) *closed = {begin_ns_, end_ns_};
    total_ns_ += end_ns_ - begin_ns_;
    begin_ns_ = t.begin_ns;
    end_ns_ = t.end_ns;
    return true;
  }
  end_ns_ = std::max(end_ns_, t.end_ns);
  return false;
}

bool RunningUnion::Current(TimeInterval* open) const {
  if (any_) *open = {begin_ns_, end_ns_};
  return any_;
}

RankStream::RankStream(RankStreamInputs inputs) : in_(std::move(inputs)) {
  steps_.resize(in_.steps->steps.size());
  collective_steps_.assign(in_.collective_starts.size(), -1);
  want_blocked_ = !in_.steps->steps.empty();
  blocked_thread_ = in_.steps->thread_id;
}

bool NcclKernelNames::Of(const KernelEvent& k) {
  const std::string_view name = k.name.empty() ? k.mangled_name : k.name;
  auto [it, added] = by_name_.try_emplace(name.data(), name.size(), false);
  if (added || it->second.first != name.size()) it->second = {name.size(), IsNcclKernel(name)};
  return it->second.second;
}

void RankStream::Add(const KernelEvent& k) {
  waiting_.push({k.start_ns, k.end_ns(), kernels_seen_++, k.correlation_id, k.device_id,
                 k.stream_id, nccl_.Of(k)});
  if (waiting_.size() > kReorderWindow) TakeEarliest();
}

void RankStream::Add(const ApiCallEvent& a) {
  if (want_blocked_ && a.thread_id == blocked_thread_ &&
      a.name.find("Synchronize") != std::string_view::npos) {
    blocked_.push_back({a.start_ns, a.end_ns()});
  }
  if (a.correlation_id == 0) return;
  const Call call{a.start_ns, a.end_ns(), a.thread_id,
                  a.name.find("Synchronize") != std::string_view::npos};
  if (!calls_.try_emplace(a.correlation_id, call).second) return;
  call_order_.push_back(a.correlation_id);
  if (call_order_.size() > kCallsKept) {
    calls_.erase(call_order_.front());
    call_order_.pop_front();
  }
  if (auto copy = copies_waiting_.find(a.correlation_id); copy != copies_waiting_.end()) {
    Blocked(call, copy->second);
    copies_waiting_.erase(copy);
  }
}

void RankStream::Add(const MemcpyEvent& c) {
  if (!want_blocked_ || c.correlation_id == 0) return;
  if (auto call = calls_.find(c.correlation_id); call != calls_.end()) {
    Blocked(call->second, c.end_ns());
    return;
  }
  if (!copies_waiting_.try_emplace(c.correlation_id, c.end_ns()).second) return;
  copy_order_.push_back(c.correlation_id);
  if (copy_order_.size() > kCallsKept) {
    copies_waiting_.erase(copy_order_.front());
    copy_order_.pop_front();
  }
}

void RankStream::Add(const SyncEvent& s) {
  if (want_blocked_ && s.thread_id == blocked_thread_ &&
      s.kind != v1::SYNC_KIND_STREAM_WAIT_EVENT) {
    blocked_.push_back({s.start_ns, s.end_ns()});
  }
}

// A copy whose call returned only after it had ended blocked the call's thread (steps.cc
// BlockedOn).
void RankStream::Blocked(const Call& call, uint64_t copy_end_ns) {
  if (call.thread_id == blocked_thread_ && !call.blocks && call.end_ns >= copy_end_ns) {
    blocked_.push_back({call.start_ns, call.end_ns});
  }
}

// The kernels of the earliest start, those with a known launch first, so that one without
// is placed after every kernel of its start (launch_times.h: at or before its start).
void RankStream::TakeEarliest() {
  const uint64_t start = waiting_.top().start_ns;
  std::vector<Waiting> unknown;
  while (!waiting_.empty() && waiting_.top().start_ns == start) {
    const Waiting k = waiting_.top();
    waiting_.pop();
    uint64_t launch = 0;
    auto call = calls_.find(k.correlation_id);
    if (k.correlation_id != 0 && call != calls_.end()) launch = call->second.start_ns;
    auto nccl = in_.call_start_by_kernel.find(k.index);
    if (nccl != in_.call_start_by_kernel.end() && nccl->second != 0) launch = nccl->second;
    if (launch == 0) {
      unknown.push_back(k);
      continue;
    }
    auto [it, added] = last_known_.try_emplace({k.device_id, k.stream_id}, k.start_ns, launch);
    if (!added) it->second = std::max(it->second, std::make_pair(k.start_ns, launch));
    Fold(k, launch);
  }
  for (const Waiting& k : unknown) {
    auto it = last_known_.find({k.device_id, k.stream_id});
    Fold(k, it == last_known_.end() ? k.start_ns : it->second.second);
  }
}

void RankStream::Fold(const Waiting& k, uint64_t launch_ns) {
  const TimeInterval t{k.start_ns, k.end_ns};
  TimeInterval closed;
  if (k.nccl) {
    comm_.Add(t);
  } else if (compute_.Add(t, &closed)) {
    Stretch(closed, t.begin_ns);
  }
  both_.Add(t);
  const int64_t step = in_.steps->StepAt(launch_ns);
  if (k.nccl) {
    auto collective = in_.collective_of_kernel.find(k.index);
    if (collective != in_.collective_of_kernel.end()) {
      collective_steps_[collective->second] = step;
    }
  }
  if (step < 0) return;
  StepUnions& s = steps_[static_cast<size_t>(step)];
  (k.nccl ? s.comm : s.compute).Add(t);
  s.both.Add(t);
}

// The stretch that last began before each collective (what OwnWorkDone in collectives.cc reads
// of it), and the stretches with short gaps closed, for the picture (rank_digest.cc).
void RankStream::Stretch(TimeInterval s, uint64_t next_begin_ns) {
  const std::vector<uint64_t>& starts = in_.collective_starts;
  bool before_one = false;
  for (; next_collective_ < starts.size() && starts[next_collective_] < next_begin_ns;
       ++next_collective_) {
    before_one = before_one || starts[next_collective_] >= s.begin_ns;
  }
  if (before_one) busy_kept_.push_back(s);
  if (!in_.drawing) return;
  if (!drawn_.empty() && s.begin_ns < drawn_.back().end_ns + in_.drawing_gap_ns) {
    drawn_.back().end_ns = std::max(drawn_.back().end_ns, s.end_ns);
  } else {
    drawn_.push_back(s);
  }
}

std::vector<TimeInterval> RankStream::Finish(RankDigest& d) {
  while (!waiting_.empty()) TakeEarliest();
  TimeInterval open;
  if (compute_.Current(&open)) Stretch(open, std::numeric_limits<uint64_t>::max());
  auto times = [](const RunningUnion& compute, const RunningUnion& comm, const RunningUnion& both) {
    const uint64_t a = compute.Length(), b = comm.Length();
    return StepTimes{a, b, a + b - both.Length(), 0, 0};  // |A and B| = |A| + |B| - |A or B|
  };
  d.step_times.clear();
  for (const StepUnions& s : steps_) d.step_times.push_back(times(s.compute, s.comm, s.both));
  const StepTimes whole = times(compute_, comm_, both_);
  d.compute_ns = whole.compute_ns;
  d.comm_ns = whole.comm_ns;
  d.overlap_ns = whole.overlap_ns;
  d.compute_busy = std::move(busy_kept_);
  drawn_.shrink_to_fit();
  d.compute_drawn = std::move(drawn_);
  return MergedIntervals(std::move(blocked_));
}

}  // namespace warpscope
