// The import problems both readings of a trace count, TraceModel::Load (trace_model.cc) and
// the columnar decoder (trace_columns_samples.cc), under the rows of import_counters.h.
#ifndef WARPSCOPE_ANALYZERS_MODEL_IMPORT_PROBLEMS_H_
#define WARPSCOPE_ANALYZERS_MODEL_IMPORT_PROBLEMS_H_

#include <vector>

#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_model_samples.h"
#include "analyzers/model/trace_reader.h"

namespace warpscope {

// Appends what the reader met (truncation, references it could not resolve, what it does not
// know) to `out`, leaving out counts of 0.
void AppendReaderProblems(const TraceReader& reader, const TruncationInfo& truncation,
                          std::vector<StatCounter>* out);

// Appends what did not add up while descriptions and samples became tables, leaving out
// counts of 0.
void AppendSampleProblems(const SampleTableProblems& s, std::vector<StatCounter>* out);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_IMPORT_PROBLEMS_H_
