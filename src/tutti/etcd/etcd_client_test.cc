// EtcdClient against a real etcd (LocalEtcd: Debian's etcd-server on
// loopback with a temporary data directory).
#include "tutti/etcd/etcd_client.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "tutti/etcd/local_etcd.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/test_certs.h"
#include "tutti/testing/wait.h"

namespace tutti {
namespace {

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(*etcd);
    absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(etcd_->endpoint());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }
  std::unique_ptr<LocalEtcd> etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdClientTest, PutGetPrefixDeleteAndPutIfAbsent) {
  ASSERT_TRUE(client_->Put("/t/a/1", "one").ok());
  ASSERT_TRUE(client_->Put("/t/a/2", "two").ok());
  ASSERT_TRUE(client_->Put("/t/b", "other").ok());
  absl::StatusOr<EtcdClient::Snapshot> snap = client_->GetPrefix("/t/a/");
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->kvs.size(), 2u);
  EXPECT_EQ(snap->kvs[0].value, "one");
  EXPECT_EQ(snap->kvs[1].key, "/t/a/2");
  EXPECT_GT(snap->revision, 0);
  EXPECT_EQ(*client_->PutIfAbsent("/t/b", "mine"), false);
  EXPECT_EQ((*client_->Get("/t/b"))->value, "other");
  ASSERT_TRUE(client_->Delete("/t/b").ok());
  EXPECT_FALSE(client_->Get("/t/b")->has_value());
  EXPECT_EQ(*client_->PutIfAbsent("/t/b", "mine"), true);
  EXPECT_EQ((*client_->Get("/t/b"))->value, "mine");
}

TEST_F(EtcdClientTest, KeysUnderARevokedLeaseDisappearAndWatchersSeeIt) {
  absl::StatusOr<int64_t> lease = client_->GrantLease(5);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->Put("/w/backend", "addr", *lease).ok());
  absl::StatusOr<EtcdClient::Snapshot> snap = client_->GetPrefix("/w/");
  ASSERT_TRUE(snap.ok());
  std::promise<EtcdClient::Event> deleted;
  auto watch = client_->Watch("/w/", snap->revision, [&](const std::vector<EtcdClient::Event>& events) {
    for (const EtcdClient::Event& e : events) {
      if (e.deleted) deleted.set_value(e);
    }
  });
  ASSERT_TRUE(client_->RevokeLease(*lease).ok());
  std::future<EtcdClient::Event> f = deleted.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get().kv.key, "/w/backend");
  EXPECT_FALSE(client_->Get("/w/backend")->has_value());
}

TEST_F(EtcdClientTest, KeepAliveHoldsALeaseThatWouldOtherwiseExpire) {
  absl::StatusOr<int64_t> kept = client_->GrantLease(1);
  absl::StatusOr<int64_t> dropped = client_->GrantLease(1);
  ASSERT_TRUE(kept.ok() && dropped.ok());
  ASSERT_TRUE(client_->Put("/k/kept", "1", *kept).ok());
  ASSERT_TRUE(client_->Put("/k/dropped", "1", *dropped).ok());
  absl::StatusOr<EtcdClient::Snapshot> snap = client_->GetPrefix("/k/");
  ASSERT_TRUE(snap.ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> deleted;
  auto watch = client_->Watch("/k/", snap->revision, [&](const std::vector<EtcdClient::Event>& events) {
    std::lock_guard<std::mutex> lock(mu);
    for (const EtcdClient::Event& e : events) {
      if (e.deleted) deleted.push_back(e.kv.key);
    }
    cv.notify_all();
  });
  std::atomic<bool> lost{false};
  auto keeper = client_->KeepAlive(*kept, kSecond, [&] { lost = true; });
  std::unique_lock<std::mutex> lock(mu);
  // The unkept lease expires (its TTL, then etcd's sweep)…
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !deleted.empty(); }));
  EXPECT_EQ(deleted[0], "/k/dropped");
  // …and two TTLs later the kept one still holds.
  EXPECT_FALSE(cv.wait_for(lock, std::chrono::seconds(2), [&] { return deleted.size() > 1; }));
  EXPECT_EQ(deleted.size(), 1u);
  EXPECT_TRUE(client_->Get("/k/kept")->has_value());
  EXPECT_FALSE(lost);
}

TEST_F(EtcdClientTest, CampaignWaitsForTheLeaderToGo) {
  absl::StatusOr<int64_t> first = client_->GrantLease(10);
  absl::StatusOr<int64_t> second = client_->GrantLease(10);
  ASSERT_TRUE(first.ok() && second.ok());
  std::atomic<bool> stop{false};
  ASSERT_TRUE(client_->Campaign("/e/leader", "first", *first, &stop).ok());
  std::atomic<bool> second_leads{false};
  std::mutex mu;
  std::condition_variable cv;
  std::string seen_leading;  // by the spare, as it starts waiting
  std::thread spare([&] {
    second_leads = client_
                       ->Campaign("/e/leader", "second", *second, &stop,
                                  [&](const EtcdClient::KeyValue& holder) {
                                    std::lock_guard<std::mutex> lock(mu);
                                    seen_leading = holder.value;
                                    cv.notify_all();
                                  })
                       .ok();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    AwaitOrFail(cv, lock, [&] { return !seen_leading.empty(); }, "the spare's campaign to wait");
    EXPECT_EQ(seen_leading, "first");
  }
  EXPECT_FALSE(second_leads);  // it waits: the leader lives
  EXPECT_EQ((*client_->Get("/e/leader"))->value, "first");
  ASSERT_TRUE(client_->RevokeLease(*first).ok());  // the leader dies
  spare.join();
  EXPECT_TRUE(second_leads);
  EXPECT_EQ((*client_->Get("/e/leader"))->value, "second");

  // A campaign that never wins ends when told to stop, here as it starts
  // waiting for the leader.
  absl::StatusOr<int64_t> third = client_->GrantLease(10);
  EXPECT_EQ(client_->Campaign("/e/leader", "third", *third, &stop, [&](const EtcdClient::KeyValue&) { stop = true; })
                .code(),
            absl::StatusCode::kCancelled);
}

TEST(EtcdConnectTest, UnreachableEtcdIsAClearError) {
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect("127.0.0.1:1", Millis(300));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find("cannot reach etcd"), std::string::npos);
}

TEST(EtcdTlsTest, EtcdWithClientCertificatesTakesOnlyTheClustersMembers) {
  testing::TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki(dir.path());
  const TlsOptions member{pki.client_cert, pki.client_key, pki.ca_cert};
  absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start("/usr/bin/etcd", member);
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect((*etcd)->endpoint(), 5 * kSecond, member);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE((*client)->Put("/tutti/t/backends/b1", "0 127.0.0.1:1").ok());
  // Without a certificate from the cluster's CA, or without TLS, nobody
  // reaches etcd: a backend cannot register.
  const TlsOptions stranger{pki.stranger_cert, pki.stranger_key, pki.ca_cert};
  for (const TlsOptions& tls : {stranger, TlsOptions{}}) {
    absl::StatusOr<std::unique_ptr<EtcdClient>> refused = EtcdClient::Connect((*etcd)->endpoint(), Millis(1500), tls);
    EXPECT_FALSE(refused.ok());
  }
  absl::StatusOr<EtcdClient::Snapshot> snap = (*client)->GetPrefix("/tutti/t/backends/");
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->kvs.size(), 1u);
}

TEST(PrefixRangeEndTest, IncrementsTheLastByte) {
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixRangeEnd("a\xff"), "b");
  EXPECT_EQ(PrefixRangeEnd(""), std::string(1, '\0'));
}

}  // namespace
}  // namespace tutti
