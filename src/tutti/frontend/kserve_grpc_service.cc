#include "tutti/frontend/kserve_grpc_service.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/user_text.h"
#include "tutti/codec/kserve_json.h"
#include "tutti/codec/typed_tensors.h"
#include "tutti/grpc/grpc_util.h"
#include "tutti/repository/tensor_record.h"

namespace tutti {
namespace {

using inference::InferParameter;

absl::Status Bad(absl::string_view what) { return absl::InvalidArgumentError(what); }

// The call's W3C `traceparent` metadata, if it has a well-formed one.
std::optional<TraceContext> Traceparent(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("traceparent");
  if (it == metadata.end()) return std::nullopt;
  return ParseTraceparent(absl::string_view(it->second.data(), it->second.size()));
}

// ModelInfer's reactor: answers into the raw response; once the answer has
// gone out (OnDone), the frontend learns how long it took to leave (its
// response delay). A call the client cancels, or whose deadline passes,
// sets its request's cancel flag.
class InferReactor final : public grpc::ServerUnaryReactor {
 public:
  InferReactor(InferenceFrontend* frontend, grpc::ByteBuffer* response) : frontend_(frontend), response_(response) {}
  const std::shared_ptr<CancelFlag>& cancel() const { return cancel_; }
  void OnCancel() override { cancel_->Cancel(); }
  void Answer(const absl::Status& status, const inference::ModelInferResponse& out, AnswerReceipt written) {
    if (!status.ok()) return Finish(ToGrpcStatus(status));
    written_ = std::move(written);
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
  AnswerReceipt written_;
  const std::shared_ptr<CancelFlag> cancel_ = std::make_shared<CancelFlag>();
};

inference::DataType ConfigDataType(DataType type) {
  inference::DataType out = inference::TYPE_INVALID;
  inference::DataType_Parse(ConfigDataTypeName(type), &out);
  return out;
}

// Triton's model configuration, as HTTP's /config writes it in JSON.
void WriteModelConfig(const ::tutti::ModelConfig& c, inference::ModelConfig* out) {
  out->set_name(c.name);
  out->set_platform(std::string(KservePlatformName(c)));
  out->set_max_batch_size(c.max_batch_size);
  for (const TensorSpec& t : c.inputs) {
    inference::ModelInput* in = out->add_input();
    in->set_name(t.name);
    in->set_data_type(ConfigDataType(t.datatype));
    for (int64_t d : t.shape) in->add_dims(d);
    for (int64_t d : t.reshape) in->mutable_reshape()->add_shape(d);
    in->set_optional(t.optional);
  }
  for (const TensorSpec& t : c.outputs) {
    inference::ModelOutput* o = out->add_output();
    o->set_name(t.name);
    o->set_data_type(ConfigDataType(t.datatype));
    for (int64_t d : t.shape) o->add_dims(d);
    for (int64_t d : t.reshape) o->mutable_reshape()->add_shape(d);
  }
  if (const std::optional<SequenceBatching>& sb = c.sequence_batching) {
    inference::ModelSequenceBatching* seq = out->mutable_sequence_batching();
    seq->set_max_sequence_idle_microseconds(sb->max_sequence_idle_us);
    if (c.max_queue_delay_us) seq->mutable_oldest()->set_max_queue_delay_microseconds(*c.max_queue_delay_us);
    inference::ModelSequenceBatching::State* state = seq->add_state();
    state->set_input_name(sb->state_input);
    state->set_output_name(sb->state_output);
    state->set_data_type(inference::TYPE_FP32);
    for (int64_t d : sb->state_shape) state->add_dims(d);
  } else if (!c.steps.empty()) {
    for (const EnsembleStep& step : c.steps) {
      inference::ModelEnsembling::Step* s = out->mutable_ensemble_scheduling()->add_step();
      s->set_model_name(step.model_name);
      s->set_model_version(step.model_version);
      s->mutable_input_map()->insert(step.input_map.begin(), step.input_map.end());
      s->mutable_output_map()->insert(step.output_map.begin(), step.output_map.end());
    }
  } else {
    inference::ModelDynamicBatching* batching = out->mutable_dynamic_batching();
    if (c.max_queue_delay_us) batching->set_max_queue_delay_microseconds(*c.max_queue_delay_us);
    batching->set_priority_levels(static_cast<uint64_t>(c.priority_levels));
    batching->set_default_priority_level(static_cast<uint64_t>(c.default_priority_level));
    auto policy = [](const QueuePolicy& p, inference::ModelQueuePolicy* out) {
      out->set_timeout_action(p.delay ? inference::ModelQueuePolicy::DELAY : inference::ModelQueuePolicy::REJECT);
      out->set_default_timeout_microseconds(static_cast<uint64_t>(p.default_timeout_us));
      out->set_allow_timeout_override(p.allow_timeout_override);
      out->set_max_queue_size(static_cast<uint32_t>(std::min<int64_t>(p.max_queue_size, UINT32_MAX)));
    };
    if (c.default_queue_policy) policy(*c.default_queue_policy, batching->mutable_default_queue_policy());
    for (const auto& [level, p] : c.priority_queue_policy) {
      policy(p, &(*batching->mutable_priority_queue_policy())[static_cast<uint64_t>(level)]);
    }
  }
}

// ModelStreamInfer's reactor: reads requests one after another and runs
// each as it comes (so a sequence's run in the order sent); writes each
// answer as it is ready, one write at a time; finishes once the client has
// stopped sending and every answer is written (or the stream broke), so no
// answer outlives it. gRPC's calls (StartWrite, Finish) are made outside
// the lock: their reactions may run at once.
class StreamReactor final
    : public grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
 public:
  StreamReactor(KserveGrpcService* service, InferenceFrontend* frontend, const absl::Status& access,
                std::optional<TraceContext> traceparent)
      : service_(service), frontend_(frontend), traceparent_(traceparent) {
    if (!access.ok()) {
      Finish(ToGrpcStatus(access));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client stopped sending, or the call ended
      Next next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        reading_ = false;
        if (!writing_) next = NextLocked();
      }
      return Do(next);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++running_;
    }
    const std::string id = request_.id(), model = request_.model_name(), version = request_.model_version();
    service_->RunInfer(request_, [this, id, model, version](const absl::Status& status,
                                                          inference::ModelInferResponse response,
                                                          AnswerReceipt written) {
      Pending answer;
      if (status.ok()) {
        *answer.response.mutable_infer_response() = std::move(response);
        answer.written = std::move(written);
      } else {  // as Triton: the error, with the request's model and id
        answer.response.set_error_message(std::string(status.message()));
        inference::ModelInferResponse& r = *answer.response.mutable_infer_response();
        r.set_model_name(ValidUtf8(model));
        r.set_model_version(ValidUtf8(version));
        r.set_id(ValidUtf8(id));
      }
      Next next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        --running_;
        pending_.push_back(std::move(answer));
        if (!writing_) next = NextLocked();
      }
      Do(next);
    }, nullptr, traceparent_);
    request_.Clear();
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    AnswerReceipt written;
    Next next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      written = std::move(pending_.front().written);
      pending_.pop_front();
      broken_ |= !ok;
      next = NextLocked();
    }
    if (ok) frontend_->AnswerWritten(written);
    Do(next);
  }

  void OnDone() override { delete this; }

 private:
  struct Pending {
    inference::ModelStreamInferResponse response;
    AnswerReceipt written;
  };
  // What to do once the lock is released: write `write`, or finish.
  struct Next {
    const inference::ModelStreamInferResponse* write = nullptr;
    bool finish = false;
  };
  // REQUIRES: no write under way. Sets writing_ when it returns a write.
  Next NextLocked() {
    if (broken_) pending_.clear();  // the client is gone: the rest is not written
    if (!pending_.empty()) {
      writing_ = true;
      return {&pending_.front().response, false};
    }
    writing_ = false;
    if (reading_ || running_ > 0 || finished_) return {};
    finished_ = true;
    return {nullptr, true};
  }
  // Last: a finish may end the reactor.
  void Do(const Next& next) {
    if (next.write != nullptr) return StartWrite(next.write);
    if (next.finish) Finish(grpc::Status::OK);
  }

  KserveGrpcService* const service_;
  InferenceFrontend* const frontend_;
  const std::optional<TraceContext> traceparent_;  // the stream's: each request's span is its child
  inference::ModelInferRequest request_;  // the one being read
  std::mutex mu_;
  bool reading_ = true;
  int running_ = 0;              // requests not yet answered
  std::deque<Pending> pending_;  // answers to write; the front one is being written while writing_
  bool writing_ = false;
  bool broken_ = false;  // a write failed
  bool finished_ = false;
};

void SetTensorMetadata(const TensorSpec& spec, inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(spec.name);
  out->set_datatype(std::string(DataTypeName(spec.datatype)));
  out->add_shape(-1);  // the batch dimension
  for (int64_t d : spec.shape) out->add_shape(d);
}

// The typed contents field KServe's protocol gives `type`; "" for FP16,
// whose data travels only in raw_input_contents.
absl::string_view ContentsField(DataType type) {
  switch (type) {
    case DataType::kBool: return "bool_contents";
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32: return "int_contents";
    case DataType::kInt64: return "int64_contents";
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32: return "uint_contents";
    case DataType::kUint64: return "uint64_contents";
    case DataType::kFp32: return "fp32_contents";
    case DataType::kFp64: return "fp64_contents";
    case DataType::kBytes: return "bytes_contents";
    case DataType::kFp16: break;
  }
  return "";
}

// A typed model's inputs (codec/typed_tensors.h): all in raw_input_contents,
// or each in the typed contents field the protocol gives its datatype.
absl::Status ParseTypedInputs(const inference::ModelInferRequest& request, const ModelConfig& config,
                              InferRequest* out) {
  TypedInputs typed(config);
  const int raw = request.raw_input_contents_size();
  if (raw > 0 && raw != request.inputs_size()) {
    return Bad(absl::StrCat("raw_input_contents has ", raw, " entries for ", request.inputs_size(),
                            " inputs: give every input's data there, or none"));
  }
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& in = request.inputs(i);
    const std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
    TUTTI_ASSIGN_OR_RETURN(const int index, typed.Add(in.name(), in.datatype(), shape));
    const DataType type = config.inputs[index].datatype;
    const inference::InferTensorContents& c = in.contents();
    const std::pair<const char*, int> fields[] = {
        {"bool_contents", c.bool_contents_size()},   {"int_contents", c.int_contents_size()},
        {"int64_contents", c.int64_contents_size()}, {"uint_contents", c.uint_contents_size()},
        {"uint64_contents", c.uint64_contents_size()}, {"fp32_contents", c.fp32_contents_size()},
        {"fp64_contents", c.fp64_contents_size()},   {"bytes_contents", c.bytes_contents_size()}};
    const absl::string_view field = ContentsField(type);
    const absl::Status misplaced = Bad(absl::StrCat("input '", in.name(), "' is ", DataTypeName(type),
                                                    ": its data goes in ", field.empty() ? "raw_input_contents" : field));
    for (const auto& [name, size] : fields) {
      if (size == 0 || (raw == 0 && name == field)) continue;
      if (raw > 0) return Bad(absl::StrCat("input '", in.name(), "' has both contents and raw_input_contents"));
      return misplaced;
    }
    if (raw == 0 && field.empty()) return misplaced;
    if (raw > 0) {
      TUTTI_RETURN_IF_ERROR(typed.SetRaw(index, request.raw_input_contents(i)));
      continue;
    }
    auto append = [&](const auto& values, auto to_scalar) -> absl::Status {
      for (const auto& v : values) TUTTI_RETURN_IF_ERROR(typed.Append(index, to_scalar(v)));
      return absl::OkStatus();
    };
    auto b = [](bool v) { return WireScalar{.kind = WireScalar::kBool, .b = v}; };
    auto i64 = [](int64_t v) { return WireScalar{.kind = WireScalar::kInt, .i = v}; };
    auto u64 = [](uint64_t v) { return WireScalar{.kind = WireScalar::kUint, .u = v}; };
    auto d = [](double v) { return WireScalar{.kind = WireScalar::kDouble, .d = v}; };
    auto bytes = [](const std::string& v) { return WireScalar{.kind = WireScalar::kBytes, .s = v}; };
    switch (type) {
      case DataType::kBool: TUTTI_RETURN_IF_ERROR(append(c.bool_contents(), b)); break;
      case DataType::kInt8:
      case DataType::kInt16:
      case DataType::kInt32: TUTTI_RETURN_IF_ERROR(append(c.int_contents(), i64)); break;
      case DataType::kInt64: TUTTI_RETURN_IF_ERROR(append(c.int64_contents(), i64)); break;
      case DataType::kUint8:
      case DataType::kUint16:
      case DataType::kUint32: TUTTI_RETURN_IF_ERROR(append(c.uint_contents(), u64)); break;
      case DataType::kUint64: TUTTI_RETURN_IF_ERROR(append(c.uint64_contents(), u64)); break;
      case DataType::kFp32: TUTTI_RETURN_IF_ERROR(append(c.fp32_contents(), d)); break;
      case DataType::kFp64: TUTTI_RETURN_IF_ERROR(append(c.fp64_contents(), d)); break;
      case DataType::kBytes: TUTTI_RETURN_IF_ERROR(append(c.bytes_contents(), bytes)); break;
      case DataType::kFp16: break;  // no contents field: raw only
    }
  }
  return typed.Finish(out);
}

// The typed outputs `answer` asks for, in config order, as raw contents,
// as Triton answers.
void WriteTypedOutputs(const ModelConfig& config, const AnswerLayout& answer,
                       const InferenceFrontend::InferResult& result, inference::ModelInferResponse* response) {
  for (OutputTensor& t : TypedOutputs(config, result.outputs, answer)) {
    auto* out = response->add_outputs();
    out->set_name(t.spec->name);
    out->set_datatype(std::string(DataTypeName(t.spec->datatype)));
    for (int64_t d : t.shape) out->add_shape(d);
    *response->add_raw_output_contents() = std::move(t.bytes);
  }
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
  if (auto it = request.parameters().find("timeout"); it != request.parameters().end()) {
    const InferParameter& p = it->second;
    const bool integer = p.parameter_choice_case() == InferParameter::kInt64Param ||
                         (p.parameter_choice_case() == InferParameter::kUint64Param && p.uint64_param() >> 63 == 0);
    const int64_t us = p.parameter_choice_case() == InferParameter::kInt64Param ? p.int64_param()
                                                                                : static_cast<int64_t>(p.uint64_param());
    TUTTI_RETURN_IF_ERROR(CheckTimeout(integer, us));
    out.timeout_us = us;
  }
  if (auto it = request.parameters().find("priority"); it != request.parameters().end()) {
    const InferParameter& p = it->second;
    const bool uint = p.parameter_choice_case() == InferParameter::kUint64Param;
    const bool int64 = p.parameter_choice_case() == InferParameter::kInt64Param && p.int64_param() >= 0;
    TUTTI_RETURN_IF_ERROR(CheckPriority(uint || int64));
    out.priority = uint ? p.uint64_param() : static_cast<uint64_t>(p.int64_param());
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
  for (const auto& o : request.outputs()) {
    TUTTI_RETURN_IF_ERROR(CheckOutputName(config, o.name()));
    out.answer.outputs.push_back(o.name());
  }
  if (!IsPlainFp32(config.inputs)) {
    TUTTI_RETURN_IF_ERROR(ParseTypedInputs(request, config, &out));
    return out;
  }
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
                     const InferenceFrontend::InferResult& result, inference::ModelInferResponse* response,
                     const AnswerLayout& answer) {
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
  if (!IsPlainFp32(served.config.outputs)) return WriteTypedOutputs(served.config, answer, result, response);
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
  for (absl::string_view e : kServerExtensions) response->add_extensions(std::string(e));
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
  RunInfer(
      request,
      [reactor](const absl::Status& status, inference::ModelInferResponse out, AnswerReceipt written) {
        reactor->Answer(status, out, std::move(written));
      },
      reactor->cancel(), Traceparent(context));
  return reactor;
}

void KserveGrpcService::RunInfer(const inference::ModelInferRequest& request, InferAnswer done,
                                 std::shared_ptr<CancelFlag> cancel, std::optional<TraceContext> traceparent) {
  auto fail = [&](const absl::Status& status) { done(status, inference::ModelInferResponse(), {}); };
  // Model-less (INFaaS): no model_name, and a "task" parameter; the variant
  // is chosen as on HTTP's /v2/tasks/{task}/infer.
  const auto task = request.parameters().find("task");
  std::optional<std::string> task_name;
  absl::StatusOr<int> model = absl::NotFoundError("");
  std::vector<int> variants;
  if (task != request.parameters().end()) {
    if (!request.model_name().empty()) {
      return fail(Bad("give model_name or the parameter 'task' (a model-less request), not both"));
    }
    if (task->second.parameter_choice_case() != InferParameter::kStringParam) {
      return fail(Bad("parameter 'task' must be a string"));
    }
    task_name = task->second.string_param();
    variants = frontend_->TaskVariants(*task_name);
    if (variants.empty()) {
      return fail(absl::NotFoundError(absl::StrCat("no loaded model serves task ", QuoteUserText(*task_name))));
    }
    model = variants[0];  // its variants share their input: parsed against the first
  } else {
    model = frontend_->FindModel(request.model_name(), request.model_version());
  }
  if (!model.ok()) return fail(model.status());
  absl::StatusOr<InferRequest> parsed = ParseModelInfer(request, frontend_->served(*model).config);
  if (!parsed.ok()) {
    frontend_->CountRejected(*model);
    return fail(parsed.status());
  }
  InferenceFrontend::TaskChoice choice;
  if (task_name) {
    choice = frontend_->ChooseForTask(*task_name, variants, parsed->min_accuracy, Millis(parsed->objective_ms));
    model = choice.model;
  }
  const InferenceFrontend::ServedModel& served = frontend_->served(*model);
  parsed->cancel = std::move(cancel);
  parsed->traceparent = traceparent;
  const std::string id = parsed->id;
  AnswerLayout answer = parsed->answer;
  frontend_->Infer(*model, *std::move(parsed),
                   [this, &served, id, answer = std::move(answer), task_name, choice, done = std::move(done)](
                       absl::StatusOr<InferenceFrontend::InferResult> r) {
                     inference::ModelInferResponse out;
                     if (!r.ok()) return done(r.status(), std::move(out), {});
                     WriteModelInfer(served, id, *r, &out, answer);
                     auto& params = *out.mutable_parameters();
                     params["tutti_server_us"].set_double_param(ToMicros(frontend_->ServerTime(*r)));
                     if (task_name) {
                       params["tutti_task"].set_string_param(ValidUtf8(*task_name));
                       params["tutti_meets_requirements"].set_bool_param(choice.meets);
                       if (!choice.note.empty()) params["tutti_variant_note"].set_string_param(choice.note);
                     }
                     done(absl::OkStatus(), std::move(out), std::move(r->written));
                   });
}

grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
KserveGrpcService::ModelStreamInfer(grpc::CallbackServerContext* context) {
  return new StreamReactor(this, frontend_, Authorize(context, Api::kInference), Traceparent(context));
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelConfig(grpc::CallbackServerContext* context,
                                                         const inference::ModelConfigRequest* request,
                                                         inference::ModelConfigResponse* response) {
  if (absl::Status s = Authorize(context, Api::kMetadata); !s.ok()) return FinishUnary(context, s);
  absl::StatusOr<int> model = frontend_->FindModel(request->name(), request->version());
  if (!model.ok()) return FinishUnary(context, model.status());
  WriteModelConfig(frontend_->served(*model).config, response->mutable_config());
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelStatistics(grpc::CallbackServerContext* context,
                                                             const inference::ModelStatisticsRequest* request,
                                                             inference::ModelStatisticsResponse* response) {
  if (absl::Status s = Authorize(context, Api::kAdmin); !s.ok()) return FinishUnary(context, s);
  std::vector<int> models = frontend_->ListedModels();
  if (!request->name().empty()) {
    absl::StatusOr<int> model = frontend_->FindModel(request->name(), request->version());
    if (!model.ok()) return FinishUnary(context, model.status());
    models = {*model};
  }
  for (int m : models) {
    const InferenceFrontend::Statistics st = frontend_->ModelStatistics(m);
    inference::ModelStatistics* out = response->add_model_stats();
    out->set_name(frontend_->served(m).config.name);
    out->set_version(std::to_string(frontend_->served(m).version));
    out->set_last_inference(st.last_inference_ms);
    out->set_inference_count(st.inference_count);
    out->set_execution_count(st.execution_count);
    inference::InferStatistics* s = out->mutable_inference_stats();
    auto set = [](const InferenceFrontend::Statistics::Summed& d, inference::StatisticDuration* to) {
      to->set_count(d.count);
      to->set_ns(d.ns);
    };
    set(st.success, s->mutable_success());
    set(st.fail, s->mutable_fail());
    set(st.queue, s->mutable_queue());
    set(st.compute_input, s->mutable_compute_input());
    set(st.compute_infer, s->mutable_compute_infer());
    set(st.compute_output, s->mutable_compute_output());
  }
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryIndex(grpc::CallbackServerContext* context,
                                                             const inference::RepositoryIndexRequest* request,
                                                             inference::RepositoryIndexResponse* response) {
  if (absl::Status s = Authorize(context, Api::kAdmin); !s.ok()) return FinishUnary(context, s);
  for (int m : frontend_->ListedModels()) {
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
