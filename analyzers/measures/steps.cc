// Training steps from NVTX ranges (see steps.h).
#include "analyzers/measures/steps.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analyzers/measures/median.h"
#include "analyzers/model/interval_union.h"

namespace warpscope {
namespace {

struct Family {
  std::string name;
  uint64_t thread_id = 0;
  std::vector<const NvtxRange*> ranges;
  uint32_t min_depth = UINT32_MAX;
  bool numbered = false;
  bool library = false;  // IsLibraryRange: never chosen without --step-range
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
  std::map<std::pair<std::string, uint64_t>, Family> by_key;
  for (const NvtxRange& r : ranges) {
    if (r.domain == "NCCL" || r.name.empty()) continue;
    std::string family = RangeFamily(r.name);
    const bool numbered = family != r.name;
    Family& f = by_key[{family, r.thread_id}];
    if (f.ranges.empty()) f.name = std::move(family);
    f.thread_id = r.thread_id;
    f.ranges.push_back(&r);
    f.min_depth = std::min(f.min_depth, r.depth);
    f.numbered = f.numbered || numbered;
    f.library = f.library || IsLibraryRange(r.name, r.domain);
  }
  std::vector<Family> out;
  for (auto& [key, f] : by_key) {
    std::sort(f.ranges.begin(), f.ranges.end(),
              [](const NvtxRange* a, const NvtxRange* b) { return a->start_ns < b->start_ns; });
    if (Repeats(f)) out.push_back(std::move(f));
  }
  return out;
}

// The last number in a name ("epoch 3 step 12" -> 12); none when it has no digits.
std::optional<uint64_t> LastNumber(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  if (end == 0) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  uint64_t n = 0;
  for (char c : name.substr(begin, std::min<size_t>(end - begin, 19))) {
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
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
    if (f.numbered) s.number = LastNumber(r.name);
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

bool IsLetter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Whether `name` ends with a word that names a step ("...step", "ProfilerStep", "iter").
bool EndsWithStepWord(std::string_view name) {
  size_t begin = name.size();
  while (begin > 0 && IsLetter(name[begin - 1])) --begin;
  std::string word(name.substr(begin));
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view w : {"step", "iter", "iteration", "batch", "epoch"}) {
    if (word.size() >= w.size() && word.compare(word.size() - w.size(), w.size(), w) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool IsLibraryRange(std::string_view name, std::string_view domain) {
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string d = lower(domain);
  for (std::string_view library : {"nccl", "cccl", "cub", "cudnn", "cublas", "cublaslt",
                                   "nvshmem"}) {
    if (d == library) return true;
  }
  const std::string n = lower(name.substr(0, 16));
  for (std::string_view prefix :
       {"cub::", "thrust::", "cuda::", "cutlass::", "aten::", "autograd::", "torch::", "at::",
        "c10::", "c10d::", "nccl", "cudnn", "cublas", "cusparse", "cufft", "curand"}) {
    if (std::string_view(n).substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::string RangeFamily(std::string_view name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    if (!IsDigit(name[i])) {
      out.push_back(name[i++]);
      continue;
    }
    size_t end = i;
    while (end < name.size() && IsDigit(name[end])) ++end;
    const bool letter_before = i > 0 && IsLetter(name[i - 1]);
    const bool letter_after = end < name.size() && IsLetter(name[end]);
    const bool number =
        !letter_after && (!letter_before || EndsWithStepWord(name.substr(0, i)));
    if (number) {
      out += "<N>";
    } else {
      out.append(name.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

size_t WarmupSteps(const StepSet& steps) {
  std::vector<uint64_t> durations;
  for (const Step& s : steps.steps) durations.push_back(s.duration_ns());
  const double median = static_cast<double>(MedianOf(durations));
  size_t n = 0;
  while (n < durations.size() / 2 &&
         static_cast<double>(durations[n]) >= kWarmupFactor * median) {
    ++n;
  }
  return n;
}

SteadyStepTime SteadyStepTimeOf(const StepSet& steps, size_t warmup) {
  SteadyStepTime t;
  for (size_t i = warmup; i < steps.steps.size(); ++i) {
    ++t.steps;
    t.ns += steps.steps[i].duration_ns();
  }
  return t;
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
    // A range's name ("step_12"), its family ("step_<N>") or the family without <N> ("step_").
    const std::string want = RangeFamily(requested);
    const std::string bare = absl::StrCat(std::string(requested), "<N>");
    const Family* f =
        Best(families, [&](const Family& x) { return x.name == want || x.name == bare; });
    if (f != nullptr) return MakeSteps(*f, absl::StrCat("NVTX range ", f->name, " (--step-range)"));
    StepSet none;
    none.how = absl::StrCat("no repeated NVTX range named ", std::string(requested), " (--step-range)");
    return none;
  }
  // A library's ranges (CUB's around each reduction, PyTorch's per operator) repeat as often as
  // the calls they wrap: they are never taken for the program's steps unless asked for.
  std::string libraries;
  for (const Family& f : families) {
    if (f.library && libraries.size() < 200) {
      absl::StrAppend(&libraries, libraries.empty() ? "" : ", ", f.name);
    }
  }
  const std::string left_out =
      libraries.empty() ? "" : absl::StrCat("; library ranges left out: ", libraries);
  if (const Family* f =
          Best(families, [](const Family& x) { return !x.library && x.numbered; })) {
    return MakeSteps(*f, absl::StrCat("numbered NVTX range ", f->name, left_out));
  }
  if (const Family* f =
          Best(families, [](const Family& x) { return !x.library && NamesStep(x.name); })) {
    return MakeSteps(*f, absl::StrCat("repeated NVTX range ", f->name, left_out));
  }
  if (const Family* f = Best(families, [](const Family& x) { return !x.library; })) {
    StepSet guess = MakeSteps(*f, absl::StrCat("repeated NVTX range ", f->name,
                                               " (no numbered or step range; choose one with "
                                               "--step-range",
                                               left_out, ")"));
    guess.guessed = true;
    return guess;
  }
  StepSet none;
  none.how = libraries.empty()
                 ? "no repeated NVTX range: no steps"
                 : absl::StrCat("no repeated NVTX range of the program's own: no steps (library "
                                "ranges left out: ",
                                libraries, "; name one with --step-range)");
  return none;
}

namespace {

// When `thread` was blocked waiting for the GPU: synchronize calls and synchronisation records,
// and copy calls that returned only after their copy had ended. Merged.
std::vector<TimeInterval> BlockedOn(const TraceModel& model, uint64_t thread) {
  std::vector<TimeInterval> blocked;
  std::unordered_map<uint32_t, const ApiCallEvent*> call_of;
  for (const ApiCallEvent& a : model.api_calls) {
    if (a.thread_id != thread) continue;
    if (a.name.find("Synchronize") != std::string_view::npos) {
      blocked.push_back({a.start_ns, a.end_ns()});
    } else if (a.correlation_id != 0) {
      call_of.emplace(a.correlation_id, &a);
    }
  }
  for (const SyncEvent& e : model.syncs) {
    if (e.thread_id == thread && e.kind != v1::SYNC_KIND_STREAM_WAIT_EVENT) {
      blocked.push_back({e.start_ns, e.end_ns()});
    }
  }
  for (const MemcpyEvent& c : model.memcpys) {
    auto it = call_of.find(c.correlation_id);
    if (c.correlation_id != 0 && it != call_of.end() && it->second->end_ns() >= c.end_ns()) {
      blocked.push_back({it->second->start_ns, it->second->end_ns()});
    }
  }
  return MergedIntervals(std::move(blocked));
}

}  // namespace

std::map<std::string, uint64_t> HostTimePerStep(const TraceModel& model, const StepSet& steps) {
  if (steps.steps.empty()) return {};
  return HostTimePerStep(model.nvtx_ranges, steps, BlockedOn(model, steps.thread_id));
}

std::map<std::string, uint64_t> HostTimePerStep(const std::vector<NvtxRange>& ranges,
                                                const StepSet& steps,
                                                const std::vector<TimeInterval>& blocked) {
  std::map<std::string, uint64_t> out;
  if (steps.steps.empty()) return out;
  const uint64_t begin = steps.steps.front().start_ns, end = steps.steps.back().end_ns;
  // Range boundaries on the thread within the steps: +(i+1) opens range i, -(i+1) closes it.
  std::vector<std::pair<uint64_t, int64_t>> edges;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const NvtxRange& r = ranges[i];
    if (r.thread_id != steps.thread_id || r.domain == "NCCL") continue;
    const uint64_t from = std::max(r.start_ns, begin), to = std::min(r.end_ns(), end);
    // An empty range holds no time; its close, sorted before its open, would leave it open.
    if (to <= from) continue;
    edges.emplace_back(from, static_cast<int64_t>(i) + 1);
    edges.emplace_back(to, -static_cast<int64_t>(i) - 1);
  }
  edges.emplace_back(begin, 0);
  for (const Step& s : steps.steps) edges.emplace_back(s.end_ns, 0);  // step boundaries
  std::sort(edges.begin(), edges.end());
  // Time per path and step; a path's string is made once per change of the open ranges.
  std::map<std::string, std::vector<uint64_t>> per_step;
  std::vector<size_t> open;  // indices into nvtx_ranges, in the order they opened
  std::string path;
  bool path_stale = false;
  size_t blocked_from = 0;
  for (size_t e = 0; e + 1 < edges.size(); ++e) {
    const auto [t, change] = edges[e];
    if (change > 0) {
      open.push_back(static_cast<size_t>(change - 1));
      path_stale = true;
    } else if (change < 0) {
      auto it = std::find(open.begin(), open.end(), static_cast<size_t>(-change - 1));
      if (it != open.end()) open.erase(it);
      path_stale = true;
    }
    const uint64_t next = edges[e + 1].first;
    if (next <= t) continue;
    if (path_stale) {
      std::vector<size_t> outer_first = open;
      std::stable_sort(outer_first.begin(), outer_first.end(), [&](size_t a, size_t b) {
        return ranges[a].depth < ranges[b].depth;
      });
      path.clear();
      for (size_t i : outer_first) {
        if (!path.empty()) path.push_back('/');
        path += RangeFamily(ranges[i].name);
      }
      path_stale = false;
    }
    const int64_t step = steps.StepAt(t);
    if (step < 0) continue;
    while (blocked_from < blocked.size() && blocked[blocked_from].end_ns <= t) ++blocked_from;
    uint64_t waited = 0;
    for (size_t b = blocked_from; b < blocked.size() && blocked[b].begin_ns < next; ++b) {
      waited += std::min(next, blocked[b].end_ns) - std::max(t, blocked[b].begin_ns);
    }
    std::vector<uint64_t>& v = per_step[path];
    v.resize(steps.steps.size(), 0);
    v[static_cast<size_t>(step)] += next - t - waited;
  }
  for (auto& [p, v] : per_step) out[p] = MedianOf(std::move(v));
  return out;
}

}  // namespace warpscope
