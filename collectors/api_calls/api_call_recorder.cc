// The API call recorder (see api_call_recorder.h).
#include "collectors/api_calls/api_call_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "collectors/activity/activity_translator.h"
#include "collectors/memory/live_blocks.h"
#include "collectors/stacks/stack_table.h"

namespace warpscope {
namespace {

// Calls of one thread nest at most this deep among the selected ones (a launch inside a
// callback of a sync is already rare); deeper calls are not logged.
constexpr int kMaxNesting = 8;

struct PendingCall {
  bool active = false;
  bool runtime = true;
  bool write_call = false;
  bool launch = false;
  bool alloc = false;
  uint32_t correlation_id = 0;
  uint32_t callback_id = 0;
  uint64_t start_ns = 0;
  uint64_t stack_id = 0;
  uint64_t name_id = 0;
};

// The calling thread's calls in progress, for one recorder (tests make several).
struct ThreadCalls {
  const void* owner = nullptr;
  uint32_t os_tid = 0;
  int depth = 0;
  uint32_t launches = 0;                 // launch calls seen, for WARPSCOPE_STACK_LAUNCH_EVERY
  uint32_t launches_without_python = 0;  // launches that found no Python frame
  PendingCall pending[kMaxNesting];
};

thread_local ThreadCalls t_calls;

ThreadCalls& CallsOf(const void* recorder) {
  ThreadCalls& t = t_calls;
  if (t.owner != recorder) {
    t = ThreadCalls();
    t.owner = recorder;
    t.os_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  }
  return t;
}

}  // namespace

ApiCallRecorder::ApiCallRecorder(const ApiCallRecorderOptions& options, StackTable* stacks,
                                 Clock clock, Interner intern)
    : options_(options),
      stacks_(options.stacks.any() ? stacks : nullptr),
      clock_(clock),
      intern_(std::move(intern)),
      log_(options.max_log_bytes) {}

bool ApiCallRecorder::IsRuntimeCallWritten(bool runtime, uint32_t callback_id,
                                           bool filter_trivial) {
  return runtime && !(filter_trivial && IsTrivialRuntimeApi(callback_id));
}

bool ApiCallRecorder::Wants(bool runtime, uint32_t callback_id, std::string_view function) const {
  const StackCallKind kind = StackCallKindOf(function);
  if (kind == StackCallKind::kLaunch && options_.launch_calls) return true;
  if (kind == StackCallKind::kAlloc && options_.alloc_calls) return true;
  if (kind == StackCallKind::kSync && options_.sync_calls) return true;
  if (options_.runtime_calls && IsRuntimeCallWritten(runtime, callback_id, options_.filter_trivial))
    return true;
  return stacks_ != nullptr && options_.stacks.Wants(kind);
}

ApiCallRecorder::CallInfo ApiCallRecorder::Info(const ApiCallSite& call) {
  std::atomic<uint64_t>* slot = nullptr;
  if (call.callback_id < kSlots) {
    slot = &(call.runtime ? runtime_calls_ : driver_calls_)[call.callback_id];
    if (const uint64_t packed = slot->load(std::memory_order_relaxed)) {
      return {packed >> 8, static_cast<StackCallKind>(packed & 0xFF)};
    }
  }
  // Written under the name the activity records use ("cudaLaunchKernel", no version).
  const CallInfo info{intern_(ApiDisplayName(call.function)), StackCallKindOf(call.function)};
  if (slot != nullptr && info.name_id != 0) {
    slot->store(info.name_id << 8 | static_cast<uint64_t>(info.kind), std::memory_order_relaxed);
  }
  return info;
}

bool ApiCallRecorder::WantsStack(StackCallKind kind) {
  if (stacks_ == nullptr || !options_.stacks.Wants(kind)) return false;
  if (kind != StackCallKind::kLaunch) return true;
  uint32_t every = options_.stacks.launch_every;
  if (every == 0) {
    every = stacks_->python().support() == PythonSupport::kNoPython
                ? StackConfig::kNativeLaunchEvery
                : StackConfig::kPythonLaunchEvery;
  }
  return CallsOf(this).launches++ % every == 0;
}

uint64_t ApiCallRecorder::TakeStack(StackCallKind kind) {
  // A Python process's thread with no Python frame (autograd's, NCCL's) gets its native
  // stack; for launches, one in the native sampling rule's count of such launches.
  ThreadCalls& t = CallsOf(this);
  bool fallback = true;
  if (kind == StackCallKind::kLaunch) {
    const uint32_t every = options_.stacks.launch_every != 0 ? options_.stacks.launch_every
                                                             : StackConfig::kNativeLaunchEvery;
    fallback = t.launches_without_python % every == 0;
  }
  const StackCapture c = stacks_->Capture(fallback);
  if (kind == StackCallKind::kLaunch && c.source != StackSource::kPython &&
      stacks_->python().support() == PythonSupport::kReady) {
    ++t.launches_without_python;
  }
  return c.stack_id;
}

void ApiCallRecorder::OnEnter(const ApiCallSite& call) {
  ThreadCalls& t = CallsOf(this);
  const int depth = t.depth++;
  if (depth >= kMaxNesting) return;
  PendingCall& p = t.pending[depth];
  p.active = false;
  if (!recording_.load(std::memory_order_acquire)) return;
  const uint64_t start = clock_();
  const CallInfo info = Info(call);
  if (info.kind == StackCallKind::kLaunch) {
    p.write_call = call.runtime ? options_.launch_calls || options_.runtime_calls
                                : options_.launch_calls && !options_.driver_activity;
  } else {
    p.write_call = (info.kind == StackCallKind::kSync && options_.sync_calls &&
                    !(call.runtime ? options_.runtime_activity : options_.driver_activity)) ||
                   (options_.runtime_calls &&
                    IsRuntimeCallWritten(call.runtime, call.callback_id, options_.filter_trivial));
  }
  p.stack_id = WantsStack(info.kind) ? TakeStack(info.kind) : 0;
  if (!p.write_call && p.stack_id == 0) return;
  p.active = true;
  p.runtime = call.runtime;
  p.launch = info.kind == StackCallKind::kLaunch;
  p.alloc = info.kind == StackCallKind::kAlloc;
  p.correlation_id = call.correlation_id;
  p.callback_id = call.callback_id;
  p.start_ns = start;
  p.name_id = info.name_id;
}

void ApiCallRecorder::OnExit(const ApiCallSite& call, uint32_t result) {
  ThreadCalls& t = CallsOf(this);
  if (call.memory != nullptr && options_.alloc_calls &&
      recording_.load(std::memory_order_acquire) &&
      memory_.OnExit(call, result, t.os_tid, clock_()) && options_.on_out_of_memory != nullptr) {
    options_.on_out_of_memory();
  }
  if (t.depth == 0) return;  // its entry came before this recorder listened
  const int depth = --t.depth;
  if (depth >= kMaxNesting) return;
  PendingCall& p = t.pending[depth];
  if (!p.active) return;
  p.active = false;
  if (p.correlation_id != call.correlation_id) return;  // not the call it began with
  LoggedCall logged;
  logged.start_ns = p.start_ns;
  logged.end_ns = clock_();
  logged.stack_id = p.stack_id;
  logged.correlation_id = p.correlation_id;
  logged.callback_id = p.callback_id;
  logged.result = result;
  logged.name_id = p.name_id;
  logged.runtime = p.runtime;
  logged.write_call = p.write_call;
  logged.launch = p.launch;
  logged.alloc = p.alloc;
  log_.Append(t.os_tid, logged);
}

void ApiCallRecorder::Drain(RecordSink& sink) {
  uint64_t launches = 0, runtime_calls = 0, stacks = 0;
  log_.Drain([&](uint32_t os_tid, std::span<const LoggedCall> calls) {
    // Keyed as CUPTI's records key threads (system thread ids): one ThreadInfo for both.
    const uint64_t thread = sink.InternThread(os_tid, os_tid);
    for (const LoggedCall& c : calls) {
      const ApiDomain domain = c.runtime ? ApiDomain::kRuntime : ApiDomain::kDriver;
      if (c.write_call) {
        ApiCallRecord r;
        r.domain = domain;
        r.name_id = c.name_id;
        r.start_ns = c.start_ns;
        r.end_ns = c.end_ns;
        r.thread_id = thread;
        r.correlation_id = c.correlation_id;
        r.result = c.result;
        r.callback_id = c.callback_id;
        if (sink.Write(r)) ++(c.launch ? launches : runtime_calls);
      }
      if (c.stack_id != 0) {
        ApiStackRecord s;
        s.correlation_id = c.correlation_id;
        s.stack_id = c.stack_id;
        s.timestamp_ns = c.start_ns;
        s.domain = domain;
        s.callback_id = c.callback_id;
        s.name_id = c.name_id;
        if (sink.Write(s)) ++stacks;
        if (c.alloc && options_.live_blocks != nullptr) options_.live_blocks->OnStack(s);
      }
    }
  });
  memory_.Drain(sink, options_.live_blocks);
  launches_written_.fetch_add(launches, std::memory_order_relaxed);
  runtime_written_.fetch_add(runtime_calls, std::memory_order_relaxed);
  stacks_written_.fetch_add(stacks, std::memory_order_relaxed);
}

void ApiCallRecorder::Abandon() {
  recording_.store(false);
  log_.Abandon();
}

ApiCallRecorderCounts ApiCallRecorder::counts() const {
  return {log_.counts(), launches_written_.load(), runtime_written_.load(), stacks_written_.load(),
          memory_.counts()};
}

}  // namespace warpscope
