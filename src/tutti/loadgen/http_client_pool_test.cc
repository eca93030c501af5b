#include "tutti/loadgen/http_client_pool.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace tutti {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A one-connection HTTP server on loopback: says when a request came in,
// answers it once told to, and says when its answer was written.
class OneShotServer {
  // Before the futures made from them.
  std::promise<void> received_;
  std::promise<SteadyClock::time_point> written_;

 public:
  OneShotServer() : received(received_.get_future().share()), written(written_.get_future().share()) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    socklen_t n = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OneShotServer() {
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::promise<void> answer;  // set: write the answer
  const std::shared_future<void> received;
  const std::shared_future<SteadyClock::time_point> written;

 private:
  void Serve() {
    const int c = accept(fd_, nullptr, nullptr);
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = read(c, buf, sizeof(buf));
      if (n <= 0) break;
      in.append(buf, n);
    }
    received_.set_value();
    answer.get_future().wait();
    const std::string out = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
    EXPECT_EQ(write(c, out.data(), out.size()), static_cast<ssize_t>(out.size()));
    written_.set_value(SteadyClock::now());  // loopback: the bytes are in the client's socket now
    char rest;
    (void)read(c, &rest, 1);  // until the client closes
    close(c);
  }

  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// The answer's arrival is the kernel's timestamp: it stays at the moment the
// server wrote it even when the client's only thread is busy until later.
TEST(HttpClientPoolTest, AnAnswersArrivalLeavesOutTheClientsOwnDelay) {
  OneShotServer server;
  std::promise<ClientResponse> got;
  std::promise<SteadyClock::time_point> called;
  SteadyClock::time_point sent;
  {
    HttpClientPool pool("127.0.0.1", server.port(), 1);
    ASSERT_TRUE(pool.Preconnect(1).ok());
    sent = SteadyClock::now();
    pool.Send({"POST", "/v2/models/m/infer", "{}", {}}, [&](ClientResponse r) {
      called.set_value(SteadyClock::now());
      got.set_value(std::move(r));
    });
    // Once the request is out, hold the pool's I/O thread until the answer
    // has been written and a moment has passed: the thread reads it later.
    server.received.wait();
    std::promise<void> held;
    pool.RunAt(SteadyClock::now(), [&] {
      held.set_value();
      const SteadyClock::time_point w = server.written.get();
      while (SteadyClock::now() < w + std::chrono::milliseconds(20)) {
      }
    });
    held.get_future().wait();
    server.answer.set_value();
    ClientResponse r = got.get_future().get();
    const SteadyClock::time_point at = called.get_future().get();
    const SteadyClock::time_point w = server.written.get();
    ASSERT_TRUE(r.transport.ok());
    EXPECT_EQ(r.status, 200);
    ASSERT_TRUE(r.arrived.has_value()) << "no kernel receive timestamp";
    EXPECT_GE(*r.arrived, sent);
    EXPECT_LE(*r.arrived, w);  // not when the busy thread got to it
    EXPECT_GE(at, w + std::chrono::milliseconds(20));
  }
}

}  // namespace
}  // namespace tutti
