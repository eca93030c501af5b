#include "tutti/distributed/backend_node.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/fnv_hash.h"

namespace tutti {

namespace pb = ::tutti::internal;

BackendNode::BackendNode(Options options, std::unique_ptr<Executor> executor,
                         std::vector<ModelShape> shapes, Clock* clock, Connector* connector)
    : options_(std::move(options)),
      executor_(std::move(executor)),
      shapes_(std::move(shapes)),
      clock_(clock),
      connector_(connector) {
  std::lock_guard<std::mutex> lock(mu_);
  tick_timer_ = clock_->ScheduleAfter(options_.ping_every, [this] { Tick(); });
}

BackendNode::~BackendNode() {
  WaitIdle();
  std::shared_ptr<BackendLink> leader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    ++epoch_;
    clock_->Cancel(tick_timer_);
    for (auto& [batch, a] : assembling_) clock_->Cancel(a.grace_timer);
    leader = std::move(leader_link_);
  }
  if (leader) leader->Close();
  streams_.CloseAll();
  streams_.WaitAll();
}

void BackendNode::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return held_ == 0; });
}

Time BackendNode::ToCluster(Time local) const { return sync_.synced() ? sync_.ToCluster(local) : local; }

// ---- parts from frontends ---------------------------------------------------------

FeedPeerHandlers BackendNode::AcceptFeed(std::shared_ptr<FeedPeer> link) {
  return streams_.Track<pb::FeedDown, pb::FeedUp>(
      {[this, link](pb::FeedDown& down) {
         for (pb::Part& part : *down.mutable_parts()) OnPart(link, part);
       },
       {},
       {}},
      link);
}

void BackendNode::OnPart(const std::shared_ptr<FeedPeer>& link, pb::Part& part) {
  std::optional<Assembly> complete;
  const uint64_t batch = part.batch();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, added] = assembling_.try_emplace(batch);
    Assembly& a = it->second;
    if (added) {
      a.model = part.model();
      a.exec_at = part.exec_at();
      a.latency = part.latency();
      a.parts = std::max(1, part.parts());
      ++held_;
      const Time start = sync_.synced() ? sync_.ToLocal(a.exec_at) : a.exec_at;
      busy_until_ = std::max(busy_until_, start) + a.latency;
      a.grace_timer = clock_->ScheduleAt(start + options_.part_grace, [this, batch] {
        std::optional<Assembly> late;
        {
          std::lock_guard<std::mutex> l(mu_);
          auto i = assembling_.find(batch);
          if (i == assembling_.end()) return;
          late = std::move(i->second);
          assembling_.erase(i);
        }
        Run(batch, std::move(*late));  // with the parts that came
      });
    }
    Piece& piece = a.pieces.emplace_back();
    piece.link = link;
    piece.ids.assign(part.ids().begin(), part.ids().end());
    piece.inputs = std::move(*part.mutable_inputs());
    piece.source = part.source();
    if (part.sequence_ids_size() == part.ids_size() && part.sequence_flags_size() == part.ids_size()) {
      for (int i = 0; i < part.ids_size(); ++i) {
        const uint32_t flags = part.sequence_flags(i);
        piece.sequences.push_back({part.sequence_ids(i), (flags & 1) != 0, (flags & 2) != 0});
      }
    }
    if (options_.tracer != nullptr && part.traceparents_size() == part.ids_size()) {
      for (const std::string& t : part.traceparents()) {
        piece.traces.push_back(t.empty() ? TraceContext{} : ParseTraceparent(t).value_or(TraceContext{}));
      }
    }
    if (static_cast<int>(a.pieces.size()) < a.parts) return;
    clock_->Cancel(a.grace_timer);
    complete = std::move(a);
    assembling_.erase(it);
  }
  Run(batch, std::move(*complete));
}

void BackendNode::Run(uint64_t batch, Assembly assembly) {
  const Time ready = clock_->Now();
  if (assembly.model < 0 || assembly.model >= static_cast<int>(shapes_.size())) {
    ExecResult bad;
    bad.status = absl::InvalidArgumentError(absl::StrCat("backend ", options_.id, " holds no model ", assembly.model));
    bad.received = bad.ready = bad.started = bad.finished = ready;
    return Finish(batch, assembly, ready, std::move(bad));
  }
  const size_t item_bytes = static_cast<size_t>(shapes_[assembly.model].input_elements) * sizeof(float);
  ExecBatch exec;
  exec.model = assembly.model;
  // Every part is in: it runs once the batch before it is done, not at its
  // planned start. That start is the decision plus a high quantile of the
  // dispatch delay; waiting for it would add that margin to every answer
  // (executor.h: a GPU starts what it has).
  exec.start_at = ready;
  bool sequences = false;  // a stateful model's batch
  for (const Piece& p : assembly.pieces) sequences |= !p.sequences.empty();
  for (Piece& p : assembly.pieces) {
    if (p.inputs.size() != p.ids.size() * item_bytes) {  // a part that does not add up: left out
      p.ids.clear();
      p.traces.clear();
      continue;
    }
    const size_t at = exec.input.size();
    exec.input.resize(at + p.inputs.size() / sizeof(float));
    if (!p.inputs.empty()) std::memcpy(exec.input.data() + at, p.inputs.data(), p.inputs.size());
    std::string().swap(p.inputs);
    exec.size += static_cast<int>(p.ids.size());
    for (size_t i = 0; i < p.ids.size(); ++i) {
      if (sequences) exec.sequences.push_back(p.sequences.empty() ? SequenceRef{} : p.sequences[i]);
      exec.tags.push_back(FnvMix(p.source ^ kFnvOffsetBasis, &p.ids[i], sizeof(uint64_t)));
    }
  }
  if (exec.size == 0) {
    ExecResult nothing;
    nothing.received = nothing.ready = nothing.started = nothing.finished = ready;
    return Finish(batch, assembly, ready, std::move(nothing));
  }
  auto shared = std::make_shared<Assembly>(std::move(assembly));
  executor_->Run(std::move(exec), [this, batch, shared, ready](ExecResult result) {
    Finish(batch, *shared, ready, std::move(result));
  });
}

void BackendNode::Finish(uint64_t batch, const Assembly& assembly, Time ready, ExecResult result) {
  const int n = [&] {
    int s = 0;
    for (const Piece& p : assembly.pieces) s += static_cast<int>(p.ids.size());
    return s;
  }();
  const size_t item_bytes =
      assembly.model >= 0 && assembly.model < static_cast<int>(shapes_.size())
          ? static_cast<size_t>(shapes_[assembly.model].output_elements) * sizeof(float)
          : 0;
  if (result.status.ok() && result.output.size() * sizeof(float) != n * item_bytes) {
    result.status = absl::InternalError(
        absl::StrCat("executor returned ", result.output.size(), " values for ", n, " items"));
  }
  Time started, finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    started = ToCluster(result.started);
    finished = ToCluster(result.finished);
    pb::Done& done = reports_.emplace_back();
    done.set_batch(batch);
    done.set_ok(result.status.ok());
    done.set_ready(ToCluster(ready));
    done.set_could_start(ToCluster(std::max(result.ready, ready)));
    done.set_started(started);
    done.set_finished(finished);
  }
  for (const Piece& p : assembly.pieces) {
    for (const TraceContext& t : p.traces) {
      if (!t.recording()) continue;
      Span span{Tracer::Child(t), "execute", Span::Kind::kInternal, result.started, result.finished};
      span.attributes = {{"tutti.backend", options_.id}, {"tutti.batch_size", int64_t{n}}};
      if (!result.status.ok()) span.error = std::string(result.status.message());
      options_.tracer->Record(std::move(span));
      if (result.released > 0) RecordReplicateSpan(*options_.tracer, t, result.finished, result.released);
    }
  }
  // Each part's outputs go back on the stream it came on.
  size_t offset = 0;
  size_t item = 0;  // the batch's first item of the piece
  for (const Piece& p : assembly.pieces) {
    if (p.ids.empty()) continue;
    const size_t bytes = p.ids.size() * item_bytes;
    p.link->Send([&](pb::FeedUp* up) {
      pb::Outputs* o = up->add_outputs();
      o->set_batch(batch);
      o->set_code(static_cast<int>(result.status.code()));
      o->set_message(std::string(result.status.message()));
      o->set_emulated(result.emulated);
      o->set_batch_size(n);
      o->set_started(started);
      o->set_finished(finished);
      for (uint64_t id : p.ids) o->add_ids(id);
      if (result.status.ok()) {
        o->set_outputs(reinterpret_cast<const char*>(result.output.data()) + offset, bytes);
      }
      if (result.status.ok() && !result.item_status.empty()) {
        for (size_t i = item; i < item + p.ids.size() && i < result.item_status.size(); ++i) {
          o->add_item_codes(static_cast<int>(result.item_status[i].code()));
          o->add_item_messages(std::string(result.item_status[i].message()));
        }
      }
    });
    offset += bytes;
    item += p.ids.size();
  }
  SendReports();
  std::lock_guard<std::mutex> lock(mu_);
  if (--held_ == 0) idle_.notify_all();
}

void BackendNode::SendReports() {
  std::lock_guard<std::mutex> lock(mu_);
  if (reports_.empty()) return;
  if (leader_link_) {
    leader_link_->Send([this](pb::BackendUp* up) {
      for (pb::Done& d : reports_) up->add_done()->Swap(&d);
    });
  }
  reports_.clear();  // a leader that is gone needs none
}

// ---- the leader -----------------------------------------------------------------

void BackendNode::SetAddress(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  address_ = address;
}

void BackendNode::SetLeader(const std::string& address) {
  std::shared_ptr<BackendLink> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (address == leader_ && leader_link_) return;
    old = std::move(leader_link_);
    leader_ = address;
    if (!leader_.empty()) Connect();
  }
  if (old) old->Close();
}

void BackendNode::Connect() {
  const uint64_t epoch = ++epoch_;
  sync_.Reset();
  said_hello_ = false;
  leader_link_ = connector_->OpenBackend(
      leader_,
      streams_.Track<pb::BackendDown, pb::BackendUp>(
          {[this, epoch](pb::BackendDown& down) { OnLeaderMessage(epoch, down); },
           [this, epoch] { OnLeaderGone(epoch); },
           [this](pb::BackendUp* up) {
             if (up->has_ping()) up->mutable_ping()->set_sent(clock_->Now());
           }}));
  leader_link_->Send([](pb::BackendUp* up) { up->mutable_ping(); });
}

void BackendNode::OnLeaderMessage(uint64_t epoch, pb::BackendDown& down) {
  const Time now = clock_->Now();
  if ((down.rejoin() || down.has_role()) && options_.on_role) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (epoch != epoch_) return;
    }
    if (down.rejoin()) options_.on_role(pb::Role());  // taken for dead: it holds no slot any more
    if (down.has_role()) options_.on_role(down.role());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch != epoch_) return;
  if (down.rejoin()) said_hello_ = false;  // the next pong brings a new hello: it joins as a spare
  if (!down.has_pong()) return;
  const pb::Pong& p = down.pong();
  sync_.Add(p.ping_sent(), p.received(), p.sent(), now);
  if (said_hello_) return;
  said_hello_ = true;  // the clock is synced: the leader may give it work
  leader_link_->Send([&](pb::BackendUp* up) {
    pb::Hello* hello = up->mutable_hello();
    hello->set_id(options_.id);
    hello->set_group(options_.group);
    hello->set_address(address_);
    hello->set_busy_for(std::max<Duration>(0, busy_until_ - now));
    if (options_.is_primary) hello->set_primary(options_.is_primary());
  });
}

void BackendNode::OnLeaderGone(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch != epoch_) return;
  leader_link_ = nullptr;  // Tick reconnects, unless etcd names another leader first
}

void BackendNode::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  if (leader_link_ == nullptr && !leader_.empty()) Connect();
  if (leader_link_) leader_link_->Send([](pb::BackendUp* up) { up->mutable_ping(); });
  tick_timer_ = clock_->ScheduleAfter(options_.ping_every, [this] { Tick(); });
}

}  // namespace tutti
