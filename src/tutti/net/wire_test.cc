#include "tutti/net/wire.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tutti/net/event_loop.h"
#include "tutti/net/tls.h"
#include "tutti/net/wire_stream.h"
#include "tutti/proto/tutti_internal.pb.h"
#include "tutti/testing/temp_dir.h"
#include "tutti/testing/test_certs.h"

namespace tutti {
namespace {

namespace pb = ::tutti::internal;
using Up = WireStream<pb::FrontendDown, pb::FrontendUp>;    // the dialing side
using Down = WireStream<pb::FrontendUp, pb::FrontendDown>;  // the accepting side

// Waits for conditions that other threads make true (no sleeping).
class Waiter {
 public:
  void Update(const std::function<void()>& change) {
    std::lock_guard<std::mutex> lock(mu_);
    change();
    cv_.notify_all();
  }
  // True once `done` holds (checked under the lock); false after 10 s.
  bool Until(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), done);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

// A listener that accepts streams of kind 7, records what arrives on them
// and keeps their links.
struct Server {
  Waiter w;
  std::vector<pb::FrontendUp> received;        // guarded by w
  std::vector<std::shared_ptr<Down>> links;    // guarded by w
  std::vector<uint8_t> kinds;                  // guarded by w
  int ended = 0;                               // guarded by w
  std::unique_ptr<WireListener> listener;

  void Listen(boost::asio::io_context& io, const std::string& address, std::shared_ptr<PeerTls> tls = nullptr) {
    absl::StatusOr<std::unique_ptr<WireListener>> l = WireListener::Start(
        io, address,
        [this](uint8_t kind, std::shared_ptr<WireConnection> c) {
          auto stream = std::make_shared<Down>(std::move(c));
          w.Update([&] {
            kinds.push_back(kind);
            links.push_back(stream);
          });
          stream->Start({[this](pb::FrontendUp& up) { w.Update([&] { received.push_back(up); }); },
                         [this] { w.Update([&] { ++ended; }); },
                         {}});
        },
        std::move(tls));
    ASSERT_TRUE(l.ok()) << l.status();
    listener = *std::move(l);
  }
};

// The dialing side's stream and what arrives on it.
struct Client {
  Waiter w;
  std::vector<pb::FrontendDown> received;
  bool ended = false;
  std::shared_ptr<Up> stream;

  void Dial(boost::asio::io_context& io, const std::string& address, uint8_t kind = 7,
            std::shared_ptr<PeerTls> tls = nullptr) {
    absl::StatusOr<std::shared_ptr<WireConnection>> c = WireConnection::Dial(io, address, kind, std::move(tls));
    ASSERT_TRUE(c.ok()) << c.status();
    stream = std::make_shared<Up>(*c);
    stream->Start({[this](pb::FrontendDown& d) { w.Update([&] { received.push_back(d); }); },
                   [this] { w.Update([&] { ended = true; }); },
                   [](pb::FrontendUp* up) {
                     if (up->has_ping()) up->mutable_ping()->set_sent(42);
                   }});
  }
};

int SubmitCount(const std::vector<pb::FrontendUp>& ups) {
  int n = 0;
  for (const pb::FrontendUp& up : ups) n += up.submit_size();
  return n;
}

TEST(WireTest, MessagesTravelBothWaysOverTcp) {
  EventLoop loop(1, "wire-test");
  Server server;
  server.Listen(loop.context(), "127.0.0.1:0");
  EXPECT_TRUE(absl::StartsWith(server.listener->address(), "127.0.0.1:"));
  Client client;
  client.Dial(loop.context(), server.listener->address());
  ASSERT_TRUE(client.stream->Send([](pb::FrontendUp* up) {
    up->set_name("frontend-a");
    up->mutable_ping();
  }));
  ASSERT_TRUE(server.w.Until([&] { return !server.received.empty(); }));
  EXPECT_EQ(server.kinds, std::vector<uint8_t>{7});
  EXPECT_EQ(server.received[0].name(), "frontend-a");
  EXPECT_EQ(server.received[0].ping().sent(), 42) << "the stamp runs before the message leaves";

  server.links[0]->Send([](pb::FrontendDown* d) { d->add_dropped(5); });
  ASSERT_TRUE(client.w.Until([&] { return !client.received.empty(); }));
  EXPECT_EQ(client.received[0].dropped(0), 5u);
  client.stream->Close();
  ASSERT_TRUE(client.w.Until([&] { return client.ended; }));
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
  EXPECT_FALSE(client.stream->Send([](pb::FrontendUp*) {})) << "a closed stream refuses sends";
  server.listener->Stop();
}

TEST(WireTest, MutualTlsCarriesStreamsAndRefusesPeersWithoutTheClustersCertificate) {
  testing::TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki(dir.path());
  absl::StatusOr<std::shared_ptr<PeerTls>> member = PeerTls::Create({pki.client_cert, pki.client_key, pki.ca_cert});
  ASSERT_TRUE(member.ok()) << member.status();
  // Trusts the cluster's CA, but its own certificate is from another.
  absl::StatusOr<std::shared_ptr<PeerTls>> stranger =
      PeerTls::Create({pki.stranger_cert, pki.stranger_key, pki.ca_cert});
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_FALSE(PeerTls::Create({pki.client_cert, pki.client_key, ""}).ok()) << "peers need the cluster's CA";

  EventLoop loop(1, "wire-test");
  Server server;
  server.Listen(loop.context(), "127.0.0.1:0", *member);
  Client ok;
  ok.Dial(loop.context(), server.listener->address(), 7, *member);
  ASSERT_TRUE(ok.stream->Send([](pb::FrontendUp* up) { up->set_name("member"); }));
  ASSERT_TRUE(server.w.Until([&] { return server.received.size() == 1; }));
  EXPECT_EQ(server.received[0].name(), "member");
  server.links[0]->Send([](pb::FrontendDown* d) { d->add_dropped(9); });
  ASSERT_TRUE(ok.w.Until([&] { return !ok.received.empty(); }));

  for (std::shared_ptr<PeerTls> tls : {*stranger, std::shared_ptr<PeerTls>()}) {  // a stranger, then plaintext
    Client refused;
    refused.Dial(loop.context(), server.listener->address(), 7, tls);
    refused.stream->Send([](pb::FrontendUp* up) { up->set_name("intruder"); });
    ASSERT_TRUE(refused.w.Until([&] { return refused.ended; }));
    EXPECT_TRUE(refused.received.empty());
  }
  // A member does not talk to a listener without the cluster's certificate either.
  Server impostor;
  impostor.Listen(loop.context(), "127.0.0.1:0", *stranger);
  Client careful;
  careful.Dial(loop.context(), impostor.listener->address(), 7, *member);
  careful.stream->Send([](pb::FrontendUp* up) { up->set_name("secret"); });
  ASSERT_TRUE(careful.w.Until([&] { return careful.ended; }));

  // Each refused client ended because the listener dropped it in the handshake.
  EXPECT_EQ(server.kinds.size(), 1u) << "only the member's stream was handed over";
  EXPECT_EQ(server.received.size(), 1u);
  EXPECT_TRUE(impostor.kinds.empty());
  ok.stream->Close();
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
  server.listener->Stop();
  impostor.listener->Stop();
}

TEST(WireTest, SendsFromOneHandlerLeaveAsOneMessage) {
  EventLoop loop(1, "wire-test");
  Server server;
  server.Listen(loop.context(), "127.0.0.1:0");
  Client client;
  client.Dial(loop.context(), server.listener->address());
  // All on the loop thread, before the flush the first Send posts can run.
  boost::asio::post(loop.context(), [&] {
    for (int i = 0; i < 100; ++i) client.stream->Send([i](pb::FrontendUp* up) { up->add_submit()->set_id(i); });
  });
  ASSERT_TRUE(server.w.Until([&] { return SubmitCount(server.received) == 100; }));
  EXPECT_EQ(server.received.size(), 1u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(server.received[0].submit(i).id(), static_cast<uint64_t>(i));
  client.stream->Close();
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
}

TEST(WireTest, WhatWasSentBeforeCloseArrivesAndLargeMessagesToo) {
  EventLoop loop(2, "wire-test");
  Server server;
  server.Listen(loop.context(), "127.0.0.1:0");
  Client client;
  client.Dial(loop.context(1), server.listener->address());  // another thread than the listener's
  const std::string big(3 << 20, 'x');                        // larger than any read buffer
  int sent = 0;
  for (int i = 0; i < 50; ++i) {
    client.stream->Send([&](pb::FrontendUp* up) {
      pb::RequestMeta* m = up->add_submit();
      m->set_id(i);
      if (i % 10 == 0) up->set_name(big);
    });
    ++sent;
  }
  client.stream->Close();
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
  EXPECT_EQ(SubmitCount(server.received), sent);
  bool saw_big = false;
  for (const pb::FrontendUp& up : server.received) saw_big |= up.name() == big;
  EXPECT_TRUE(saw_big);
}

TEST(WireTest, UnixSockets) {
  EventLoop loop(1, "wire-test");
  const std::string path = absl::StrCat("/tmp/tutti-wire-test-", getpid(), ".sock");
  Server server;
  server.Listen(loop.context(), "unix:" + path);
  EXPECT_EQ(server.listener->address(), "unix:" + path);
  Client client;
  client.Dial(loop.context(), server.listener->address(), 'F');
  client.stream->Send([](pb::FrontendUp* up) { up->set_name("over a unix socket"); });
  ASSERT_TRUE(server.w.Until([&] { return !server.received.empty(); }));
  EXPECT_EQ(server.received[0].name(), "over a unix socket");
  EXPECT_EQ(server.kinds, std::vector<uint8_t>{'F'});
  client.stream->Close();
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
  server.listener->Stop();
}

TEST(WireTest, AFrameThatDoesNotParseEndsTheStream) {
  EventLoop loop(1, "wire-test");
  Server server;
  server.Listen(loop.context(), "127.0.0.1:0");
  absl::StatusOr<std::shared_ptr<WireConnection>> raw = WireConnection::Dial(loop.context(), server.listener->address(), 7);
  ASSERT_TRUE(raw.ok());
  Waiter w;
  bool closed = false;
  (*raw)->Start([](const char*, size_t) { return true; }, [&] { w.Update([&] { closed = true; }); });
  (*raw)->Write(std::string(4, '\0') + "\xff\xff\xff\xff not a protobuf");
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
  ASSERT_TRUE(w.Until([&] { return closed; })) << "the server closed its side";
  EXPECT_TRUE(server.received.empty());
}

TEST(WireTest, AnOversizedFrameLengthEndsTheConnection) {
  EventLoop loop(1, "wire-test");
  Server server;
  server.Listen(loop.context(), "127.0.0.1:0");
  absl::StatusOr<std::shared_ptr<WireConnection>> raw = WireConnection::Dial(loop.context(), server.listener->address(), 7);
  ASSERT_TRUE(raw.ok());
  (*raw)->Start([](const char*, size_t) { return true; }, [] {});
  // A header claiming 4 GiB: the payload of Write() is what follows the 4
  // bytes it fills in, so send the header as payload of an empty frame.
  (*raw)->Write(std::string(4, '\0') + std::string("\xff\xff\xff\xff", 4));
  ASSERT_TRUE(server.w.Until([&] { return server.ended == 1; }));
  EXPECT_TRUE(server.received.size() <= 1u);  // the empty frame parses as an empty message
}

TEST(WireTest, AConnectionThatCannotBeMadeEnds) {
  EventLoop loop(1, "wire-test");
  Client client;
  client.Dial(loop.context(), "unix:/nonexistent/tutti.sock");
  ASSERT_TRUE(client.w.Until([&] { return client.ended; }));
  EXPECT_FALSE(client.stream->open());
}

TEST(WireTest, BadAddressesAreNamed) {
  boost::asio::io_context io;
  for (const char* bad : {"nowhere", "example.com:80", "127.0.0.1:99999", "unix:", "127.0.0.1:x"}) {
    absl::StatusOr<std::shared_ptr<WireConnection>> c = WireConnection::Dial(io, bad, 1);
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_TRUE(absl::StrContains(c.status().message(), bad) || std::string(bad) == "unix:") << c.status();
    }
  }
}

}  // namespace
}  // namespace tutti
