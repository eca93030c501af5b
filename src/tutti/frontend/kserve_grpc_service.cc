#include "tutti/frontend/kserve_grpc_service.h"

#include <cstring>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/user_text.h"
#include "tutti/codec/kserve_json.h"
#include "tutti/grpc/grpc_util.h"

namespace tutti {
namespace {

using inference::InferParameter;

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

// ModelInfer's reactor: answers into the raw response; once the answer has
// gone out (OnDone), the frontend learns how long it took to leave (its
// response delay).
class InferReactor final : public grpc::ServerUnaryReactor {
 public:
  InferReactor(InferenceFrontend* frontend, grpc::ByteBuffer* response) : frontend_(frontend), response_(response) {}
  void Answer(const absl::StatusOr<InferenceFrontend::InferResult>& r, const inference::ModelInferResponse& out) {
    if (!r.ok()) return Finish(ToGrpcStatus(r.status()));
    written_ = r->written;
    bool own = false;
    const grpc::Status s = grpc::SerializationTraits<inference::ModelInferResponse>::Serialize(out, response_, &own);
    Finish(s);
  }
  void Fail(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override {
    frontend_->AnswerWritten(written_);
    delete this;
  }

 private:
  InferenceFrontend* const frontend_;
  grpc::ByteBuffer* const response_;
  std::vector<WrittenAnswer> written_;
};

void SetTensorMetadata(const TensorSpec& spec, inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(spec.name);
  out->set_datatype(std::string(DataTypeName(spec.datatype)));
  out->add_shape(-1);  // the batch dimension
  for (int64_t d : spec.shape) out->add_shape(d);
}

}  // namespace

absl::StatusOr<InferRequest> ParseModelInfer(const inference::ModelInferRequest& request, const ModelConfig& config) {
  InferRequest out;
  out.id = request.id();
  // A number parameter's value; -1 when it is not a number.
  auto number = [](const InferParameter& p) {
    return p.parameter_choice_case() == InferParameter::kDoubleParam  ? p.double_param()
           : p.parameter_choice_case() == InferParameter::kInt64Param ? static_cast<double>(p.int64_param())
                                                                       : -1.0;
  };
  if (auto it = request.parameters().find("latency_objective_ms"); it != request.parameters().end()) {
    const double ms = number(it->second);
    TUTTI_RETURN_IF_ERROR(CheckObjective(ms));
    out.objective_ms = ms;
  }
  if (auto it = request.parameters().find("accuracy"); it != request.parameters().end()) {
    const double accuracy = number(it->second);
    if (!(accuracy >= 0 && accuracy <= 1)) return Bad("parameter 'accuracy' must be a number from 0 to 1");
    out.min_accuracy = accuracy;
  }
  if (auto it = request.parameters().find("sequence_id"); it != request.parameters().end()) {
    const InferParameter& p = it->second;
    switch (p.parameter_choice_case()) {
      case InferParameter::kStringParam: out.sequence.id = SequenceIdOfString(p.string_param()); break;
      case InferParameter::kUint64Param: {
        TUTTI_ASSIGN_OR_RETURN(out.sequence.id, SequenceIdOfInteger(static_cast<int64_t>(p.uint64_param()),
                                                                    p.uint64_param() >> 63 != 0));
        break;
      }
      case InferParameter::kInt64Param: {
        TUTTI_ASSIGN_OR_RETURN(out.sequence.id, SequenceIdOfInteger(p.int64_param(), false));
        break;
      }
      default: return Bad("parameter 'sequence_id' must be an unsigned integer below 2^63 or a string");
    }
  }
  for (auto [name, flag] : {std::pair{"sequence_start", &out.sequence.start}, {"sequence_end", &out.sequence.end}}) {
    auto it = request.parameters().find(name);
    if (it == request.parameters().end()) continue;
    if (it->second.parameter_choice_case() != InferParameter::kBoolParam) {
      return Bad(absl::StrCat("parameter '", name, "' must be true or false"));
    }
    *flag = it->second.bool_param();
  }
  for (const auto& o : request.outputs()) TUTTI_RETURN_IF_ERROR(CheckOutputName(config, o.name()));
  TUTTI_RETURN_IF_ERROR(CheckInputCount(config, request.inputs_size()));
  const auto& in = request.inputs(0);
  const std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
  TUTTI_ASSIGN_OR_RETURN(out.batch, CheckInputTensor(config, in.name(), in.datatype(), shape));
  const inference::InferTensorContents& c = in.contents();
  const bool other_contents = c.bool_contents_size() || c.int_contents_size() || c.int64_contents_size() ||
                              c.uint_contents_size() || c.uint64_contents_size() || c.fp64_contents_size() ||
                              c.bytes_contents_size();
  if (other_contents) return Bad(absl::StrCat("input '", config.inputs[0].name, "' is FP32: its data goes in fp32_contents"));
  if (request.raw_input_contents_size() > 0) {
    if (request.raw_input_contents_size() != 1) {
      return Bad(absl::StrCat("raw_input_contents has ", request.raw_input_contents_size(),
                              " entries for 1 input"));
    }
    if (c.fp32_contents_size() > 0) {
      return Bad(absl::StrCat("input '", config.inputs[0].name, "' has both contents and raw_input_contents"));
    }
    const std::string& raw = request.raw_input_contents(0);
    TUTTI_RETURN_IF_ERROR(CheckByteCount(config, out.batch, static_cast<int64_t>(raw.size())));
    out.data.resize(raw.size() / sizeof(float));
    // Little-endian FP32, as the protocol says (memcpy takes no null pointer, even for 0 bytes).
    if (!raw.empty()) std::memcpy(out.data.data(), raw.data(), raw.size());
    return out;
  }
  TUTTI_RETURN_IF_ERROR(CheckValueCount(config, out.batch, c.fp32_contents_size()));
  out.data.assign(c.fp32_contents().begin(), c.fp32_contents().end());
  return out;
}

void WriteModelInfer(const InferenceFrontend::ServedModel& served, const std::string& id,
                     const InferenceFrontend::InferResult& result, inference::ModelInferResponse* response) {
  const TensorSpec& spec = served.config.outputs[0];
  response->set_model_name(served.config.name);
  response->set_model_version(std::to_string(served.version));
  response->set_id(ValidUtf8(id));
  auto& params = *response->mutable_parameters();
  params["reconstructed"].set_bool_param(result.reconstructed);
  params["tutti_emulated"].set_bool_param(result.emulated);
  params["tutti_late"].set_bool_param(result.late);
  params["tutti_batch_size"].set_int64_param(result.max_batch);
  params["tutti_queue_us"].set_double_param(ToMicros(result.max_queue));
  params["tutti_compute_us"].set_double_param(ToMicros(result.max_compute));
  auto* out = response->add_outputs();
  out->set_name(spec.name);
  out->set_datatype(std::string(DataTypeName(spec.datatype)));
  out->add_shape(static_cast<int64_t>(result.outputs.size()));
  for (int64_t d : spec.shape) out->add_shape(d);
  std::string& raw = *response->add_raw_output_contents();
  raw.reserve(result.outputs.size() * spec.ElementCount() * sizeof(float));
  for (const std::vector<float>& item : result.outputs) {
    raw.append(reinterpret_cast<const char*>(item.data()), item.size() * sizeof(float));
  }
}

absl::Status KserveGrpcService::Authorize(grpc::CallbackServerContext* context, Api api) const {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  const absl::string_view value = it == metadata.end() ? absl::string_view()
                                                       : absl::string_view(it->second.data(), it->second.size());
  return frontend_->Authorize(api, value);
}

grpc::ServerUnaryReactor* KserveGrpcService::ServerLive(grpc::CallbackServerContext* context,
                                                        const inference::ServerLiveRequest*,
                                                        inference::ServerLiveResponse* response) {
  response->set_live(true);
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::ServerReady(grpc::CallbackServerContext* context,
                                                         const inference::ServerReadyRequest*,
                                                         inference::ServerReadyResponse* response) {
  response->set_ready(frontend_->ready());
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelReady(grpc::CallbackServerContext* context,
                                                        const inference::ModelReadyRequest* request,
                                                        inference::ModelReadyResponse* response) {
  absl::StatusOr<int> model = frontend_->FindModel(request->name(), request->version());
  if (!model.ok()) return FinishUnary(context, model.status());
  response->set_ready(frontend_->model_ready(*model));
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::ServerMetadata(grpc::CallbackServerContext* context,
                                                            const inference::ServerMetadataRequest*,
                                                            inference::ServerMetadataResponse* response) {
  if (absl::Status s = Authorize(context, Api::kMetadata); !s.ok()) return FinishUnary(context, s);
  response->set_name(std::string(kServerName));
  response->set_version(std::string(kServerVersion));
  response->add_extensions("binary_tensor_data");
  response->add_extensions("sequence");
  response->add_extensions("model_repository");
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelMetadata(grpc::CallbackServerContext* context,
                                                           const inference::ModelMetadataRequest* request,
                                                           inference::ModelMetadataResponse* response) {
  if (absl::Status s = Authorize(context, Api::kMetadata); !s.ok()) return FinishUnary(context, s);
  absl::StatusOr<int> model = frontend_->FindModel(request->name(), request->version());
  if (absl::StartsWith(request->name(), "task:")) {  // a task: its first variant (what model-less requests send)
    const std::vector<int> variants = frontend_->TaskVariants(absl::string_view(request->name()).substr(5));
    model = variants.empty() ? absl::StatusOr<int>(absl::NotFoundError(absl::StrCat(
                                   "no served model has task '", request->name().substr(5), "' and an accuracy")))
                             : absl::StatusOr<int>(variants.front());
  }
  if (!model.ok()) return FinishUnary(context, model.status());
  const InferenceFrontend::ServedModel& m = frontend_->served(*model);
  response->set_name(m.config.name);
  response->add_versions(std::to_string(m.version));
  response->set_platform(std::string(KservePlatformName(m.config)));
  for (const TensorSpec& t : m.config.inputs) SetTensorMetadata(t, response->add_inputs());
  for (const TensorSpec& t : m.config.outputs) SetTensorMetadata(t, response->add_outputs());
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelInfer(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* raw, grpc::ByteBuffer* response) {
  auto* reactor = new InferReactor(frontend_, response);
  if (absl::Status s = Authorize(context, Api::kInference); !s.ok()) {
    reactor->Fail(s);
    return reactor;
  }
  inference::ModelInferRequest request;
  grpc::ByteBuffer bytes(*raw);  // shares the slices
  if (!grpc::SerializationTraits<inference::ModelInferRequest>::Deserialize(&bytes, &request).ok()) {
    reactor->Fail(Bad("the request is not a well-formed inference.ModelInferRequest message"));
    return reactor;
  }
  // Model-less (INFaaS): no model_name, and a "task" parameter; the variant
  // is chosen as on HTTP's /v2/tasks/{task}/infer.
  const auto task = request.parameters().find("task");
  std::optional<std::string> task_name;
  absl::StatusOr<int> model = absl::NotFoundError("");
  std::vector<int> variants;
  if (task != request.parameters().end()) {
    if (!request.model_name().empty()) {
      reactor->Fail(Bad("give model_name or the parameter 'task' (a model-less request), not both"));
      return reactor;
    }
    if (task->second.parameter_choice_case() != InferParameter::kStringParam) {
      reactor->Fail(Bad("parameter 'task' must be a string"));
      return reactor;
    }
    task_name = task->second.string_param();
    variants = frontend_->TaskVariants(*task_name);
    if (variants.empty()) {
      reactor->Fail(absl::NotFoundError(absl::StrCat("no loaded model serves task ", QuoteUserText(*task_name))));
      return reactor;
    }
    model = variants[0];  // its variants share their input: parsed against the first
  } else {
    model = frontend_->FindModel(request.model_name(), request.model_version());
  }
  if (!model.ok()) {
    reactor->Fail(model.status());
    return reactor;
  }
  absl::StatusOr<InferRequest> parsed = ParseModelInfer(request, frontend_->served(*model).config);
  if (!parsed.ok()) {
    frontend_->CountRejected(*model);
    reactor->Fail(parsed.status());
    return reactor;
  }
  InferenceFrontend::TaskChoice choice;
  if (task_name) {
    choice = frontend_->ChooseForTask(*task_name, variants, parsed->min_accuracy, Millis(parsed->objective_ms));
    model = choice.model;
  }
  const InferenceFrontend::ServedModel& served = frontend_->served(*model);
  const std::string id = parsed->id;
  frontend_->Infer(*model, *std::move(parsed),
                   [this, reactor, &served, id, task_name, choice](absl::StatusOr<InferenceFrontend::InferResult> r) {
                     inference::ModelInferResponse out;
                     if (r.ok()) {
                       WriteModelInfer(served, id, *r, &out);
                       auto& params = *out.mutable_parameters();
                       params["tutti_server_us"].set_double_param(ToMicros(frontend_->ServerTime(*r)));
                       if (task_name) {
                         params["tutti_task"].set_string_param(ValidUtf8(*task_name));
                         params["tutti_meets_requirements"].set_bool_param(choice.meets);
                         if (!choice.note.empty()) params["tutti_variant_note"].set_string_param(choice.note);
                       }
                     }
                     reactor->Answer(r, out);
                   });
  return reactor;
}

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryIndex(grpc::CallbackServerContext* context,
                                                             const inference::RepositoryIndexRequest* request,
                                                             inference::RepositoryIndexResponse* response) {
  if (absl::Status s = Authorize(context, Api::kAdmin); !s.ok()) return FinishUnary(context, s);
  for (int m = 0; m < frontend_->num_models(); ++m) {
    if (request->ready() && !frontend_->model_ready(m)) continue;
    InferenceFrontend::ModelStatus status = frontend_->Status(m);
    inference::RepositoryIndexResponse::ModelIndex* index = response->add_models();
    index->set_name(frontend_->served(m).config.name);
    index->set_version(std::to_string(frontend_->served(m).version));
    index->set_state(status.state);
    index->set_reason(status.reason);
  }
  return FinishUnary(context);
}

namespace {

// The parameters of a load or unload, as on HTTP (ParseRepositoryModelRequest).
absl::StatusOr<RepositoryModelRequest> RepositoryParameters(
    const google::protobuf::Map<std::string, inference::ModelRepositoryParameter>& params) {
  RepositoryModelRequest out;
  for (const auto& [name, value] : params) {
    if (name == "unload_dependents") {
      if (value.parameter_choice_case() != inference::ModelRepositoryParameter::kBoolParam) {
        return absl::InvalidArgumentError("'unload_dependents' must be a bool_param");
      }
      out.unload_dependents = value.bool_param();
    } else {
      return RefuseRepositoryParameter(name);
    }
  }
  return out;
}

}  // namespace

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                                 const inference::RepositoryModelLoadRequest* request,
                                                                 inference::RepositoryModelLoadResponse*) {
  if (absl::Status s = Authorize(context, Api::kAdmin); !s.ok()) return FinishUnary(context, s);
  absl::StatusOr<int> model = frontend_->FindModel(request->model_name());
  if (!model.ok()) return FinishUnary(context, model.status());
  if (absl::StatusOr<RepositoryModelRequest> p = RepositoryParameters(request->parameters()); !p.ok()) {
    return FinishUnary(context, p.status());
  }
  frontend_->Load(*model);
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryModelUnload(
    grpc::CallbackServerContext* context, const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*) {
  if (absl::Status s = Authorize(context, Api::kAdmin); !s.ok()) return FinishUnary(context, s);
  absl::StatusOr<int> model = frontend_->FindModel(request->model_name());
  if (!model.ok()) return FinishUnary(context, model.status());
  absl::StatusOr<RepositoryModelRequest> p = RepositoryParameters(request->parameters());
  if (!p.ok()) return FinishUnary(context, p.status());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  frontend_->UnloadWithDependents(*model, p->unload_dependents,
                                  [reactor](absl::Status s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

}  // namespace tutti
