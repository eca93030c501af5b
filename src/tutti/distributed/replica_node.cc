#include "tutti/distributed/replica_node.h"

#include <utility>

namespace tutti {

namespace pb = ::tutti::internal;

ReplicaNode::~ReplicaNode() {
  gate_->Close();  // a retry under way ends first
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    ++epoch_;  // its on_done changes nothing now
    if (retry_timer_ != kNoTimer) clock_->Cancel(retry_timer_);
    if (to_backup_) to_backup_->Close();
    to_backup_ = nullptr;
  }
  streams_.CloseAll();
  streams_.WaitAll();
}

void ReplicaNode::OnRole(const pb::Role& role) {
  if (!role.holds_slot()) {
    std::shared_ptr<ReplicaLink> closing;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++epoch_;
      holds_slot_ = false;
      backup_.clear();
      closing = std::move(to_backup_);
    }
    if (closing) closing->Close();
    slot_->Demote();
    return;
  }
  slot_->Promote();
  {
    std::lock_guard<std::mutex> lock(mu_);
    holds_slot_ = true;
    if (role.backup() == backup_ && (to_backup_ != nullptr || backup_.empty())) return;
    backup_ = role.backup();
  }
  ConnectBackup();
}

void ReplicaNode::ConnectBackup() {
  std::shared_ptr<ReplicaLink> closing, link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t epoch = ++epoch_;
    closing = std::move(to_backup_);
    if (!backup_.empty() && holds_slot_ && !stopping_) {
      to_backup_ = connector_->OpenReplica(
          backup_, streams_.Track<pb::ReplicaUp, pb::ReplicaDown>(
                       {[this, epoch](pb::ReplicaUp& up) {
                          {
                            std::lock_guard<std::mutex> l(mu_);
                            if (epoch != epoch_) return;
                          }
                          if (up.promoted()) return slot_->Demote();  // its backup took over: fenced off
                          slot_->OnBackupApplied(up.applied());
                        },
                        [this, epoch] { OnBackupGone(epoch); },
                        {}}));
    }
    link = to_backup_;
  }
  if (closing) closing->Close();
  if (link == nullptr) return slot_->DetachBackup();
  slot_->AttachBackup([link](uint64_t seq, std::string body) {
    link->Send([&](pb::ReplicaDown* down) {
      pb::ReplicaMessage* m = down->add_messages();
      m->set_seq(seq);
      m->set_body(std::move(body));
    });
  });
}

void ReplicaNode::OnBackupGone(uint64_t epoch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch != epoch_) return;
    to_backup_ = nullptr;
    // The backup refused the stream (it still serves as a primary that the
    // leader has not yet told to stand down) or went away: try again soon,
    // while the role names it.
    if (!stopping_ && holds_slot_ && !backup_.empty() && retry_timer_ == kNoTimer) {
      retry_timer_ = clock_->ScheduleAfter(kRetryAfter, [gate = gate_] {
        gate->Run([](ReplicaNode& node) { node.Retry(); });
      });
    }
  }
  slot_->DetachBackup();
}

void ReplicaNode::Retry() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    retry_timer_ = kNoTimer;
    if (to_backup_ != nullptr) return;
  }
  ConnectBackup();
}

std::optional<ReplicaPeerHandlers> ReplicaNode::AcceptReplica(std::shared_ptr<ReplicaPeer> link) {
  // Only a standby takes a primary's stream: a slot still serving as a
  // primary refuses it until the leader tells it to stand down.
  if (!slot_->BeginFromPrimary()) return std::nullopt;
  return streams_.Track<pb::ReplicaDown, pb::ReplicaUp>(
      {[this, link](pb::ReplicaDown& down) {
         if (down.messages().empty()) return;
         for (const pb::ReplicaMessage& m : down.messages()) {
           if (!slot_->ApplyFromPrimary(m.body())) {  // it took over from this primary, which must stand down
             link->Send([](pb::ReplicaUp* up) { up->set_promoted(true); });
             return;
           }
         }
         link->Send([applied = down.messages().rbegin()->seq()](pb::ReplicaUp* up) { up->set_applied(applied); });
       },
       {},
       {}},
      link);
}

}  // namespace tutti
