// PmCounterDataImporter: records are kept while the trace loads; Finish runs a child process
// (child_process.h) that loads libcupti, makes one host object per metric set, evaluates every
// sample and sends the values back: per sample one status byte, then the values.
#include "analyzers/model/pm_counter_data.h"

#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analyzers/model/child_process.h"
#include "analyzers/model/cupti_host.h"

namespace warpscope {
namespace {

// Why samples were left unevaluated: the child's first problem, or how the child failed.
std::string EvaluationProblem(const ChildOutput& child, size_t offset, bool stream_ok) {
  std::string problem = stream_ok ? TakeText(child.bytes, &offset) : "";
  if (!child.completed && child.failure.starts_with("crashed")) {
    problem = absl::StrCat("CUPTI ", child.failure,
                           " evaluating them: the trace's counter data is corrupt");
  } else if (!child.completed && child.failure.starts_with("ended")) {
    problem = absl::StrCat("the evaluating process ", child.failure);
  } else if (!child.completed) {
    problem = child.failure;
  } else if (!stream_ok && problem.empty()) {
    problem = "the evaluating process ended early";
  }
  return problem;
}

}  // namespace

void PmCounterDataImporter::Add(const PmMetricSet* set, const v1::PmCounterData& record) {
  if (set == nullptr || set->chip_name.empty() ||
      record.start_ns_size() != record.sample_index_size() ||
      record.duration_ns_size() != record.sample_index_size()) {
    ++counts_.malformed_records;
    return;
  }
  raw_.push_back({set->id,
                  record.image(),
                  {record.sample_index().begin(), record.sample_index().end()},
                  {record.start_ns().begin(), record.start_ns().end()},
                  {record.duration_ns().begin(), record.duration_ns().end()}});
}

void PmCounterDataImporter::EvaluateAll(const TraceModel& model, int fd) const {
  std::map<uint32_t, std::unique_ptr<PmCounterDataEvaluator>> evaluators;
  std::string first_problem;
  std::vector<double> values;
  for (const Raw& r : raw_) {
    const PmMetricSet* set = model.FindPmMetricSet(r.set_id);
    auto it = evaluators.find(r.set_id);
    if (it == evaluators.end()) {
      auto made = MakePmCounterDataEvaluator(
          set->chip_name,
          std::span<const uint8_t>(
              reinterpret_cast<const uint8_t*>(set->counter_availability.data()),
              set->counter_availability.size()),
          set->metric_names);
      if (!made.ok() && first_problem.empty()) first_problem = std::string(made.status().message());
      it = evaluators.emplace(r.set_id, made.ok() ? *std::move(made) : nullptr).first;
    }
    const std::span<const uint8_t> image(reinterpret_cast<const uint8_t*>(r.image.data()),
                                         r.image.size());
    for (uint32_t index : r.sample_index) {
      uint8_t status = 2;
      if (it->second != nullptr) {
        const absl::Status st = it->second->Evaluate(image, index, &values);
        status = st.ok() ? 0 : 1;
        if (!st.ok() && first_problem.empty()) first_problem = std::string(st.message());
      }
      if (!WriteAll(fd, &status, 1)) _exit(3);
      if (status == 0 &&
          (values.size() != set->metric_names.size() ||
           !WriteAll(fd, values.data(), values.size() * sizeof(double)))) {
        _exit(3);
      }
    }
  }
  WriteText(fd, first_problem);
}

std::vector<PmSample> PmCounterDataImporter::ReadResults(const TraceModel& model,
                                                         const std::string& bytes, size_t* offset,
                                                         bool* stream_ok) {
  std::vector<PmSample> evaluated;
  std::vector<double> values;
  for (const Raw& r : raw_) {
    const PmMetricSet* set = model.FindPmMetricSet(r.set_id);
    for (size_t i = 0; i < r.sample_index.size(); ++i) {
      uint8_t status = 2;
      if (*stream_ok && !TakeBytes(bytes, offset, &status, 1)) *stream_ok = false;
      if (!*stream_ok) {
        ++counts_.not_evaluated;
        continue;
      }
      if (status == 0) {
        values.resize(set->metric_names.size());
        if (!TakeBytes(bytes, offset, values.data(), values.size() * sizeof(double))) {
          *stream_ok = false;
          ++counts_.not_evaluated;
          continue;
        }
        ++counts_.evaluated;
        evaluated.push_back(
            {r.set_id, r.start_ns[i], r.duration_ns[i], values, set - model.pm_metric_sets.data()});
      } else if (status == 1) {
        ++counts_.evaluation_errors;
      } else {
        ++counts_.not_evaluated;
      }
    }
  }
  return evaluated;
}

void PmCounterDataImporter::Finish(TraceModel* model, const std::set<uint32_t>& sets_with_values) {
  // Sets that also have the process's values (recorded with `both`) keep those: their raw
  // samples are not evaluated.
  std::erase_if(raw_, [&](const Raw& r) {
    if (sets_with_values.count(r.set_id) == 0) return false;
    counts_.superseded += r.sample_index.size();
    return true;
  });
  if (raw_.empty()) return;
  // Evaluated in a child process (EvaluateAll), read back here.
  const ChildOutput child = RunInChildProcess([&](int fd) { EvaluateAll(*model, fd); });
  size_t offset = 0;
  bool stream_ok = true;
  std::vector<PmSample> evaluated = ReadResults(*model, child.bytes, &offset, &stream_ok);
  const std::string problem = EvaluationProblem(child, offset, stream_ok);
  raw_.clear();
  for (PmSample& s : evaluated) model->pm_samples.push_back(std::move(s));
  if (counts_.not_evaluated > 0 || counts_.evaluation_errors > 0) {
    model->pm_samples_unavailable =
        absl::StrCat(counts_.not_evaluated + counts_.evaluation_errors,
                     " raw PM samples could not be evaluated: ", problem);
  }
}

}  // namespace warpscope
