#include "tutti/frontend/inference_frontend.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An engine that holds every request until the test answers it.
class HoldingEngine final : public InferenceEngine {
 public:
  absl::Status Submit(ModelId, std::vector<float>, Duration, InferenceCallback done) override {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back(std::move(done));
    return absl::OkStatus();
  }
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration objective,
                          InferenceCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      flags_.push_back(context.cancel);
      levels_.push_back(context.level);
      delays_.push_back(context.delay_at);
    }
    return InferenceEngine::SubmitWith(model, context, std::move(input), objective, std::move(done));
  }
  // The cancel flag each item was submitted with.
  std::vector<std::shared_ptr<const CancelFlag>> flags() {
    std::lock_guard<std::mutex> lock(mu_);
    return flags_;
  }
  // The priority level each item was submitted at.
  std::vector<int> levels() {
    std::lock_guard<std::mutex> lock(mu_);
    return levels_;
  }
  // Each item's RequestContext::delay_at.
  std::vector<Time> delays() {
    std::lock_guard<std::mutex> lock(mu_);
    return delays_;
  }
  void StopAccepting() override {}
  void WaitIdle() override {}
  int64_t in_flight() const override { return static_cast<int64_t>(held_.size()); }
  std::vector<ModelCounters> Counters() const override { return {ModelCounters{}}; }
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return 0; }
  void OnAnswerWritten(const WrittenAnswer&) override {}
  DelayReport Delays() const override { return {}; }

  // Answers the oldest held request.
  void AnswerOne() {
    InferenceCallback done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = std::move(held_.front());
      held_.erase(held_.begin());
    }
    InferenceOutcome o;
    o.output = {1, 2, 3};
    done(std::move(o));
  }

 private:
  std::mutex mu_;
  std::vector<InferenceCallback> held_;
  std::vector<std::shared_ptr<const CancelFlag>> flags_;
  std::vector<int> levels_;
  std::vector<Time> delays_;
};

class AdmissionTest : public ::testing::Test {
 protected:
  AdmissionTest() {
    ModelConfig config;
    config.name = "mlp";
    config.inputs = {{"image", DataType::kFp32, {2}}};
    config.outputs = {{"logits", DataType::kFp32, {3}}};
    frontend_ = std::make_unique<InferenceFrontend>(&engine_, std::vector<InferenceFrontend::ServedModel>{{config, 1}},
                                                    InferenceFrontend::Options{.max_queue_size = 4});
  }
  // Infers `batch` items; the answer lands in *out.
  void Infer(int batch, std::optional<absl::Status>* out) {
    InferRequest r;
    r.batch = batch;
    r.data.assign(2 * batch, 0.5f);
    frontend_->Infer(0, std::move(r), [out](absl::StatusOr<InferenceFrontend::InferResult> result) {
      *out = result.status();
    });
  }

  HoldingEngine engine_;
  std::unique_ptr<InferenceFrontend> frontend_;
};

TEST_F(AdmissionTest, RequestsBeyondTheQueueLimitAreRefusedAtOnceAndPlacesFreeAsAnswersGo) {
  std::optional<absl::Status> a, b, refused, later;
  Infer(3, &a);
  Infer(1, &b);  // 4 items: the limit
  Infer(1, &refused);
  ASSERT_TRUE(refused.has_value());  // at once, not queued
  EXPECT_EQ(refused->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused->message(), HasSubstr("max_queue_size"));
  EXPECT_EQ(engine_.in_flight(), 4);  // the refused request never reached the engine
  EXPECT_THAT(frontend_->StatsJson(0), HasSubstr(R"("overloaded":1,"queued":4)"));
  EXPECT_THAT(frontend_->PrometheusText(), HasSubstr(R"(tutti_requests_total{model="mlp",outcome="overloaded"} 1)"));
  engine_.AnswerOne();  // one item of `a`: its request still holds its 3 places
  Infer(1, &later);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->code(), absl::StatusCode::kResourceExhausted);
  engine_.AnswerOne();
  engine_.AnswerOne();  // `a` answered: 3 places free
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->ok());
  later.reset();
  Infer(3, &later);
  EXPECT_FALSE(later.has_value());  // accepted, held
  EXPECT_EQ(engine_.in_flight(), 4);
}

// Triton's priority reaches the engine as the model's level (0 first):
// 0, or a level the model lacks, is its default.
TEST(PriorityTest, ARequestsPriorityReachesTheEngineAsTheModelsLevel) {
  HoldingEngine engine;
  ModelConfig config;
  config.name = "mlp";
  config.inputs = {{"image", DataType::kFp32, {2}}};
  config.outputs = {{"logits", DataType::kFp32, {3}}};
  config.priority_levels = 3;
  config.default_priority_level = 2;
  InferenceFrontend frontend(&engine, {{config, 1}}, {});
  for (uint64_t priority : {1, 3, 0, 7}) {
    InferRequest r;
    r.batch = 2;
    r.data.assign(4, 0.5f);
    r.priority = priority;
    frontend.Infer(0, std::move(r), [](absl::StatusOr<InferenceFrontend::InferResult>) {});
  }
  EXPECT_EQ(engine.levels(), (std::vector<int>{0, 0, 2, 2, 1, 1, 1, 1}));
  for (int i = 0; i < 8; ++i) engine.AnswerOne();
}

// Triton's queue policies, per level: priority 1 may hold 2 items, and
// takes no timeout; priority 2 has the default policy, whose timeout of
// 1 ms no request may replace.
TEST(PriorityTest, EachLevelHasItsQueuePolicysLimitAndTimeout) {
  HoldingEngine engine;
  ModelConfig config;
  config.name = "mlp";
  config.inputs = {{"image", DataType::kFp32, {2}}};
  config.outputs = {{"logits", DataType::kFp32, {3}}};
  config.priority_levels = 2;
  config.default_priority_level = 2;
  config.default_queue_policy = QueuePolicy{.default_timeout_us = 1000};
  config.priority_queue_policy[1] = QueuePolicy{.max_queue_size = 2};
  InferenceFrontend frontend(&engine, {{config, 1}}, {});
  std::vector<absl::Status> answers;
  auto infer = [&](uint64_t priority, int64_t timeout_us) {
    InferRequest r;
    r.batch = 1;
    r.data.assign(2, 0.5f);
    r.priority = priority;
    r.timeout_us = timeout_us;
    frontend.Infer(0, std::move(r), [&](absl::StatusOr<InferenceFrontend::InferResult> a) {
      answers.push_back(a.status());
    });
  };
  infer(1, 5000);
  infer(1, 0);
  infer(1, 0);  // a third at level 1: refused at once
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(answers[0].message(), HasSubstr("2 items queued at priority level 1, at its limit of 2"));
  infer(2, 5000);  // level 2 has no limit; its timeout is the policy's
  infer(0, 0);
  EXPECT_EQ(engine.in_flight(), 4);
  const std::vector<std::shared_ptr<const CancelFlag>> flags = engine.flags();
  ASSERT_EQ(flags.size(), 4u);
  EXPECT_EQ(flags[0], nullptr) << "level 1's policy has no timeout, and lets no request set one";
  EXPECT_EQ(flags[1], nullptr);
  for (int i : {2, 3}) {
    ASSERT_NE(flags[i], nullptr);
    EXPECT_FALSE(flags[i]->Cancelled(Micros(1000)));
    EXPECT_TRUE(flags[i]->Cancelled(Micros(1001)));
  }
  engine.AnswerOne();  // a level-1 item answered: its place is free again
  infer(1, 0);
  EXPECT_EQ(engine.in_flight(), 4);
  EXPECT_EQ(answers.size(), 2u);
  for (int i = 0; i < 4; ++i) engine.AnswerOne();
  EXPECT_EQ(answers.size(), 6u);
  for (Time at : engine.delays()) EXPECT_EQ(at, kInfiniteFuture) << "REJECT delays nothing";
}

// DELAY: past its timeout a request is not withdrawn but waits behind the
// others (the engine's scheduler moves it at delay_at).
TEST(PriorityTest, ADelayPolicysTimeoutDelaysInsteadOfWithdrawing) {
  HoldingEngine engine;
  ModelConfig config;
  config.name = "mlp";
  config.inputs = {{"image", DataType::kFp32, {2}}};
  config.outputs = {{"logits", DataType::kFp32, {3}}};
  config.default_queue_policy = QueuePolicy{.delay = true, .default_timeout_us = 1000, .allow_timeout_override = true};
  InferenceFrontend frontend(&engine, {{config, 1}}, {});
  for (int64_t timeout_us : {0, 3000}) {
    InferRequest r;
    r.batch = 1;
    r.data.assign(2, 0.5f);
    r.timeout_us = timeout_us;
    frontend.Infer(0, std::move(r), [](absl::StatusOr<InferenceFrontend::InferResult>) {});
  }
  EXPECT_THAT(engine.delays(), ElementsAre(Micros(1000), Micros(3000)));
  for (const auto& flag : engine.flags()) EXPECT_EQ(flag, nullptr) << "never withdrawn for its timeout";
  engine.AnswerOne();
  engine.AnswerOne();
}

// A request's items carry one cancel flag: the transport's, expiring
// `timeout` after the request came (the engine's clock reads 0 here).
TEST_F(AdmissionTest, ATimeoutAndTheTransportsCancelReachTheEngineOnOneFlag) {
  InferRequest r;
  r.batch = 2;
  r.data.assign(4, 0.5f);
  r.timeout_us = 2500;
  r.cancel = std::make_shared<CancelFlag>();
  const std::shared_ptr<CancelFlag> transport = r.cancel;
  frontend_->Infer(0, std::move(r), [](absl::StatusOr<InferenceFrontend::InferResult>) {});
  const std::vector<std::shared_ptr<const CancelFlag>> flags = engine_.flags();
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0], transport);
  EXPECT_EQ(flags[1], transport);
  EXPECT_FALSE(flags[0]->Cancelled(Micros(2500)));
  EXPECT_TRUE(flags[0]->Cancelled(Micros(2501)));
  InferRequest plain;
  plain.batch = 1;
  plain.data.assign(2, 0.5f);
  frontend_->Infer(0, std::move(plain), [](absl::StatusOr<InferenceFrontend::InferResult>) {});
  EXPECT_EQ(engine_.flags().back(), nullptr) << "no timeout, no transport flag: never withdrawn";
  transport->Cancel();
  EXPECT_TRUE(flags[1]->Cancelled(0));
  for (int i = 0; i < 3; ++i) engine_.AnswerOne();
}

// Model control: an unload stops new requests at once, answers every one it
// accepted, and only then reports done; a load takes requests again.
TEST_F(AdmissionTest, UnloadingWhileBusyAnswersWhatItAcceptedBeforeItReportsDone) {
  std::vector<std::string> events;
  std::optional<absl::Status> a, b, refused, after;
  Infer(2, &a);
  Infer(1, &b);
  EXPECT_EQ(frontend_->Status(0).state, "READY");
  std::optional<absl::Status> unloaded;
  frontend_->Unload(0, [&](absl::Status s) {
    unloaded = s;
    events.push_back(absl::StrCat("unloaded with a ", a.has_value() ? "answered" : "pending", " and b ",
                                  b.has_value() ? "answered" : "pending"));
  });
  EXPECT_FALSE(unloaded.has_value()) << "3 items still in flight";
  EXPECT_EQ(frontend_->Status(0).state, "UNLOADING");
  EXPECT_THAT(frontend_->Status(0).reason, HasSubstr("answering the 3 items"));
  EXPECT_FALSE(frontend_->model_ready(0));
  Infer(1, &refused);
  ASSERT_TRUE(refused.has_value()) << "refused at once";
  EXPECT_EQ(refused->code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused->message(), HasSubstr("POST /v2/repository/models/mlp/load"));
  EXPECT_EQ(engine_.in_flight(), 3) << "the refused request never reached the engine";
  engine_.AnswerOne();
  engine_.AnswerOne();
  EXPECT_FALSE(unloaded.has_value());
  engine_.AnswerOne();
  ASSERT_TRUE(unloaded.has_value());
  EXPECT_TRUE(unloaded->ok());
  EXPECT_THAT(events, ::testing::ElementsAre("unloaded with a answered and b answered"));
  EXPECT_TRUE(a->ok());
  EXPECT_TRUE(b->ok());
  EXPECT_EQ(frontend_->Status(0).state, "UNAVAILABLE");
  EXPECT_EQ(frontend_->Status(0).reason, "unloaded");
  std::optional<absl::Status> again;  // unloading an unloaded model: done at once
  frontend_->Unload(0, [&](absl::Status s) { again = s; });
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->ok());

  frontend_->Load(0);
  EXPECT_TRUE(frontend_->model_ready(0));
  Infer(1, &after);
  EXPECT_FALSE(after.has_value()) << "accepted, held";
  // Loaded again while an unload drains: that unload is answered Aborted.
  std::optional<absl::Status> interrupted;
  frontend_->Unload(0, [&](absl::Status s) { interrupted = s; });
  frontend_->Load(0);
  ASSERT_TRUE(interrupted.has_value());
  EXPECT_EQ(interrupted->code(), absl::StatusCode::kAborted);
  engine_.AnswerOne();
  EXPECT_TRUE(after->ok());
  EXPECT_EQ(frontend_->Status(0).state, "READY");
}

// Triton's statistics count requests, not items; a refused request is a
// failure.
TEST_F(AdmissionTest, StatisticsCountRequestsAndTheirItems) {
  EXPECT_EQ(frontend_->ModelStatistics(0).last_inference_ms, 0);
  std::optional<absl::Status> a, refused;
  Infer(3, &a);
  Infer(2, &refused);  // beyond max_queue_size
  for (int i = 0; i < 3; ++i) engine_.AnswerOne();
  ASSERT_TRUE(a.has_value() && a->ok());
  const InferenceFrontend::Statistics st = frontend_->ModelStatistics(0);
  EXPECT_EQ(st.success.count, 1);
  EXPECT_EQ(st.fail.count, 1);
  EXPECT_EQ(st.queue.count, 1);
  EXPECT_EQ(st.compute_infer.count, 1);
  EXPECT_EQ(st.inference_count, 3);
  EXPECT_GT(st.last_inference_ms, 0);
  const std::string json = frontend_->StatisticsJson({0});
  EXPECT_THAT(json, HasSubstr(R"({"model_stats":[{"name":"mlp","version":"1","last_inference":)"));
  EXPECT_THAT(json, HasSubstr(R"("inference_count":3,"execution_count":0,"inference_stats":{"success":{"count":1,"ns":0},)"
                              R"("fail":{"count":1,"ns":0})"));
  EXPECT_THAT(json, HasSubstr(R"("tutti":{"model_name":"mlp")"));
}

TEST(InternalModelTest, AnInternalModelIsNeitherFoundNorListed) {
  HoldingEngine engine;
  ModelConfig mlp;
  mlp.name = "mlp";
  mlp.task = "classify";
  mlp.accuracy = 0.9;
  mlp.inputs = {{"image", DataType::kFp32, {2}}};
  mlp.outputs = {{"logits", DataType::kFp32, {3}}};
  ModelConfig group = mlp;
  group.name = "prefix[mlp]";
  InferenceFrontend::ServedModel internal{group, 1};
  internal.internal = true;
  InferenceFrontend frontend(&engine, {internal, {mlp, 1}});
  EXPECT_EQ(frontend.ListedModels(), std::vector<int>{1});
  EXPECT_EQ(frontend.FindModel("prefix[mlp]").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*frontend.FindModel("mlp"), 1);
  EXPECT_EQ(frontend.TaskVariants("classify"), std::vector<int>{1});
}

}  // namespace
}  // namespace tutti
