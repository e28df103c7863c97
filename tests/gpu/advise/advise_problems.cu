// ws_advise_problems: CUDA programs that each have one performance problem on purpose, and a
// --fixed mode that removes it with the rest the same, for checking `warpscope advise` on the
// GPU (tests/gpu/advise/gpu_advise.sh): the problem must be the top finding, and its cost must
// match the time the fix saves.
//
//   ws_advise_problems --problem item|pageable|loader|launch|serial [--fixed] [--steps N]
//                      [--warmup W]
//
//   item      each step reads one float back with a blocking cudaMemcpy (PyTorch's .item()),
//             then does 150 us of host work before queueing the next step. Fixed: the value
//             stays on the GPU and is read once at the end.
//   pageable  each step copies 64 MiB host to device from pageable memory, then computes;
//             the buffer is the same each step, touched and locked before the loop, the
//             thread kept on one CPU. Fixed: the host buffer is pinned (the copy call is the
//             same).
//   loader    each step spends 1.5 ms of host time in an NVTX range "data_loader" before it
//             queues 1 ms of GPU work. Fixed: the batches were prepared before the loop.
//   launch    each step launches 200 kernels of 5 us, with 40 us of host work per launch
//             (framework overhead). Fixed: one fused kernel doing the same GPU work.
//   serial    each step copies 32 MiB from pinned memory and runs a 400 us kernel, both on
//             one stream. Fixed: two streams with a buffer each (double buffering).
//
// Kernels spin on the GPU's global timer, so their length is set, not measured. The program
// times its timed steps (after --warmup steps) with the host's steady clock, a device
// synchronization at both ends, and prints one JSON line:
//   {"problem": "item", "fixed": false, "steps": 53, "timed_steps": 50, "loop_ns": 61234567}
#include <sched.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define WS_PROGRAM "ws_advise_problems"
#include "timed_work.cuh"

namespace {

// A step's compute: every block spins for `ns`.
__global__ void ws_advise_compute(unsigned long long ns, const float* in) {
  Spin(ns);
  if (in != nullptr && threadIdx.x == 0 && in[blockIdx.x] == 12345.0f) Spin(1);
}

// The loss of a step: adds one value to a device scalar.
__global__ void ws_advise_loss(float* loss) {
  if (threadIdx.x == 0) *loss += 1.0f;
}

// A tiny kernel of the launch-bound loop, and the fused kernel that does `count` of them.
__global__ void ws_advise_tiny(unsigned long long ns) { Spin(ns); }
__global__ void ws_advise_fused(unsigned long long ns, int count) {
  for (int i = 0; i < count; ++i) Spin(ns);
}

using Options = StepOptions;

constexpr int kComputeBlocks = 132;
constexpr int kComputeThreads = 128;

// One program: Setup once, then Step(i) for warmup and timed steps, then Finish.
class Program {
 public:
  explicit Program(const Options& o) : o_(o) {}
  virtual ~Program() = default;
  virtual void Setup() {}
  virtual void Step(int i) = 0;
  virtual void Finish() {}

 protected:
  const Options& o_;
};

class ItemProgram : public Program {
 public:
  using Program::Program;
  void Setup() override { CHECK(cudaMalloc(&loss_, sizeof(float))); }
  void Step(int) override {
    nvtxRangePushA("step");
    for (int k = 0; k < 4; ++k) {
      ws_advise_compute<<<kComputeBlocks, kComputeThreads>>>(250 * kUs, nullptr);
    }
    ws_advise_loss<<<1, 32>>>(loss_);
    if (!o_.fixed) CHECK(cudaMemcpy(&host_loss_, loss_, sizeof(float), cudaMemcpyDeviceToHost));
    nvtxRangePop();
    HostWork(150 * kUs);  // the framework's host work before the next step
  }
  void Finish() override {
    CHECK(cudaMemcpy(&host_loss_, loss_, sizeof(float), cudaMemcpyDeviceToHost));
  }

 private:
  float* loss_ = nullptr;
  float host_loss_ = 0;
};

class PageableProgram : public Program {
 public:
  using Program::Program;
  static constexpr size_t kBytes = 64u << 20;
  void Setup() override {
    // The main thread stays on one CPU (both modes): the staging copies of pageable memory
    // run on it, and a move to another CPU or memory node changes their speed.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof(one), &one);
    CHECK(cudaMalloc(&device_, kBytes));
    // Pinned reference copies, the same in both modes: the bandwidth a pinned copy gets.
    CHECK(cudaMallocHost(&pinned_, kBytes));
    std::memset(pinned_, 1, kBytes);
    for (int i = 0; i < 2; ++i) CHECK(cudaMemcpy(device_, pinned_, kBytes, cudaMemcpyHostToDevice));
    if (o_.fixed) {
      host_ = pinned_;
    } else {
      host_ = PageableBuffer();
    }
  }
  ~PageableProgram() override {
    if (pageable_ != nullptr) munmap(pageable_, kBytes);
  }
  void Step(int) override {
    nvtxRangePushA("step");
    CHECK(cudaMemcpy(device_, host_, kBytes, cudaMemcpyHostToDevice));
    ws_advise_compute<<<kComputeBlocks, kComputeThreads>>>(500 * kUs,
                                                           static_cast<const float*>(device_));
    nvtxRangePop();
  }

 private:
  void* device_ = nullptr;
  void* pinned_ = nullptr;
  // The same pageable buffer every step, its pages resident before the timed loop: huge
  // pages where the kernel gives them (fewer TLB misses in the driver's staging copy),
  // touched on the CPU the program runs on (local memory), locked so none is reclaimed.
  // Locked memory the driver has not registered is still pageable to CUDA: each copy is
  // staged through the driver's pinned buffers, which is the problem on purpose.
  void* PageableBuffer() {
    pageable_ = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pageable_ == MAP_FAILED) {
      std::fprintf(stderr, "ws_advise_problems: mmap of %zu bytes failed\n", kBytes);
      std::exit(1);
    }
    madvise(pageable_, kBytes, MADV_HUGEPAGE);
    std::memset(pageable_, 1, kBytes);
    mlock(pageable_, kBytes);  // best effort: RLIMIT_MEMLOCK may refuse it
    return pageable_;
  }

  void* pageable_ = nullptr;
  void* host_ = nullptr;
};

class LoaderProgram : public Program {
 public:
  using Program::Program;
  void Step(int) override {
    if (!o_.fixed) {
      nvtxRangePushA("data_loader");
      HostWork(1500 * kUs);  // decoding and augmenting the next batch
      nvtxRangePop();
    }
    nvtxRangePushA("step");
    for (int k = 0; k < 4; ++k) {
      ws_advise_compute<<<kComputeBlocks, kComputeThreads>>>(250 * kUs, nullptr);
    }
    nvtxRangePop();
  }
};

class LaunchProgram : public Program {
 public:
  using Program::Program;
  static constexpr int kKernels = 200;
  void Step(int) override {
    nvtxRangePushA("tiny_loop");
    if (o_.fixed) {
      ws_advise_fused<<<1, 32>>>(5 * kUs, kKernels);
    } else {
      for (int k = 0; k < kKernels; ++k) {
        ws_advise_tiny<<<1, 32>>>(5 * kUs);
        HostWork(40 * kUs);  // the framework's work per operation
      }
    }
    nvtxRangePop();
  }
};

class SerialProgram : public Program {
 public:
  using Program::Program;
  static constexpr size_t kBytes = 32u << 20;
  void Setup() override {
    CHECK(cudaMallocHost(&host_, kBytes));
    std::memset(host_, 1, kBytes);
    for (int b = 0; b < 2; ++b) {
      CHECK(cudaMalloc(&device_[b], kBytes));
      CHECK(cudaStreamCreateWithFlags(&stream_[b], cudaStreamNonBlocking));
    }
  }
  void Step(int i) override {
    const int b = o_.fixed ? i % 2 : 0;
    nvtxRangePushA("step");
    CHECK(cudaMemcpyAsync(device_[b], host_, kBytes, cudaMemcpyHostToDevice, stream_[b]));
    ws_advise_compute<<<kComputeBlocks, kComputeThreads, 0, stream_[b]>>>(
        400 * kUs, static_cast<const float*>(device_[b]));
    nvtxRangePop();
  }

 private:
  void* host_ = nullptr;
  void* device_[2] = {nullptr, nullptr};
  cudaStream_t stream_[2] = {};
};

Program* MakeProgram(const Options& o) {
  if (o.problem == "item") return new ItemProgram(o);
  if (o.problem == "pageable") return new PageableProgram(o);
  if (o.problem == "loader") return new LoaderProgram(o);
  if (o.problem == "launch") return new LaunchProgram(o);
  if (o.problem == "serial") return new SerialProgram(o);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "ws_advise_problems --problem item|pageable|loader|launch|serial [--fixed] [--steps N] "
      "[--warmup W]";
  const Options o = ParseStepOptions(argc, argv, 50, kUsage);
  Program* program = MakeProgram(o);
  if (program == nullptr) {
    std::fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
  }
  CHECK(cudaFree(nullptr));
  program->Setup();
  RunTimedSteps(*program, o.problem, o.fixed, o.warmup, o.steps);
  delete program;
  return 0;
}
