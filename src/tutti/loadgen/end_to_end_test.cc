// End to end: real LeNet-5 and MLP models, trained here in C++ on
// Fashion-MNIST, served on the CPU torch executor by a Server; the load
// generator sends all 10,000 test images to each over HTTP (binary tensors),
// and the accuracy of the answers must equal the offline accuracy exactly.
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/core/real_clock.h"
#include "tutti/models/torch_model.h"
#include "tutti/loadgen/load_generator.h"
#include "tutti/models/evaluate.h"
#include "tutti/models/trainer.h"
#include "tutti/server/server.h"
#include "tutti/testing/temp_dir.h"

namespace tutti {
namespace {

TEST(EndToEndTest, ServedAccuracyOfAllTestImagesEqualsOfflineAccuracy) {
  testing::TempDir dir;
  absl::StatusOr<ImageSet> train = LoadFashionMnist(kDefaultFashionMnistDir, Split::kTrain);
  absl::StatusOr<ImageSet> test = LoadFashionMnist(kDefaultFashionMnistDir, Split::kTest);
  ASSERT_TRUE(train.ok() && test.ok()) << train.status() << test.status();
  ASSERT_EQ(test->size(), 10000);
  const ImageSet subset = train->Slice(0, 6000);  // a short training run: accuracy is not the point here
  ManualClock training_clock;
  std::map<std::string, double> offline;
  for (const std::string arch : {"mlp", "lenet5"}) {
    const std::string version_dir = VersionDir(dir.path(), arch, 1);
    TrainOptions options{.architecture = arch, .epochs = 1, .seed = 3};
    ASSERT_TRUE(TrainBuiltinModel(options, subset, test->Slice(0, 100), version_dir + "/model.pt", training_clock,
                                  nullptr)
                    .ok());
    ModelConfig config = BuiltinModelConfig(arch, arch, 64);
    config.latency_objective_ms = 5000;  // nothing may be dropped: every image must be answered
    config.profiles["cpu"] = *LatencyProfile::Linear(Micros(20), Micros(100), 64);
    ASSERT_TRUE(WriteModelConfig(version_dir, config).ok());
    absl::StatusOr<ModelVersion> version = LoadModelVersion(version_dir, arch, 1);
    ASSERT_TRUE(version.ok()) << version.status();
    absl::StatusOr<std::unique_ptr<TorchModel>> model = TorchModel::Load(*version);
    ASSERT_TRUE(model.ok()) << model.status();
    offline[arch] = *EvaluateAccuracy(**model, *test, 64);
  }

  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  ASSERT_TRUE(repo.ok()) << repo.status();
  ServerConfig config;
  config.http.port = 0;
  config.grpc.port = -1;
  // The test is about exact answers, not batching: eager scheduling keeps
  // the backlog short, so that a CI machine busy with other tests does not
  // make the scheduler drop requests whose deadlines it can no longer meet.
  config.policy = "eager";
  RealClock clock;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(*repo, *ResolveServerConfig(config, *repo), &clock);
  ASSERT_TRUE(server.ok()) << server.status();

  LoadSpec spec;
  spec.port = (*server)->port();
  spec.models = {"mlp", "lenet5"};
  spec.workload.arrival = ArrivalKind::kConstant;
  spec.workload.rate = 3000;
  spec.duration = Seconds(120);  // an upper bound: the run ends after 10,000 images per model
  spec.warmup = 0;
  spec.slo = Seconds(5);
  spec.max_per_model = 10000;
  absl::StatusOr<LoadResult> served = RunLoad(spec);
  ASSERT_TRUE(served.ok()) << served.status();
  for (const LoadModelResult& m : served->models) {
    EXPECT_EQ(m.metrics.arrived, 10000) << m.metrics.name;
    std::string errors;
    for (const auto& [what, n] : m.errors) absl::StrAppend(&errors, " ", what, " x", n);
    EXPECT_EQ(m.labelled, 10000) << m.metrics.name << ": every image answered by the real model;" << errors;
    EXPECT_EQ(m.correct, static_cast<int64_t>(std::llround(offline[m.metrics.name] * 10000))) << m.metrics.name;
    std::cout << m.metrics.name << ": offline " << offline[m.metrics.name] << ", served " << m.Accuracy() << "\n";
  }
  EXPECT_EQ((*server)->core().Counters()[0].error, 0);
}

}  // namespace
}  // namespace tutti
