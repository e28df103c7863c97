// Offline probe: how many passes a PM sampling metric set needs on a chip, and which metrics
// the chip offers, from CUPTI's profiler host API alone (no GPU, no driver). Used to choose
// the `sol` metric set (docs/sol.md).
//   g++ -std=c++20 -I/usr/local/cuda/include bench/probes/pm_metric_passes.cc \
//       -L/usr/local/cuda/lib -lcupti -o /tmp/pm_metric_passes
//   pm_metric_passes GH100 passes m1,m2,...   # pass count of the set
//   pm_metric_passes GH100 list [counter|ratio|throughput] [SUBSTRING]
//   pm_metric_passes GH100 sub METRIC         # a base metric's sub-metrics
#include <cupti_profiler_host.h>
#include <cupti_result.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

template <typename P>
P Params(size_t size) {
  P p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = size;
  return p;
}

bool Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "%s: %s (%d)\n", what, text ? text : "?", static_cast<int>(r));
  return false;
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (comma > pos) out.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

int Passes(CUpti_Profiler_Host_Object* host, const std::string& list) {
  std::vector<std::string> names = Split(list);
  std::vector<const char*> ptrs;
  for (const std::string& n : names) ptrs.push_back(n.c_str());
  auto add = Params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = host;
  add.ppMetricNames = ptrs.data();
  add.numMetrics = ptrs.size();
  if (!Check(cuptiProfilerHostConfigAddMetrics(&add), "ConfigAddMetrics")) return 1;
  auto size = Params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = host;
  if (!Check(cuptiProfilerHostGetConfigImageSize(&size), "GetConfigImageSize")) return 1;
  std::vector<uint8_t> image(size.configImageSize);
  auto get = Params<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  get.pHostObject = host;
  get.configImageSize = image.size();
  get.pConfigImage = image.data();
  if (!Check(cuptiProfilerHostGetConfigImage(&get), "GetConfigImage")) return 1;
  auto passes = Params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  passes.configImageSize = image.size();
  passes.pConfigImage = image.data();
  if (!Check(cuptiProfilerHostGetNumOfPasses(&passes), "GetNumOfPasses")) return 1;
  std::printf("%zu metrics, %zu pass(es)\n", names.size(), passes.numOfPasses);
  return 0;
}

int List(CUpti_Profiler_Host_Object* host, const std::string& type, const char* filter) {
  auto p = Params<CUpti_Profiler_Host_GetBaseMetrics_Params>(
      CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE);
  p.pHostObject = host;
  p.metricType = type == "ratio"        ? CUPTI_METRIC_TYPE_RATIO
                 : type == "throughput" ? CUPTI_METRIC_TYPE_THROUGHPUT
                                        : CUPTI_METRIC_TYPE_COUNTER;
  if (!Check(cuptiProfilerHostGetBaseMetrics(&p), "GetBaseMetrics")) return 1;
  for (size_t i = 0; i < p.numMetrics; ++i) {
    if (filter == nullptr || std::strstr(p.ppMetricNames[i], filter) != nullptr) {
      std::printf("%s\n", p.ppMetricNames[i]);
    }
  }
  return 0;
}

int Sub(CUpti_Profiler_Host_Object* host, const char* metric) {
  for (CUpti_MetricType t : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO,
                             CUPTI_METRIC_TYPE_THROUGHPUT}) {
    auto p = Params<CUpti_Profiler_Host_GetSubMetrics_Params>(
        CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE);
    p.pHostObject = host;
    p.metricType = t;
    p.pMetricName = metric;
    if (cuptiProfilerHostGetSubMetrics(&p) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < p.numOfSubmetrics; ++i) std::printf("%s\n", p.ppSubMetrics[i]);
    return 0;
  }
  std::fprintf(stderr, "no sub-metrics for %s\n", metric);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CHIP passes LIST | list [TYPE] [SUB] | sub METRIC\n",
                 argv[0]);
    return 2;
  }
  auto init = Params<CUpti_Profiler_Host_Initialize_Params>(
      CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  init.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  init.pChipName = argv[1];
  if (!Check(cuptiProfilerHostInitialize(&init), "HostInitialize")) return 1;
  const std::string cmd = argv[2];
  if (cmd == "passes" && argc > 3) return Passes(init.pHostObject, argv[3]);
  if (cmd == "list") {
    return List(init.pHostObject, argc > 3 ? argv[3] : "counter", argc > 4 ? argv[4] : nullptr);
  }
  if (cmd == "sub" && argc > 3) return Sub(init.pHostObject, argv[3]);
  std::fprintf(stderr, "unknown command\n");
  return 2;
}
