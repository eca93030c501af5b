// A server of one model copied from a fixture repository (testdata/), for
// the tests that serve it end to end over HTTP and gRPC on ports of the
// kernel's choosing.
#ifndef TUTTI_SERVER_FIXTURE_SERVER_TEST_UTIL_H_
#define TUTTI_SERVER_FIXTURE_SERVER_TEST_UTIL_H_

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/proto/grpc_predict_v2.pb.h"
#include "tutti/server/server.h"
#include "tutti/testing/temp_dir.h"

namespace tutti::testing {

// Copies `fixture_repo`/`name`/1 (its config.yaml and `weights`) into
// `dir`, appends `config_suffix` (the profiles the fixture leaves out) to
// its config, and serves it with `serve_yaml` (HTTP and gRPC on port 0).
inline absl::StatusOr<std::unique_ptr<Server>> ServeFixture(const TempDir& dir, const std::string& fixture_repo,
                                                            const std::string& name, const std::string& weights,
                                                            const std::string& config_suffix, Clock* clock,
                                                            const std::string& serve_yaml = "") {
  const std::string source = fixture_repo + "/" + name + "/1/";
  std::filesystem::create_directories(dir.path() + "/" + name + "/1");
  std::filesystem::copy_file(source + weights, dir.path() + "/" + name + "/1/" + weights);
  std::ifstream in(source + "config.yaml");
  std::stringstream config;
  config << in.rdbuf() << config_suffix;
  dir.WriteFile(name + "/1/config.yaml", config.str());
  absl::StatusOr<ModelRepository> repo = ModelRepository::Open(dir.path());
  if (!repo.ok()) return repo.status();
  absl::StatusOr<ServerConfig> serve = ParseServerConfig("http: {port: 0}\ngrpc: {port: 0}\n" + serve_yaml);
  if (!serve.ok()) return serve.status();
  serve = ResolveServerConfig(*serve, *repo);
  if (!serve.ok()) return serve.status();
  return Server::Start(*repo, *serve, clock);
}

// Writes into `dir` a graph "pair" (objective `objective_ms`) that runs the
// emulated "first" (image [4] → features [3]) on the request, then the
// emulated "second" (features → logits [2]) on first's output. Each step's
// profile is given by its latencies at batches 1 and 8, in µs.
inline void WritePairGraph(const TempDir& dir, int first_us_1, int first_us_8, int second_us_1, int second_us_8,
                           int objective_ms) {
  auto step = [&](const std::string& name, const std::string& in, int in_dims, const std::string& out, int out_dims,
                  int us_1, int us_8) {
    dir.WriteFile(name + "/1/config.yaml",
                  "name: " + name + "\nplatform: emulated\nmax_batch_size: 8\ninputs: [{name: " + in +
                      ", datatype: FP32, shape: [" + std::to_string(in_dims) + "]}]\noutputs: [{name: " + out +
                      ", datatype: FP32, shape: [" + std::to_string(out_dims) +
                      "]}]\nprofiles: {a100: {batch: [1, 8], latency_us: [" + std::to_string(us_1) + ", " +
                      std::to_string(us_8) + "]}}\n");
  };
  step("first", "image", 4, "features", 3, first_us_1, first_us_8);
  step("second", "features", 3, "logits", 2, second_us_1, second_us_8);
  dir.WriteFile("pair/1/config.yaml", R"(name: pair
platform: ensemble
max_batch_size: 8
inputs: [{name: image, datatype: FP32, shape: [4]}]
outputs: [{name: scores, datatype: FP32, shape: [2]}]
latency_objective_ms: )" + std::to_string(objective_ms) + R"(
ensemble_scheduling:
  step:
    - {model_name: first, input_map: {image: image}, output_map: {features: f}}
    - {model_name: second, input_map: {features: f}, output_map: {logits: scores}}
)");
}

// A gRPC ModelInfer request for `model` of the pair graph's one image
// [1, 2, 3, 4] (shape [1, 4]).
inline inference::ModelInferRequest PairImageRequest(const std::string& model) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  auto* in = request.add_inputs();
  in->set_name("image");
  in->set_datatype("FP32");
  for (int64_t dim : {1, 4}) in->add_shape(dim);
  for (float v : {1, 2, 3, 4}) in->mutable_contents()->add_fp32_contents(v);
  return request;
}

}  // namespace tutti::testing

#endif  // TUTTI_SERVER_FIXTURE_SERVER_TEST_UTIL_H_
