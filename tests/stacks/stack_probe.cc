// A probe of the stack reader for tests and the capture benchmark: Python loads it with
// ctypes and asks for the calling thread's stack as text, or times many captures.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectors/api_calls/api_call_recorder.h"
#include "collectors/stacks/stack_table.h"
#include "tests/activity/fake_record_sink.h"

namespace warpscope {
namespace {

// Keeps what the table writes, to print stacks back.
class MemorySink final : public StackSink {
 public:
  uint64_t InternString(std::string_view value) override {
    if (value.empty()) return 0;
    strings_.emplace_back(value);
    return strings_.size();
  }
  void Write(const StackFrameRecord& frame) override { frames_[frame.id] = frame; }
  void Write(const CallStackRecord& stack) override { stacks_[stack.id] = stack; }

  std::string Text(uint64_t stack_id) const {
    auto it = stacks_.find(stack_id);
    if (it == stacks_.end()) return {};
    const CallStackRecord& stack = it->second;
    std::string out = stack.truncated ? "truncated\n" : "";
    const size_t cut_at = stack.frame_ids.size() - stack.outermost;
    for (size_t i = 0; i < stack.frame_ids.size(); ++i) {
      if (stack.outermost > 0 && i == cut_at) {
        out += "cut " + std::to_string(stack.left_out) + "\n";
      }
      const StackFrameRecord& f = frames_.at(stack.frame_ids[i]);
      out += String(f.file_id) + ":" + std::to_string(f.line) + ":" + String(f.function_id) +
             ":" + std::to_string(f.first_line) + "\n";
    }
    return out;
  }
  size_t stacks() const { return stacks_.size(); }

 private:
  std::string String(uint64_t id) const { return id == 0 ? "" : strings_[id - 1]; }
  std::vector<std::string> strings_;
  std::unordered_map<uint64_t, StackFrameRecord> frames_;
  std::unordered_map<uint64_t, CallStackRecord> stacks_;
};

MemorySink& Sink() {
  static MemorySink* sink = new MemorySink();
  return *sink;
}

StackTable& Table(int depth) {
  static std::unordered_map<int, StackTable*> tables;
  auto it = tables.find(depth);
  if (it == tables.end()) it = tables.emplace(depth, new StackTable(&Sink(), depth, false)).first;
  return *it->second;
}

int Copy(const std::string& text, char* out, int size) {
  if (size <= 0) return -1;
  const size_t n = std::min(text.size(), static_cast<size_t>(size - 1));
  std::memcpy(out, text.data(), n);
  out[n] = 0;
  return static_cast<int>(n);
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace
}  // namespace warpscope

using warpscope::StackCapture;
using warpscope::StackSource;

extern "C" {

// The calling thread's stack, one "file:line:function:first_line" line a frame, innermost
// first ("truncated" first when cut; "cut N" before the outermost frames kept past N left
// out). Returns the stack id (0: none), -1 when out is too small.
__attribute__((visibility("default"))) long long warpscope_probe_stack(int depth, char* out,
                                                                        int size) {
  const StackCapture c = warpscope::Table(depth).Capture();
  if (warpscope::Copy(warpscope::Sink().Text(c.stack_id), out, size) < 0) return -1;
  return static_cast<long long>(c.stack_id);
}

// The same from a thread the probe starts, which has never run Python; with
// `native_fallback`, its native stack, whose functions go to `out` one a line.
__attribute__((visibility("default"))) int warpscope_probe_native_thread_source(
    int native_fallback, char* out, int size) {
  StackCapture c;
  std::thread t([&] { c = warpscope::Table(32).Capture(native_fallback != 0); });
  t.join();
  if (out != nullptr && size > 0) {
    std::snprintf(out, static_cast<size_t>(size), "%s",
                  warpscope::Sink().Text(c.stack_id).c_str());
  }
  return static_cast<int>(c.source);
}

// PythonSupport of the reader, and the interpreter's PY_VERSION_HEX.
__attribute__((visibility("default"))) int warpscope_probe_support(unsigned* version_hex) {
  warpscope::StackTable& t = warpscope::Table(32);
  const int s = static_cast<int>(t.python().Detect());
  *version_hex = t.python().version_hex();
  return s;
}

// Times `n` captures of the calling thread's stack (the first, which interns, included):
// median and 99th percentile in ns.
__attribute__((visibility("default"))) int warpscope_probe_cost(int depth, int n,
                                                                double* median_ns,
                                                                double* p99_ns) {
  if (n <= 0) return -1;
  std::vector<uint64_t> ns(static_cast<size_t>(n));
  warpscope::StackTable& t = warpscope::Table(depth);
  uint64_t last = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t start = warpscope::NowNs();
    last = t.Capture().stack_id;
    ns[static_cast<size_t>(i)] = warpscope::NowNs() - start;
  }
  std::sort(ns.begin(), ns.end());
  *median_ns = static_cast<double>(ns[ns.size() / 2]);
  *p99_ns = static_cast<double>(ns[std::min(ns.size() - 1, ns.size() * 99 / 100)]);
  return last != 0 ? 0 : 1;
}

// Times `n` launch calls as the API calls collector logs them on the launching thread (entry
// and exit callbacks of cudaLaunchKernel, with the calling thread's stack when `stacks`), the
// log drained every 4096 calls outside the timing as warpscope's own thread does: median and
// 99th percentile in ns a call. CUPTI's own work per callback is not in it.
__attribute__((visibility("default"))) int warpscope_probe_launch_cost(int depth, int n,
                                                                       int stacks,
                                                                       double* median_ns,
                                                                       double* p99_ns) {
  if (n <= 0) return -1;
  warpscope::ApiCallRecorderOptions options;
  options.stacks.syncs = options.stacks.copies = false;
  options.stacks.launches = stacks != 0;
  options.stacks.launch_every = 1;
  options.stacks.depth = depth;
  static warpscope::FakeSink* names = new warpscope::FakeSink();
  warpscope::ApiCallRecorder recorder(
      options, &warpscope::Table(depth), &warpscope::NowNs,
      [](std::string_view name) { return names->InternString(name); });
  recorder.SetRecording(true);
  warpscope::FakeSink sink;
  std::vector<uint64_t> ns(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const warpscope::ApiCallSite site{true, 211, "cudaLaunchKernel_v7000",
                                      static_cast<uint32_t>(i + 1)};
    const uint64_t start = warpscope::NowNs();
    recorder.OnEnter(site);
    recorder.OnExit(site, 0);
    ns[static_cast<size_t>(i)] = warpscope::NowNs() - start;
    if (i % 4096 == 4095) {
      recorder.Drain(sink);
      sink.apis.clear();
      sink.stacks.clear();
    }
  }
  recorder.Drain(sink);
  std::sort(ns.begin(), ns.end());
  *median_ns = static_cast<double>(ns[ns.size() / 2]);
  *p99_ns = static_cast<double>(ns[std::min(ns.size() - 1, ns.size() * 99 / 100)]);
  return recorder.counts().log.logged == static_cast<uint64_t>(n) ? 0 : 1;
}

}  // extern "C"
