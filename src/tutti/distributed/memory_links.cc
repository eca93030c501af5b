#include "tutti/distributed/memory_links.h"

#include <algorithm>

namespace tutti {

namespace pb = ::tutti::internal;

class MemoryNetwork::ProcessConnector final : public Connector {
 public:
  ProcessConnector(MemoryNetwork* network, std::string address) : network_(network), address_(std::move(address)) {}
  std::shared_ptr<FrontendLink> OpenFrontend(const std::string& scheduler, FrontendHandlers handlers) override {
    return network_->Open<pb::FrontendUp, pb::FrontendDown>(address_, scheduler, std::move(handlers));
  }
  std::shared_ptr<BackendLink> OpenBackend(const std::string& scheduler, BackendHandlers handlers) override {
    return network_->Open<pb::BackendUp, pb::BackendDown>(address_, scheduler, std::move(handlers));
  }
  std::shared_ptr<FeedLink> OpenFeed(const std::string& backend, FeedHandlers handlers) override {
    return network_->Open<pb::FeedDown, pb::FeedUp>(address_, backend, std::move(handlers));
  }
  std::shared_ptr<ReplicaLink> OpenReplica(const std::string& backup, ReplicaHandlers handlers) override {
    return network_->Open<pb::ReplicaDown, pb::ReplicaUp>(address_, backup, std::move(handlers));
  }

 private:
  MemoryNetwork* const network_;
  const std::string address_;
};

MemoryNetwork::~MemoryNetwork() {
  for (auto& s : streams_) s->End(false);
}

void MemoryNetwork::Sever(const std::string& address) {
  // Copied: ending a stream runs handlers, which may open new ones.
  std::vector<std::shared_ptr<StreamBase>> cut;
  for (auto& s : streams_) {
    if (!s->ended && (s->from == address || s->to == address)) cut.push_back(s);
  }
  for (auto& s : cut) s->End(true);
  std::erase_if(streams_, [](const auto& s) { return s->ended; });
}

void MemoryNetwork::Cut(const std::string& a, const std::string& b) {
  cuts_.insert(Pair(a, b));
  for (auto& s : streams_) {
    if (Pair(s->from, s->to) == Pair(a, b)) s->silent = true;
  }
}

void MemoryNetwork::Heal(const std::string& a, const std::string& b) {
  cuts_.erase(Pair(a, b));
  const Time now = clock_->Now();
  for (auto& s : streams_) {
    if (s->ended || s->connect == nullptr || Pair(s->from, s->to) != Pair(a, b)) continue;
    Duration wait = kSecond;  // as Linux resends a SYN
    while (s->opened + wait < now) wait = 2 * wait + kSecond;
    clock_->ScheduleAt(s->opened + wait, [s] {
      if (s->connect == nullptr) return;  // ended meanwhile
      std::function<void()> connect = std::move(s->connect);
      s->connect = nullptr;
      connect();
    });
  }
}

int MemoryNetwork::open_streams() const {
  return static_cast<int>(std::count_if(streams_.begin(), streams_.end(), [](const auto& s) { return !s->ended; }));
}

Connector* MemoryNetwork::ConnectorFor(const std::string& address) {
  std::unique_ptr<Connector>& c = connectors_[address];
  if (c == nullptr) c = std::make_unique<ProcessConnector>(this, address);
  return c.get();
}

}  // namespace tutti
