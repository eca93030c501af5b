#include "tutti/loadgen/load_transport.h"

#include <grpcpp/grpcpp.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "rapidjson/document.h"
#include "tutti/core/status_macros.h"
#include "tutti/codec/kserve_json.h"
#include "tutti/loadgen/http_client_pool.h"
#include "tutti/proto/grpc_predict_v2.grpc.pb.h"

namespace tutti {
namespace {

// Fills the parts of a target both protocols derive the same way from the
// metadata's input dimensions (-1 is the batch dimension).
void SetInputDims(const std::vector<int64_t>& dims, LoadTarget* t) {
  t->shape = {1};
  for (int64_t d : dims) {
    if (d > 0) {
      t->shape.push_back(d);
      t->input_elements *= d;
    }
  }
  t->images = t->input_elements == 784;
}

// The load generator sends one FP32 input.
absl::Status CheckSendable(const std::string& model, int inputs, absl::string_view datatype) {
  if (inputs != 1) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model, "' has ", inputs,
                                                   " inputs; the load generator sends one FP32 input"));
  }
  if (datatype != "FP32") {
    return absl::InvalidArgumentError(absl::StrCat("model '", model, "' takes ", datatype,
                                                   "; the load generator sends one FP32 input"));
  }
  return absl::OkStatus();
}

// "task:T" or "task:T@A": a model-less target (task T, accuracy A).
bool IsTaskTarget(const std::string& name) { return absl::StartsWith(name, "task:"); }

absl::Status ParseTaskTarget(const std::string& name, LoadTarget* t) {
  std::pair<std::string, std::string> parts = absl::StrSplit(name.substr(5), absl::MaxSplits('@', 1));
  t->name = name;
  t->task = parts.first;
  if (t->task.empty() || (name.find('@') != std::string::npos &&
                          (!absl::SimpleAtod(parts.second, &t->min_accuracy) || t->min_accuracy < 0 ||
                           t->min_accuracy > 1))) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "': a model-less target is task:TASK or task:TASK@ACCURACY (0 to 1)"));
  }
  return absl::OkStatus();
}

class HttpTransport final : public LoadTransport {
 public:
  HttpTransport(const std::string& host, int port, int connections, bool binary, const std::string& token)
      : host_(host), port_(port), binary_(binary), pool_(host, port, connections) {
    if (!token.empty()) auth_ = {{"Authorization", "Bearer " + token}};
  }

  absl::StatusOr<LoadTarget> Describe(const std::string& model) override {
    if (IsTaskTarget(model)) {  // as its task's first variant
      LoadTarget task;
      TUTTI_RETURN_IF_ERROR(ParseTaskTarget(model, &task));
      ClientResponse r = pool_.Call({"GET", absl::StrCat("/v2/tasks/", task.task), "", auth_});
      if (!r.transport.ok()) return r.transport;
      rapidjson::Document d;
      d.Parse(r.body.c_str());
      if (r.status != 200 || d.HasParseError() || !d.IsObject() || !d.HasMember("variants") ||
          !d["variants"].IsArray() || d["variants"].Empty() || !d["variants"][0].HasMember("name") ||
          !d["variants"][0]["name"].IsString()) {
        return absl::NotFoundError(absl::StrCat("the server at ", host_, ":", port_, " answered ", r.status,
                                                " for task '", task.task, "': ", r.body));
      }
      TUTTI_ASSIGN_OR_RETURN(LoadTarget t, Describe(d["variants"][0]["name"].GetString()));
      t.name = task.name;
      t.task = task.task;
      t.min_accuracy = task.min_accuracy;
      return t;
    }
    ClientResponse r = pool_.Call({"GET", absl::StrCat("/v2/models/", model), "", auth_});
    if (!r.transport.ok()) return r.transport;
    if (r.status != 200) {
      return absl::NotFoundError(absl::StrCat("the server at ", host_, ":", port_, " answered ", r.status,
                                              " for model '", model, "': ", r.body));
    }
    rapidjson::Document d;
    d.Parse(r.body.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("inputs") || !d["inputs"].IsArray() ||
        d["inputs"].Empty()) {
      return absl::InvalidArgumentError(absl::StrCat("model '", model, "': unexpected metadata ", r.body));
    }
    const auto& in = d["inputs"][0];
    if (!in.HasMember("name") || !in["name"].IsString() || !in.HasMember("shape") || !in["shape"].IsArray() ||
        !in.HasMember("datatype") || !in["datatype"].IsString()) {
      return absl::InvalidArgumentError(absl::StrCat("model '", model, "': unexpected metadata ", r.body));
    }
    TUTTI_RETURN_IF_ERROR(CheckSendable(model, static_cast<int>(d["inputs"].Size()), in["datatype"].GetString()));
    LoadTarget t{model, in["name"].GetString()};
    std::vector<int64_t> dims;
    for (const auto& dim : in["shape"].GetArray()) dims.push_back(dim.IsInt64() ? dim.GetInt64() : -1);
    SetInputDims(dims, &t);
    return t;
  }

  void Infer(const LoadTarget& t, absl::Span<const float> data, const InferParameters& params, Done done) override {
    EncodedInferRequest encoded = WriteInferRequest(t.input, t.shape, data, params, binary_, t.min_accuracy);
    ClientRequest r{"POST",
                    t.task.empty() ? absl::StrCat("/v2/models/", t.name, "/infer")
                                   : absl::StrCat("/v2/tasks/", t.task, "/infer"),
                    std::move(encoded.body), auth_};
    if (encoded.json_length) {
      r.headers.push_back({"Inference-Header-Content-Length", std::to_string(*encoded.json_length)});
    }
    pool_.Send(std::move(r), [done = std::move(done)](ClientResponse r) {
      LoadAnswer a;
      a.arrived = r.arrived;
      if (!r.transport.ok()) {
        a.error = std::string(r.transport.message());
      } else if (r.status != 200) {
        a.error = absl::StrCat("HTTP ", r.status);
      } else {
        std::optional<size_t> json_length;
        if (size_t n = 0; !r.json_length.empty() && absl::SimpleAtoi(r.json_length, &n)) json_length = n;
        absl::StatusOr<InferResponse> answer = ParseInferResponse(r.body, json_length);
        if (answer.ok()) {
          a.model = std::move(answer->model_name);
          a.output = std::move(answer->output);
          a.emulated = answer->emulated;
          a.server_time = answer->server_time;
        }
      }
      done(std::move(a));
    });
  }

  absl::Status Prepare(int concurrency) override { return pool_.Preconnect(concurrency); }

  void RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) override {
    pool_.RunAt(when, std::move(fn));
  }

 private:
  const std::string host_;
  const int port_;
  const bool binary_;
  std::vector<std::pair<std::string, std::string>> auth_;  // the Authorization header, if any
  HttpClientPool pool_;
};

class GrpcTransport final : public LoadTransport {
 public:
  GrpcTransport(const std::string& host, int port, const std::string& token)
      : target_(absl::StrCat(host, ":", port)),
        authorization_(token.empty() ? "" : "Bearer " + token),
        channel_(grpc::CreateChannel(target_, grpc::InsecureChannelCredentials())),
        stub_(inference::GRPCInferenceService::NewStub(channel_)),
        work_(boost::asio::make_work_guard(timers_)),
        timer_thread_([this] { timers_.run(); }) {}

  // Cancels the calls still in flight (their callbacks run, with CANCELLED)
  // and waits for them.
  ~GrpcTransport() override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (grpc::ClientContext* c : in_flight_) c->TryCancel();
      idle_.wait(lock, [&] { return in_flight_.empty(); });
    }
    work_.reset();
    timers_.stop();
    timer_thread_.join();
  }

  absl::StatusOr<LoadTarget> Describe(const std::string& model) override {
    LoadTarget task;
    if (IsTaskTarget(model)) TUTTI_RETURN_IF_ERROR(ParseTaskTarget(model, &task));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
    inference::ModelMetadataRequest request;
    // A task: Tutti's ModelMetadata names "task:T" its first variant's metadata.
    request.set_name(task.task.empty() ? model : absl::StrCat("task:", task.task));
    inference::ModelMetadataResponse response;
    grpc::Status s = stub_->ModelMetadata(&context, request, &response);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      return absl::NotFoundError(absl::StrCat("the server at ", target_, " does not serve '", model, "': ",
                                              s.error_message()));
    }
    if (!s.ok()) {
      return absl::UnavailableError(absl::StrCat("gRPC ModelMetadata at ", target_, " failed: ", s.error_message()));
    }
    TUTTI_RETURN_IF_ERROR(CheckSendable(model, response.inputs_size(),
                                        response.inputs_size() > 0 ? response.inputs(0).datatype() : ""));
    LoadTarget t{model, response.inputs(0).name()};
    SetInputDims({response.inputs(0).shape().begin(), response.inputs(0).shape().end()}, &t);
    t.task = task.task;
    t.min_accuracy = task.min_accuracy;
    return t;
  }

  void Infer(const LoadTarget& t, absl::Span<const float> data, const InferParameters& params, Done done) override {
    auto call = std::make_shared<Call>();
    if (!authorization_.empty()) call->context.AddMetadata("authorization", authorization_);
    inference::ModelInferRequest& r = call->request;
    if (t.task.empty()) {
      r.set_model_name(t.name);
    } else {  // model-less: the task and what it needs, no model
      (*r.mutable_parameters())["task"].set_string_param(t.task);
      if (t.min_accuracy >= 0) (*r.mutable_parameters())["accuracy"].set_double_param(t.min_accuracy);
    }
    if (params.objective_ms > 0) (*r.mutable_parameters())["latency_objective_ms"].set_double_param(params.objective_ms);
    if (params.priority > 0) (*r.mutable_parameters())["priority"].set_uint64_param(params.priority);
    if (params.timeout_us > 0) (*r.mutable_parameters())["timeout"].set_int64_param(params.timeout_us);
    auto* in = r.add_inputs();
    in->set_name(t.input);
    in->set_datatype("FP32");
    for (int64_t d : t.shape) in->add_shape(d);
    r.add_raw_input_contents(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.insert(&call->context);
    }
    stub_->async()->ModelInfer(&call->context, &call->request, &call->response,
                               [this, call, done = std::move(done)](grpc::Status s) {
                                 done(Answer(s, call->response));
                                 std::lock_guard<std::mutex> lock(mu_);
                                 in_flight_.erase(&call->context);
                                 if (in_flight_.empty()) idle_.notify_all();
                               });
  }

  // One HTTP/2 channel carries every call: wait until it is connected.
  absl::Status Prepare(int) override {
    if (!channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      return absl::UnavailableError(absl::StrCat("cannot connect to ", target_));
    }
    return absl::OkStatus();
  }

  void RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) override {
    boost::asio::post(timers_, [this, when, fn = std::move(fn)]() mutable {
      auto timer = std::make_shared<boost::asio::steady_timer>(timers_, when);
      timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
        if (!ec) fn();
      });
    });
  }

 private:
  struct Call {
    grpc::ClientContext context;
    inference::ModelInferRequest request;
    inference::ModelInferResponse response;
  };

  static LoadAnswer Answer(const grpc::Status& s, const inference::ModelInferResponse& r) {
    LoadAnswer a;
    if (!s.ok()) {
      // gRPC's codes are absl's, which names them ("DEADLINE_EXCEEDED", …).
      a.error = absl::StrCat("gRPC ", absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())));
      return a;
    }
    a.model = r.model_name();
    if (auto it = r.parameters().find("tutti_emulated"); it != r.parameters().end()) {
      a.emulated = it->second.bool_param();
    }
    if (auto it = r.parameters().find("tutti_server_us"); it != r.parameters().end()) {
      a.server_time = Micros(it->second.double_param());
    }
    if (r.raw_output_contents_size() > 0) {
      const std::string& raw = r.raw_output_contents(0);
      a.output.resize(raw.size() / sizeof(float));
      if (!a.output.empty()) std::memcpy(a.output.data(), raw.data(), a.output.size() * sizeof(float));
    } else if (r.outputs_size() > 0) {
      const auto& values = r.outputs(0).contents().fp32_contents();
      a.output.assign(values.begin(), values.end());
    }
    return a;
  }

  const std::string target_;
  const std::string authorization_;  // "Bearer <token>", or "" for none
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::mutex mu_;
  std::condition_variable idle_;
  absl::flat_hash_set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
  boost::asio::io_context timers_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread timer_thread_;
};

}  // namespace

std::unique_ptr<LoadTransport> MakeHttpTransport(const std::string& host, int port, int connections, bool binary,
                                                 const std::string& token) {
  return std::make_unique<HttpTransport>(host, port, connections, binary, token);
}

std::unique_ptr<LoadTransport> MakeGrpcTransport(const std::string& host, int port, const std::string& token) {
  return std::make_unique<GrpcTransport>(host, port, token);
}

}  // namespace tutti
