// A test fixture for collectors that write through a real TraceWriter: a fresh file under the
// test temp dir, and the file read back with the TraceModel once the writer is closed.
#ifndef WARPSCOPE_TESTS_COLLECTORS_WRITTEN_TRACE_TEST_H_
#define WARPSCOPE_TESTS_COLLECTORS_WRITTEN_TRACE_TEST_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "proto/writer/trace_writer.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {

class WrittenTraceTest : public ::testing::Test {
 protected:
  // Opens writer_ on "<producer>.wst", with `header` naming `producer`; `options.path` is set
  // here. Call it through ASSERT_NO_FATAL_FAILURE.
  void OpenWriter(const std::string& producer, HeaderRecord header,
                  TraceWriterOptions options = {}) {
    path_ = WriteTempFile("", producer + ".wst");
    std::remove(path_.c_str());
    header.producer = producer;
    options.path = path_;
    std::string error;
    writer_ = TraceWriter::Open(options, header, &error);
    ASSERT_NE(writer_, nullptr) << error;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  // Closes the writer with its end at `end_ns` and reads the file; aborts the test binary when
  // it does not load (every test after would read nothing).
  TraceModel CloseAndLoad(uint64_t end_ns) {
    writer_->Close(EndReason::kExit, end_ns);
    absl::StatusOr<TraceModel> model = TraceModel::Load(path_);
    if (!model.ok()) {
      std::fprintf(stderr, "cannot load %s: %s\n", path_.c_str(),
                   std::string(model.status().message()).c_str());
      std::abort();
    }
    return std::move(*model);
  }

  std::string path_;
  std::unique_ptr<TraceWriter> writer_;
};

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_COLLECTORS_WRITTEN_TRACE_TEST_H_
