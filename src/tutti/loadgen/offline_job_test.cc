#include "tutti/loadgen/offline_job.h"

#include <deque>
#include <map>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

// Holds each request until the job's wait(): then answers every one held,
// its output the input's first value, or with `error` for items listed.
class HeldTransport final : public LoadTransport {
 public:
  absl::StatusOr<LoadTarget> Describe(const std::string& model) override { return LoadTarget{model, "x"}; }
  void Infer(const LoadTarget&, absl::Span<const float> data, const InferParameters&, Done done) override {
    held_.emplace_back(static_cast<int64_t>(data[0]), std::move(done));
    sent_ += 1;
    most_held_ = std::max<int64_t>(most_held_, static_cast<int64_t>(held_.size()));
  }
  absl::Status Prepare(int) override { return absl::OkStatus(); }
  void RunAt(std::chrono::steady_clock::time_point, std::function<void()> fn) override { fn(); }

  // Answers every request held; returns how many.
  int64_t AnswerAll() {
    std::deque<std::pair<int64_t, Done>> now;
    now.swap(held_);  // answers send more: those wait for the next poll
    for (auto& [item, done] : now) {
      LoadAnswer a;
      auto e = errors.find(item);
      if (e != errors.end() && e->second.second > 0) {
        a.error = e->second.first;
        --e->second.second;
      } else {
        a.output = {static_cast<float>(item)};
      }
      done(std::move(a));
    }
    return static_cast<int64_t>(now.size());
  }
  std::map<int64_t, std::pair<std::string, int>> errors;  // item → (error, times)
  int64_t sent_ = 0, most_held_ = 0;

 private:
  std::deque<std::pair<int64_t, Done>> held_;
};

// The server's statistics, one poll per second: the model ends what the
// job's answers were plus `online[k]` × peak requests of others at poll k.
struct Server {
  std::vector<double> online;  // load of others, per poll
  double peak = 100;
  int64_t ended = 0;
  int polls = 0;
};

struct JobRun {
  absl::StatusOr<std::vector<OfflineAnswer>> answers;
  std::vector<OfflineProgress> progress;
  int64_t most_held = 0, sent = 0;
};

JobRun RunJob(int64_t total, Server server, HeldTransport& transport, OfflineJobOptions options = {}) {
  JobRun run;
  int64_t own = 0;  // answers the transport gave since the last reading
  OfflineJobIo io;
  io.transport = &transport;
  io.target = {"m", "x"};
  io.input = [](int64_t i) { return std::vector<float>{static_cast<float>(i)}; };
  io.read_load = [&]() -> absl::StatusOr<ModelLoadReading> {
    const double others =
        server.polls == 0 ? 0 : server.online[std::min<size_t>(server.polls - 1, server.online.size() - 1)];
    server.ended += own + static_cast<int64_t>(others * server.peak);
    own = 0;
    return ModelLoadReading{server.polls++ * kSecond, server.ended, server.peak};
  };
  io.wait = [&] { own += transport.AnswerAll(); };
  io.progress = [&](const OfflineProgress& p) { run.progress.push_back(p); };
  run.answers = RunOfflineJob(total, io, options);
  run.most_held = transport.most_held_;
  run.sent = transport.sent_;
  return run;
}

TEST(OfflineJobTest, PausesWhileTheOnlineLoadIsAboveTheThresholdAndAnswersEveryItemInOrder) {
  HeldTransport transport;
  // Polls 1-2: online load 0.1; 3-4: 0.6 (paused); then 0.2.
  JobRun run = RunJob(100, Server{{0.1, 0.1, 0.6, 0.6, 0.2}}, transport, {.pause_above = 0.4, .in_flight = 8});
  ASSERT_TRUE(run.answers.ok()) << run.answers.status();
  ASSERT_EQ(run.answers->size(), 100u);
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_EQ((*run.answers)[i].output, std::vector<float>{static_cast<float>(i)}) << i;
    EXPECT_EQ((*run.answers)[i].error, "");
  }
  EXPECT_LE(run.most_held, 8) << "never more than in_flight at the server";
  EXPECT_EQ(run.sent, 100);
  // Paused at the polls that read 0.6, and sent nothing new while paused.
  ASSERT_GE(run.progress.size(), 5u);
  EXPECT_FALSE(run.progress[1].paused);
  EXPECT_TRUE(run.progress[2].paused);
  EXPECT_NEAR(run.progress[2].online_load, 0.6, 1e-9) << "the job's own answers are not online load";
  EXPECT_TRUE(run.progress[3].paused);
  EXPECT_FALSE(run.progress[4].paused);
  EXPECT_EQ(run.progress[3].answered, run.progress[2].answered + 8) << "what was in flight at the pause ends";
  EXPECT_EQ(run.progress[4].answered, run.progress[3].answered) << "nothing new was sent while paused";
  EXPECT_EQ(run.progress.back().pauses, 1);
  EXPECT_EQ(run.progress.back().paused_time, 2 * kSecond);
  EXPECT_EQ(run.progress.back().answered, 100);
}

TEST(OfflineJobTest, RetriesWhatTheServerRefusedAndReportsWhatFailedForGood) {
  HeldTransport transport;
  transport.errors[3] = {"HTTP 503", 2};      // refused twice, then answered
  transport.errors[5] = {"HTTP 503", 99};     // refused every time
  transport.errors[7] = {"HTTP 400", 1};      // bad input: not sent again
  JobRun run = RunJob(10, Server{{0.0}}, transport, {.in_flight = 4, .attempts = 3});
  ASSERT_TRUE(run.answers.ok()) << run.answers.status();
  const std::vector<OfflineAnswer>& a = *run.answers;
  EXPECT_EQ(a[3].error, "");
  EXPECT_EQ(a[3].attempts, 3);
  EXPECT_EQ(a[5].error, "HTTP 503");
  EXPECT_EQ(a[5].attempts, 3);
  EXPECT_EQ(a[7].error, "HTTP 400");
  EXPECT_EQ(a[7].attempts, 1);
  EXPECT_EQ(run.progress.back().failed, 2);
  EXPECT_EQ(run.progress.back().answered, 8);
}

TEST(OfflineJobTest, AnUnknownPeakIsAnErrorUnlessTheJobNeverPauses) {
  HeldTransport transport;
  JobRun unknown = RunJob(5, Server{{0.0}, 0.0}, transport);
  EXPECT_EQ(unknown.answers.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unknown.answers.status().message(), HasSubstr("--pause-above 0"));
  EXPECT_EQ(unknown.sent, 0);
  HeldTransport never;
  JobRun anyway = RunJob(5, Server{{0.9}, 0.0}, never, {.pause_above = 0});
  ASSERT_TRUE(anyway.answers.ok()) << anyway.answers.status();
  EXPECT_EQ(anyway.sent, 5) << "pause_above 0: never paused, whatever the load";
  EXPECT_EQ(anyway.progress.back().pauses, 0);
}

TEST(OfflineJobTest, ParsesTheServersStatistics) {
  absl::StatusOr<ModelLoadReading> r = ParseModelLoad(
      R"({"model_name":"m","success":5,"late":1,"dropped":2,"error":0,"rejected":1,"overloaded":3,"peak_rps":250.5})",
      7);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ended, 12);
  EXPECT_EQ(r->peak_rps, 250.5);
  EXPECT_EQ(r->at, 7);
  // As the server sends them: Triton's shape, Tutti's figures under "tutti".
  r = ParseModelLoad(R"({"model_stats":[{"name":"m","inference_stats":{"success":{"count":9,"ns":1}},"tutti":)"
                     R"({"success":5,"late":1,"dropped":2,"error":0,"rejected":1,"overloaded":3,"peak_rps":2.5}}]})",
                     7);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ended, 12);
  EXPECT_EQ(r->peak_rps, 2.5);
  EXPECT_THAT(ParseModelLoad(R"({"success":5})", 0).status().message(), HasSubstr("'late'"));
  EXPECT_THAT(ParseModelLoad("nope", 0).status().message(), HasSubstr("not a JSON object"));
  EXPECT_DOUBLE_EQ(OnlineLoad({0, 100, 50}, {2 * kSecond, 300, 50}, 100), 1.0);  // (200 - 100) / 2 s / 50
  EXPECT_EQ(OnlineLoad({0, 100, 50}, {0, 300, 50}, 0), 0) << "no time passed";
}

}  // namespace
}  // namespace tutti
