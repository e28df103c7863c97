// The cost of a native stack capture on this CPU, no GPU: backtrace(3) (the full DWARF unwind a
// new stack takes) and StackTable::Capture() of a repeated call site (the walk by the frame
// sizes the thread learned, to the stack seen before) below call chains of several depths.
// One JSON line per measure, ns per operation (median of runs); the difference between depths
// is the unwinder's cost per frame, and a walk of frame pointers a lower bound.
//
//   build/bin/warpscope_stack_capture_bench [ITERATIONS] [RUNS]   (20000, 7)
#include <execinfo.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <vector>

#include "collectors/stacks/stack_table.h"

namespace {

using warpscope::StackTable;

class NullStackSink final : public warpscope::StackSink {
 public:
  uint64_t InternString(std::string_view) override { return ++strings_; }
  void Write(const warpscope::StackFrameRecord&) override {}
  void Write(const warpscope::CallStackRecord&) override {}

 private:
  uint64_t strings_ = 0;
};

// Runs `f` at the bottom of `depth` more frames (not inlined, no tail calls).
__attribute__((noinline)) void AtDepth(int depth, const std::function<void()>& f) {
  if (depth <= 0) {
    f();
  } else {
    AtDepth(depth - 1, f);
  }
  asm volatile("" ::: "memory");
}

// The lower bound a walk of saved frame pointers gives (this program is built with them; the
// driver's and CUPTI's frames are not, so it is no way to take a stack there): frames found.
__attribute__((noinline)) int FramePointerWalk(void** pcs, int max) {
  auto** fp = static_cast<void**>(__builtin_frame_address(0));
  int n = 0;
  while (fp != nullptr && n < max) {
    pcs[n++] = fp[1];
    auto** next = static_cast<void**>(fp[0]);
    if (next <= fp) break;  // the chain must go up the stack
    fp = next;
  }
  return n;
}

double MedianNsPerOp(int iterations, int runs, const std::function<void()>& op) {
  std::vector<double> per_op;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) op();
    const std::chrono::duration<double, std::nano> ns = std::chrono::steady_clock::now() - t0;
    per_op.push_back(ns.count() / iterations);
  }
  std::sort(per_op.begin(), per_op.end());
  return per_op[per_op.size() / 2];
}

void Report(const char* measure, int depth, double ns) {
  std::printf("{\"measure\": \"%s\", \"depth\": %d, \"ns\": %.1f}\n", measure, depth, ns);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 7;
  NullStackSink sink;
  StackTable table(&sink, 32, /*timed=*/false);
  for (int depth : {4, 16, 32, 64}) {
    AtDepth(depth, [&] {
      void* pcs[StackTable::kMaxDepth + 9];
      Report("backtrace", depth, MedianNsPerOp(iterations, runs, [&] { backtrace(pcs, 32 + 9); }));
      Report("capture", depth, MedianNsPerOp(iterations, runs, [&] { table.Capture(); }));
      Report("frame_pointer_walk", depth,
             MedianNsPerOp(iterations, runs, [&] { FramePointerWalk(pcs, 32 + 9); }));
    });
  }
  return 0;
}
