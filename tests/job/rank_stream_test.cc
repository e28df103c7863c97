// The second pass of a rank's digest (analyzers/analyses/job/rank_stream.h) on hand-made
// events: each kernel in the step of its launch, the step times from unions folded in order of
// start, and the same figures whatever order the file gives the records in (CUPTI flushes
// kernels and API calls apart and out of order).
#include "analyzers/analyses/job/rank_stream.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

constexpr std::string_view kCompute = "gemm";
constexpr std::string_view kNccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
constexpr uint64_t kThread = 7;

KernelEvent Kernel(std::string_view name, uint64_t start, uint64_t end, uint32_t correlation) {
  KernelEvent k;
  k.name = name;
  k.start_ns = start;
  k.duration_ns = end - start;
  k.stream_id = name == kNccl ? 2 : 1;
  k.correlation_id = correlation;
  return k;
}

ApiCallEvent Call(std::string_view name, uint64_t start, uint64_t end, uint32_t correlation) {
  ApiCallEvent a;
  a.name = name;
  a.start_ns = start;
  a.duration_ns = end - start;
  a.thread_id = kThread;
  a.correlation_id = correlation;
  return a;
}

StepSet TwoSteps() {
  StepSet s;
  s.thread_id = kThread;
  s.steps.push_back({"step_0", 0, 0, 1000, 1000});
  s.steps.push_back({"step_1", 1, 1000, 2000, 2000});
  return s;
}

// Two steps on the host, [0, 1000) and [1000, 2000). Step 0 launches two overlapping compute
// kernels and an AllReduce that overlaps the second; step 1 a kernel, one whose launch was not
// recorded (after the first on its stream: placed at its launch, step 1) and one that runs
// after the step has ended on the host. A synchronize call and a copy whose call returned after
// it ended block the steps' thread.
struct Events {
  std::vector<KernelEvent> kernels = {
      Kernel(kCompute, 100, 300, 1),   Kernel(kCompute, 250, 400, 2),
      Kernel(kNccl, 350, 500, 3),      Kernel(kCompute, 1100, 1200, 4),
      Kernel(kCompute, 1300, 1400, 0), Kernel(kCompute, 2100, 2200, 5)};
  std::vector<ApiCallEvent> calls = {
      Call("cudaLaunchKernel", 50, 55, 1),       Call("cudaLaunchKernel", 60, 65, 2),
      Call("cudaLaunchKernel", 70, 75, 3),       Call("cudaLaunchKernel", 1050, 1055, 4),
      Call("cudaLaunchKernel", 1500, 1505, 5),   Call("cudaMemcpy", 800, 900, 6),
      Call("cudaStreamSynchronize", 880, 950, 0)};
  MemcpyEvent copy;
  Events() {
    copy.start_ns = 820;
    copy.duration_ns = 60;
    copy.correlation_id = 6;
  }
};

struct Folded {
  RankDigest digest;
  std::vector<TimeInterval> blocked;
  std::vector<int64_t> collective_steps;
};

// Folds the events, the kernels in `kernels_order` (indices into Events::kernels), the API
// calls and the copy before them or after them.
Folded Fold(const StepSet& steps, const std::vector<size_t>& kernels_order, bool calls_first) {
  const Events e;
  RankStreamInputs in;
  in.steps = &steps;
  in.collective_of_kernel = {{2, 0}};
  in.collective_starts = {350};
  RankStream stream(in);
  auto add_calls = [&] {
    stream.Add(e.copy);
    for (const ApiCallEvent& a : e.calls) stream.Add(a);
  };
  if (calls_first) add_calls();
  // The file index of a kernel is its order of arrival: give them in `kernels_order` with
  // their indices as written in order.
  for (size_t i : kernels_order) stream.Add(e.kernels[i]);
  if (!calls_first) add_calls();
  Folded out;
  out.blocked = stream.Finish(out.digest);
  out.collective_steps = stream.collective_steps();
  return out;
}

void ExpectTimes(const StepTimes& t, uint64_t compute, uint64_t comm, uint64_t overlap) {
  EXPECT_EQ(t.compute_ns, compute);
  EXPECT_EQ(t.comm_ns, comm);
  EXPECT_EQ(t.overlap_ns, overlap);
}

TEST(RankStream, PutsEachKernelInTheStepOfItsLaunch) {
  const StepSet steps = TwoSteps();
  const Folded f = Fold(steps, {0, 1, 2, 3, 4, 5}, /*calls_first=*/true);
  ASSERT_EQ(f.digest.step_times.size(), 2u);
  ExpectTimes(f.digest.step_times[0], 300, 150, 50);  // [100, 400); [350, 500)
  ExpectTimes(f.digest.step_times[1], 300, 0, 0);     // three kernels of 100 ns
  EXPECT_EQ(f.digest.compute_ns, 600u);
  EXPECT_EQ(f.digest.comm_ns, 150u);
  EXPECT_EQ(f.digest.overlap_ns, 50u);
  EXPECT_EQ(f.collective_steps, std::vector<int64_t>{0});
  // The stretch of compute that last began before the collective, and every stretch for the
  // picture (no gap is closed with a gap of 0).
  ASSERT_EQ(f.digest.compute_busy.size(), 1u);
  EXPECT_EQ(f.digest.compute_busy[0].begin_ns, 100u);
  EXPECT_EQ(f.digest.compute_busy[0].end_ns, 400u);
  EXPECT_EQ(f.digest.compute_drawn.size(), 4u);
  // The synchronize call and the blocking copy's call, merged.
  ASSERT_EQ(f.blocked.size(), 1u);
  EXPECT_EQ(f.blocked[0].begin_ns, 800u);
  EXPECT_EQ(f.blocked[0].end_ns, 950u);
}

TEST(RankStream, GivesTheSameFiguresWhateverTheOrderOfTheRecords) {
  const StepSet steps = TwoSteps();
  const Folded in_order = Fold(steps, {0, 1, 2, 3, 4, 5}, true);
  // Kernels backwards, before the API calls that launched them and the copy's call.
  const Folded shuffled = Fold(steps, {5, 4, 3, 2, 1, 0}, false);
  for (size_t s = 0; s < 2; ++s) {
    const StepTimes& a = in_order.digest.step_times[s];
    const StepTimes& b = shuffled.digest.step_times[s];
    EXPECT_EQ(a.compute_ns, b.compute_ns) << s;
    EXPECT_EQ(a.comm_ns, b.comm_ns) << s;
    EXPECT_EQ(a.overlap_ns, b.overlap_ns) << s;
  }
  EXPECT_EQ(shuffled.digest.compute_ns, in_order.digest.compute_ns);
  EXPECT_EQ(shuffled.digest.compute_drawn.size(), in_order.digest.compute_drawn.size());
  EXPECT_EQ(shuffled.blocked.size(), in_order.blocked.size());
}

TEST(RankStream, PlacesAnUnrecordedLaunchAtTheLastKnownOnItsStream) {
  // Without the call of the kernel at 1100 (correlation 4), it and the kernel at 1300 follow
  // the kernel at 250 on their stream, launched at 60: placed there (the earliest they can have
  // been launched, launch_times.h), in step 0. Step 1 keeps the kernel at 2100 alone.
  const StepSet steps = TwoSteps();
  const Events e;
  RankStreamInputs in;
  in.steps = &steps;
  RankStream stream(in);
  for (const ApiCallEvent& a : e.calls) {
    if (a.correlation_id != 4) stream.Add(a);
  }
  for (const KernelEvent& k : e.kernels) stream.Add(k);
  RankDigest d;
  stream.Finish(d);
  ASSERT_EQ(d.step_times.size(), 2u);
  ExpectTimes(d.step_times[0], 500, 150, 50);
  ExpectTimes(d.step_times[1], 100, 0, 0);
}

}  // namespace
}  // namespace warpscope
