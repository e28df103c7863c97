// `advise --short-names`: the findings name kernels inside sentences ("long tail in NAME",
// "work: A, B"), so the whole names are swapped for short ones where they stand.
#include <string>

#include "analyzers/analyses/advise/advise.h"

namespace warpscope {

void ShortenKernelNames(const TraceModel& model, AdviseReport& report) {
  report.names = KernelNames::Short(KernelDisplayNames(model));
  for (AdviseFinding& f : report.findings) {
    for (std::string* text : {&f.title, &f.kernel, &f.evidence, &f.fix}) {
      *text = report.names.ShortenIn(*text);
    }
  }
  report.headline = report.names.ShortenIn(report.headline);
  for (std::string& note : report.notes) note = report.names.ShortenIn(note);
}

}  // namespace warpscope
