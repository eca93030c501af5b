// RemoteEngine: the frontend process's InferenceEngine in distributed mode.
// It keeps each request's input and hands only its metadata (id, model,
// time left to its deadline) to the leading scheduler; backends pull the
// inputs of the batches they were given (FetchInputs) and push the outputs
// back (Deliver); the scheduler tells which requests it dropped (Reject).
//
// Every accepted request is answered exactly once:
//   - with its output, from the backend that ran it;
//   - DeadlineExceeded, when the scheduler dropped it;
//   - Unavailable (retryable) when no scheduler leads, when the leader did
//     not take it, or when the leader changed before any backend asked for
//     its input (the new leader never heard of it);
//   - DeadlineExceeded, as a last resort, if nothing came `orphan_grace`
//     after its deadline (its backend and the scheduler failed together).
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_DISTRIBUTED_REMOTE_ENGINE_H_
#define TUTTI_DISTRIBUTED_REMOTE_ENGINE_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/core/clock.h"
#include "tutti/distributed/rpc_util.h"
#include "tutti/proto/tutti_internal.grpc.pb.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/serving/inference_core.h"
#include "tutti/serving/inference_engine.h"

namespace tutti {

class RemoteEngine final : public InferenceEngine, public internal::Frontend::CallbackService {
 public:
  struct Options {
    Duration rpc_timeout = kSecond;
    Duration orphan_grace = 2 * kSecond;
  };
  // `spec` gives the models' objectives (the layout every process shares);
  // `shapes` their sizes. `clock` must be real and outlive the engine.
  RemoteEngine(ClusterSpec spec, std::vector<InferenceCore::ModelShape> shapes, Options options, Clock* clock);
  ~RemoteEngine() override;  // REQUIRES: idle (WaitIdle())

  // The leading scheduler's address; "" while none leads. Requests given to
  // a previous leader that no backend has asked for are answered with a
  // retryable error.
  void SetLeader(const std::string& address);
  // This frontend's Frontend service (host:port), as backends reach it. Set
  // it before the first Submit.
  void SetAddress(const std::string& address);
  std::string leader() const;

  // InferenceEngine.
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) override;
  void StopAccepting() override;
  void WaitIdle() override;
  int64_t in_flight() const override;
  std::vector<ModelCounters> Counters() const override;
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return clock_->Now(); }
  void OnAnswerWritten(Time finished) override {}
  DelayReport Delays() const override { return {}; }

  // internal.Frontend
  grpc::ServerUnaryReactor* FetchInputs(grpc::CallbackServerContext* context, const internal::FetchRequest* request,
                                        internal::FetchReply* reply) override;
  grpc::ServerUnaryReactor* Deliver(grpc::CallbackServerContext* context, const internal::DeliverRequest* request,
                                    internal::DeliverReply* reply) override;
  grpc::ServerUnaryReactor* Reject(grpc::CallbackServerContext* context, const internal::RejectRequest* request,
                                   internal::RejectReply* reply) override;

 private:
  struct Pending {
    ModelId model;
    std::vector<float> input;
    InferenceCallback done;
    Time arrival;
    Time deadline;
    uint64_t leader_epoch = 0;  // the leadership it was submitted under; 0: not yet
    bool fetched = false;       // a backend has its input
  };
  using Answers = std::vector<std::pair<InferenceCallback, InferenceOutcome>>;

  void SendToLeader(std::vector<uint64_t> ids, std::function<void()> done);
  // Removes `id` and queues its answer. REQUIRES: mu_ held.
  void AnswerLocked(uint64_t id, InferenceOutcome outcome, Answers* answers);
  InferenceOutcome ErrorOutcome(const Pending& p, absl::Status status) const;
  void Answer(Answers answers);
  void Sweep();  // the orphan watchdog, every 200 ms

  const ClusterSpec spec_;
  const std::vector<InferenceCore::ModelShape> shapes_;
  const Options options_;
  Clock* const clock_;
  StubCache<internal::Scheduler> scheduler_stubs_;
  Coalescer<uint64_t> submits_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  absl::flat_hash_map<uint64_t, Pending> pending_;  // GUARDED_BY(mu_)
  std::vector<ModelCounters> counters_;             // GUARDED_BY(mu_)
  std::string leader_;                              // GUARDED_BY(mu_)
  std::string address_;                             // GUARDED_BY(mu_)
  uint64_t epoch_ = 1;                              // GUARDED_BY(mu_): +1 per leader change
  uint64_t next_id_ = 1;                            // GUARDED_BY(mu_)
  int64_t answering_ = 0;                           // GUARDED_BY(mu_): answers taken out, callbacks not yet run
  bool accepting_ = true;                           // GUARDED_BY(mu_)
  bool stopping_ = false;                           // GUARDED_BY(mu_)
  TimerId sweep_timer_ = kNoTimer;                  // GUARDED_BY(mu_)
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_REMOTE_ENGINE_H_
