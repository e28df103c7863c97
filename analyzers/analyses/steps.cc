// Training steps from NVTX ranges (see steps.h).
#include "analyzers/analyses/steps.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace warpscope {
namespace {

struct Family {
  std::string name;
  uint64_t thread_id = 0;
  std::vector<const NvtxRange*> ranges;
  uint32_t min_depth = UINT32_MAX;
  bool numbered = false;
};

bool NamesStep(std::string_view family) {
  std::string lower(family);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("step") != std::string::npos || lower.find("iter") != std::string::npos ||
         lower.find("batch") != std::string::npos;
}

// Instances that follow each other without overlap, at least two of them.
bool Repeats(const Family& f) {
  if (f.ranges.size() < 2) return false;
  for (size_t i = 1; i < f.ranges.size(); ++i) {
    if (f.ranges[i]->start_ns < f.ranges[i - 1]->end_ns()) return false;
  }
  return true;
}

std::vector<Family> Families(const std::vector<NvtxRange>& ranges) {
  std::map<std::pair<std::string_view, uint64_t>, Family> by_key;
  for (const NvtxRange& r : ranges) {
    if (r.domain == "NCCL" || r.name.empty()) continue;
    const std::string_view family = StepFamily(r.name);
    Family& f = by_key[{family, r.thread_id}];
    f.name = std::string(family);
    f.thread_id = r.thread_id;
    f.ranges.push_back(&r);
    f.min_depth = std::min(f.min_depth, r.depth);
    f.numbered = f.numbered || family.size() != r.name.size();
  }
  std::vector<Family> out;
  for (auto& [key, f] : by_key) {
    std::sort(f.ranges.begin(), f.ranges.end(),
              [](const NvtxRange* a, const NvtxRange* b) { return a->start_ns < b->start_ns; });
    if (Repeats(f)) out.push_back(std::move(f));
  }
  return out;
}

StepSet MakeSteps(const Family& f, std::string how) {
  StepSet set;
  set.family = f.name;
  set.thread_id = f.thread_id;
  set.how = std::move(how);
  for (size_t i = 0; i < f.ranges.size(); ++i) {
    const NvtxRange& r = *f.ranges[i];
    Step s;
    s.name = std::string(r.name);
    if (f.numbered && r.name.size() > f.name.size()) {
      uint64_t n = 0;
      for (char c : r.name.substr(f.name.size())) n = n * 10 + static_cast<uint64_t>(c - '0');
      s.number = n;
    }
    s.start_ns = r.start_ns;
    s.range_end_ns = r.end_ns();
    s.end_ns = i + 1 < f.ranges.size() ? f.ranges[i + 1]->start_ns : r.end_ns();
    set.steps.push_back(std::move(s));
  }
  return set;
}

// The family that comes first under `better` among those `eligible` allows.
template <typename Eligible>
const Family* Best(const std::vector<Family>& families, Eligible eligible) {
  const Family* best = nullptr;
  for (const Family& f : families) {
    if (!eligible(f)) continue;
    auto key = [](const Family& x) {
      return std::make_tuple(x.min_depth, -static_cast<int64_t>(x.ranges.size()),
                             x.ranges.front()->start_ns);
    };
    if (best == nullptr || key(f) < key(*best)) best = &f;
  }
  return best;
}

}  // namespace

std::string_view StepFamily(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  return end == 0 ? name : name.substr(0, end);
}

int64_t StepSet::StepAt(uint64_t ns) const {
  auto it = std::upper_bound(steps.begin(), steps.end(), ns,
                             [](uint64_t t, const Step& s) { return t < s.start_ns; });
  if (it == steps.begin()) return -1;
  const size_t i = static_cast<size_t>(it - steps.begin()) - 1;
  return ns < steps[i].end_ns ? static_cast<int64_t>(i) : -1;
}

StepSet FindSteps(const std::vector<NvtxRange>& ranges, std::string_view requested) {
  const std::vector<Family> families = Families(ranges);
  if (!requested.empty()) {
    const std::string_view want = StepFamily(requested);
    const Family* f = Best(families, [&](const Family& x) { return x.name == want; });
    if (f != nullptr) return MakeSteps(*f, absl::StrCat("NVTX range ", f->name, "<N> (--step)"));
    StepSet none;
    none.how = absl::StrCat("no repeated NVTX range named ", std::string(requested), " (--step)");
    return none;
  }
  if (const Family* f = Best(families, [](const Family& x) { return x.numbered; })) {
    return MakeSteps(*f, absl::StrCat("numbered NVTX range ", f->name, "<N>"));
  }
  if (const Family* f = Best(families, [](const Family& x) { return NamesStep(x.name); })) {
    return MakeSteps(*f, absl::StrCat("repeated NVTX range ", f->name));
  }
  if (const Family* f = Best(families, [](const Family&) { return true; })) {
    return MakeSteps(*f, absl::StrCat("repeated NVTX range ", f->name,
                                      " (no numbered or step range; choose one with --step)"));
  }
  StepSet none;
  none.how = "no repeated NVTX range: no steps";
  return none;
}

}  // namespace warpscope
