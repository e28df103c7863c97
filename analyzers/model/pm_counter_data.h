// Turns raw PM samples (PmCounterData records: CUPTI counter data images written by the
// process) into PmSample values when a trace has loaded, with CUPTI's host API
// (cupti_host.h). CUPTI trusts the image it is given and crashes on a corrupt one, so the
// evaluation runs in a child process: a bad trace costs its PM samples, never the analysis.
#ifndef WARPSCOPE_ANALYZERS_MODEL_PM_COUNTER_DATA_H_
#define WARPSCOPE_ANALYZERS_MODEL_PM_COUNTER_DATA_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

class PmCounterDataImporter {
 public:
  // Keeps `record` (of metric set `set`, nullptr when undefined: counted) for Finish.
  void Add(const PmMetricSet* set, const v1::PmCounterData& record);
  // Evaluates every kept sample and appends the samples of sets that have no in-process
  // PmSample records (`sets_with_values`: a set recorded with both keeps the process's values)
  // to model->pm_samples; sets model->pm_samples_unavailable when some could not be evaluated.
  void Finish(TraceModel* model, const std::set<uint32_t>& sets_with_values);

  struct Counts {
    uint64_t evaluated = 0;          // samples turned into values
    uint64_t not_evaluated = 0;      // samples left raw: no CUPTI, unknown chip, a crash, ...
    uint64_t evaluation_errors = 0;  // samples CUPTI refused (corrupt image or index)
    uint64_t malformed_records = 0;  // arrays of different lengths, no metric set, no chip
    uint64_t superseded = 0;         // samples of sets that also have in-process values
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Raw {
    uint32_t set_id;
    std::string image;
    std::vector<uint32_t> sample_index;
    std::vector<uint64_t> start_ns;
    std::vector<uint64_t> duration_ns;
  };
  // Runs in the child process: evaluates every kept sample and writes, per sample, a status
  // byte (0 evaluated, 1 refused by CUPTI, 2 no evaluator) and the values, then the first
  // problem's length and text.
  void EvaluateAll(const TraceModel& model, int fd) const;
  // Reads what EvaluateAll wrote from `bytes` at `*offset`, counting each sample; clears
  // `*stream_ok` where the output ends early.
  std::vector<PmSample> ReadResults(const TraceModel& model, const std::string& bytes,
                                    size_t* offset, bool* stream_ok);

  Counts counts_;
  std::vector<Raw> raw_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_PM_COUNTER_DATA_H_
