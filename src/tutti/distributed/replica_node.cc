#include "tutti/distributed/replica_node.h"

#include <utility>

namespace tutti {

namespace pb = ::tutti::internal;

ReplicaNode::~ReplicaNode() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++epoch_;  // its on_done changes nothing now
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
      backup_.clear();
      closing = std::move(to_backup_);
    }
    if (closing) closing->Close();
    slot_->Demote();
    return;
  }
  slot_->Promote();
  std::shared_ptr<ReplicaLink> closing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (role.backup() == backup_ && (to_backup_ != nullptr || backup_.empty())) return;
    const uint64_t epoch = ++epoch_;
    backup_ = role.backup();
    closing = std::move(to_backup_);
    if (!backup_.empty()) {
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
  }
  if (closing) closing->Close();
  std::shared_ptr<ReplicaLink> link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    link = to_backup_;
  }
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
    to_backup_ = nullptr;  // until a role names one again
    backup_.clear();
  }
  slot_->DetachBackup();
}

std::optional<ReplicaPeerHandlers> ReplicaNode::AcceptReplica(std::shared_ptr<ReplicaPeer> link) {
  slot_->BeginFromPrimary();
  return streams_.Track<pb::ReplicaDown, pb::ReplicaUp>(
      {[this, link](pb::ReplicaDown& down) {
         if (down.messages().empty()) return;
         for (const pb::ReplicaMessage& m : down.messages()) {
           if (!slot_->ApplyFromPrimary(m.body())) {  // it took over: the sender is no primary any more
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
