// BackendNode: a backend process's service in distributed mode — one
// executor (a GPU, an emulated GPU or a CPU worker) holding the models of
// one executor group. For each batch plan from the scheduler it pulls the
// inputs from the frontends that hold them, runs the batch no earlier than
// the planned start, pushes every output (or error) to its frontend, and
// reports the batch done to the scheduler that planned it (Symphony §4.1).
// A request whose frontend no longer has it (answered or gone) is left out
// of the batch.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_DISTRIBUTED_BACKEND_NODE_H_
#define TUTTI_DISTRIBUTED_BACKEND_NODE_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tutti/core/clock.h"
#include "tutti/distributed/rpc_util.h"
#include "tutti/executors/executor.h"
#include "tutti/proto/tutti_internal.grpc.pb.h"
#include "tutti/serving/inference_core.h"

namespace tutti {

class BackendNode final : public internal::Backend::CallbackService {
 public:
  // `shapes[i]` is the size of the executor's model i. `clock` must be real
  // and outlive the node.
  BackendNode(std::string id, int group, std::unique_ptr<Executor> executor,
              std::vector<InferenceCore::ModelShape> shapes, Clock* clock, Duration rpc_timeout = kSecond);
  ~BackendNode() override;  // WaitIdle()

  // Blocks until every batch received has been run and reported.
  void WaitIdle();

  const std::string& id() const { return id_; }

  // internal.Backend
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context, const internal::BatchPlan* plan,
                                    internal::ExecuteReply* reply) override;
  grpc::ServerUnaryReactor* GetState(grpc::CallbackServerContext* context, const internal::GetStateRequest* request,
                                     internal::BackendState* reply) override;

 private:
  struct Job;
  void Run(std::shared_ptr<Job> job);
  void Finish(std::shared_ptr<Job> job, ExecResult result);

  const std::string id_;
  const int group_;
  const std::unique_ptr<Executor> executor_;
  const std::vector<InferenceCore::ModelShape> shapes_;
  Clock* const clock_;
  const Duration rpc_timeout_;
  StubCache<internal::Frontend> frontends_;
  StubCache<internal::Scheduler> schedulers_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  Time busy_until_ = 0;   // GUARDED_BY(mu_): when the batches it holds are predicted done
  int held_ = 0;          // GUARDED_BY(mu_): batches received, not yet reported
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_BACKEND_NODE_H_
