#include "tutti/serving/inference_engine.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/tracing/tracer.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Capture : SpanExporter {
  explicit Capture(std::string* out) : out(out) {}
  absl::Status Export(const std::string& json) override {
    *out += json;
    return absl::OkStatus();
  }
  std::string* out;
};

// What an item's outcome says of its life becomes its spans: "queue" and
// "compute", and "replicate" for a replicated stateful batch's hand-off.
TEST(RecordRequestSpansTest, AReplicatedBatchsHandOffIsItsOwnSpan) {
  for (const Time released : {Time{0}, Millis(13)}) {
    SCOPED_TRACE(released);
    ManualClock clock;
    std::string json;
    std::vector<std::unique_ptr<SpanExporter>> exporters;
    exporters.push_back(std::make_unique<Capture>(&json));
    TracerOptions options;
    options.sampling_ratio = 1;
    Tracer tracer(options, &clock, std::move(exporters));
    InferenceOutcome out;
    out.arrival = Millis(1);
    out.started = Millis(4);
    out.finished = Millis(10);
    out.batch_size = 2;
    out.released = released;
    RecordRequestSpans(tracer, tracer.StartRequest(std::nullopt), "counter", out);
    tracer.Flush();
    EXPECT_THAT(json, HasSubstr(R"("name":"queue")"));
    EXPECT_THAT(json, HasSubstr(R"("name":"compute")"));
    if (released == 0) {
      EXPECT_THAT(json, Not(HasSubstr("replicate")));
    } else {
      EXPECT_THAT(json, HasSubstr(R"("name":"replicate")"));
      EXPECT_THAT(json, HasSubstr(R"("key":"tutti.held_us","value":{"intValue":"3000"})"));
    }
  }
}

}  // namespace
}  // namespace tutti
