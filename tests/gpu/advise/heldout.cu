// ws_advise_heldout: C++ programs with one performance problem each (and a --fixed mode
// without it), written after the `warpscope advise` rules they check, to try the rules on
// programs they were not tuned on (tests/gpu/advise/gpu_advise.sh --heldout; PyTorch ones in
// heldout.py).
//
//   ws_advise_heldout --problem tinyloop|readback|devsync [--fixed] [--steps N] [--warmup W]
//
//   tinyloop  no NVTX: each step launches 10,000 kernels of about 2 us back to back, and
//             launching each takes the host longer than the kernel runs. Fixed: one kernel a
//             step that runs as long as the 10,000 together (20 ms).
//   readback  steps in NVTX ranges "iter 0", "iter 1", ... (a number after a space): 1 ms of
//             kernels, then a blocking 4-byte cudaMemcpy of a result and 300 us of host work
//             using it. Fixed: the result goes to pinned memory with cudaMemcpyAsync and is
//             read one step later, after an event.
//   devsync   steps in a constant NVTX range "train": 2 ms of kernels, cudaDeviceSynchronize,
//             then 500 us of host work. Fixed: no synchronize.
//
// Kernels spin on the GPU's global timer, so their length is set, not measured. Prints one
// JSON line as ws_advise_problems does:
//   {"problem": "tinyloop", "fixed": false, "steps": 23, "timed_steps": 20, "loop_ns": ...}
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define WS_PROGRAM "ws_advise_heldout"
#include "timed_work.cuh"

namespace {

__global__ void ws_heldout_spin(unsigned long long ns, float* out) {
  Spin(ns);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] += 1.0f;
}

using Options = StepOptions;

class Program {
 public:
  explicit Program(const Options& o) : o_(o) {}
  virtual ~Program() = default;
  virtual void Step(int i) = 0;
  virtual void Finish() {}

 protected:
  const Options& o_;
};

class TinyLoop : public Program {
 public:
  TinyLoop(const Options& o) : Program(o) { CHECK(cudaMalloc(&out_, sizeof(float))); }
  void Step(int) override {
    constexpr int kLaunches = 10000;
    if (o_.fixed) {
      ws_heldout_spin<<<1, 32>>>(kLaunches * 2 * kUs, out_);
    } else {
      for (int k = 0; k < kLaunches; ++k) ws_heldout_spin<<<1, 32>>>(2 * kUs, out_);
    }
    CHECK(cudaGetLastError());
  }

 private:
  float* out_ = nullptr;
};

class Readback : public Program {
 public:
  Readback(const Options& o) : Program(o) {
    CHECK(cudaMalloc(&out_, sizeof(float)));
    CHECK(cudaMallocHost(&pinned_, sizeof(float)));
    CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  }
  void Step(int i) override {
    const std::string name = "iter " + std::to_string(i);
    nvtxRangePushA(name.c_str());
    for (int k = 0; k < 4; ++k) ws_heldout_spin<<<132, 128>>>(250 * kUs, out_);
    if (o_.fixed) {
      if (i > 0) {
        CHECK(cudaEventSynchronize(ready_));  // last step's value: long since copied
        sum_ += *pinned_;
      }
      CHECK(cudaMemcpyAsync(pinned_, out_, sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaEventRecord(ready_));
    } else {
      float v = 0;
      CHECK(cudaMemcpy(&v, out_, sizeof(float), cudaMemcpyDeviceToHost));
      sum_ += v;
    }
    HostWork(300 * 1000);
    nvtxRangePop();
  }
  void Finish() override {
    CHECK(cudaDeviceSynchronize());
    if (o_.fixed) sum_ += *pinned_;
  }

 private:
  float* out_ = nullptr;
  float* pinned_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  double sum_ = 0;
};

class DevSync : public Program {
 public:
  DevSync(const Options& o) : Program(o) { CHECK(cudaMalloc(&out_, sizeof(float))); }
  void Step(int) override {
    nvtxRangePushA("train");
    for (int k = 0; k < 8; ++k) ws_heldout_spin<<<132, 128>>>(250 * kUs, out_);
    if (!o_.fixed) CHECK(cudaDeviceSynchronize());
    HostWork(500 * 1000);
    nvtxRangePop();
  }

 private:
  float* out_ = nullptr;
};

Program* MakeProgram(const Options& o) {
  if (o.problem == "tinyloop") return new TinyLoop(o);
  if (o.problem == "readback") return new Readback(o);
  if (o.problem == "devsync") return new DevSync(o);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "ws_advise_heldout --problem tinyloop|readback|devsync [--fixed] [--steps N] [--warmup W]";
  const Options o = ParseStepOptions(argc, argv, 20, kUsage);
  Program* program = MakeProgram(o);
  if (program == nullptr) {
    std::fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
  }
  CHECK(cudaFree(nullptr));
  RunTimedSteps(*program, o.problem, o.fixed, o.warmup, o.steps);
  delete program;
  return 0;
}
