// The flight recorder's dumps (on the capture signal, a crash, `warpscope dump`, at the end,
// and after a slow step) and the --slow-step rule that watches the steps' NVTX range.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "collectors/memory/live_blocks.h"
#include "libinject/session_internal.h"
#include "libinject/trace_name.h"

namespace warpscope::session_internal {
namespace {

// How long after a slow step ends its dump is written: the step's GPU work may still be
// running, and its records reach the writer at the next CUPTI flush.
constexpr uint64_t kSlowStepDumpDelayNs = 500'000'000;

// The same for the flight recorder's --slow-step range, and this thread's open step: its depth
// + 1 (0 = none) and when it was pushed.
thread_local uint32_t t_step_depth = 0;
thread_local uint32_t t_step_open = 0;
thread_local uint64_t t_step_start_ns = 0;

}  // namespace

bool Session::Dump(CaptureTrigger trigger, bool flush_cupti, std::string* result,
                   const TraceWriter::LiveMemory& live) {
  if (flush_cupti) collectors_.OnFlush();  // activity first: CUPTI's buffers into the ring
  uint32_t id = dumps_ + 1;
  std::string path, error;
  auto name = [&] {
    return ProcessTraceName(config_, header_, [](const char* n) { return std::getenv(n); }, id,
                            &path, &error);
  };
  bool named = name();
  // Without -f, a name an earlier run left is skipped for the next number (up to 1000 on).
  struct stat st;
  for (int skipped = 0; named && !config_.force_overwrite && skipped < 1000 &&
                        ::lstat(path.c_str(), &st) == 0;
       ++skipped) {
    ++id;
    named = name();
  }
  if (!named || !writer_->DumpRing(path, trigger, id, TraceClockNs(), &error, live)) {
    *result = error;
    Log(LogLevel::kError, error);
    return false;
  }
  dumps_ = id;
  *result = "flight recorder dump " + std::to_string(id) + " written to " + path;
  Log(LogLevel::kWarning, "warpscope: " + *result);
  return true;
}

void Session::OnOutOfMemory() {
  // Inside the failing call's callback: a wake for the watcher, at most one a period.
  if (!running()) return;
  const uint64_t now = TraceClockNs();
  uint64_t last = out_of_memory_ns_.load();
  if (last != 0 && now - last < kOutOfMemoryDumpEveryNs) return;
  if (!out_of_memory_ns_.compare_exchange_strong(last, now)) return;
  SignalToPipe(kWakeOutOfMemory);
}

void Session::AfterOutOfMemory() {
  collectors_.OnFlush();  // the failed request, its stack and CUPTI's records to the writer
  if (!flight_) {
    // The trace file has it all: onto the disk while the program may still be dying of it.
    writer_->Flush();
    return;
  }
  const LiveBlockSnapshot live = ProcessLiveBlocks().Snapshot();
  std::string result;
  Dump(CaptureTrigger::kError, /*flush_cupti=*/false, &result, {live.blocks, live.stacks});
}

void Session::OnStepPush(std::string_view name, std::string_view domain) {
  const std::optional<uint32_t> depth = step_match_.Push(t_step_depth, name, domain);
  if (!depth || t_step_open != 0) return;  // a step inside a step is part of it
  t_step_open = *depth + 1;
  t_step_start_ns = TraceClockNs();
}

void Session::OnStepPop(std::string_view domain) {
  const std::optional<uint32_t> depth = step_match_.Pop(t_step_depth, domain);
  if (!depth || t_step_open != *depth + 1) return;
  t_step_open = 0;
  const uint64_t now = TraceClockNs();
  const uint64_t took = now > t_step_start_ns ? now - t_step_start_ns : 0;
  SlowStepRule::Verdict verdict;
  {
    std::lock_guard<std::mutex> lock(step_mu_);
    verdict = step_rule_.Add(took);
    if (!verdict.slow || forked_child_.load() || shut_down_.load()) return;
    char note[256];
    std::snprintf(note, sizeof note,
                  "slow step: %s #%llu took %.3f ms (threshold %.3f ms, %.1fx the median %.3f ms "
                  "of the steps before it)",
                  config_.slow_step_name.c_str(), static_cast<unsigned long long>(step_rule_.steps()),
                  took / 1e6, config_.slow_step_threshold_s * 1e3,
                  verdict.median_ns ? static_cast<double>(took) / verdict.median_ns : 0.0,
                  verdict.median_ns / 1e6);
    // Slow steps that share one dump each leave their line.
    if (!slow_step_note_.empty()) slow_step_note_ += "; ";
    slow_step_note_ += note;
  }
  // One dump for slow steps that come close together: the first sets the time.
  uint64_t none = 0;
  if (slow_step_due_ns_.compare_exchange_strong(none, now + kSlowStepDumpDelayNs)) {
    SignalToPipe(kWakeSlowStep);
  }
}

}  // namespace warpscope::session_internal
