#include "tutti/frontend/http_server.h"

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tutti/testing/http_test_client.h"
#include "tutti/testing/wait.h"

namespace tutti {
namespace {

// Holds every request until the test answers it.
class HoldingHandler final : public HttpHandler {
 public:
  void Handle(HttpRequest request, Respond respond) override {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back({std::move(request), std::move(respond)});
    cv_.notify_all();
  }
  // Waits for the `n`th request (from 1) and returns its cancel flag.
  std::shared_ptr<CancelFlag> AwaitRequest(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    AwaitOrFail(cv_, lock, [&] { return held_.size() >= n; }, "a request to reach the handler");
    return held_[n - 1].first.cancel;
  }
  void Answer(size_t n) {
    Respond respond;
    {
      std::lock_guard<std::mutex> lock(mu_);
      respond = std::move(held_[n - 1].second);
    }
    respond(HttpResponse{200, "{}"});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<HttpRequest, Respond>> held_;
};

// A client that closes its connection while its request is handled
// withdraws it; one that waits is answered, and its connection goes on.
TEST(HttpServerTest, AClientClosingItsConnectionCancelsItsRequest) {
  HoldingHandler handler;
  std::unique_ptr<HttpServer> server = *HttpServer::Start(HttpServerOptions{.port = 0}, &handler);
  const std::string request = "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  {
    testing::HttpTestClient gone(server->port());
    gone.SendRaw(request);
    const std::shared_ptr<CancelFlag> flag = handler.AwaitRequest(1);
    EXPECT_FALSE(flag->Cancelled(0));
    gone.Close();
    PollOrFail([&] { return flag->Cancelled(0); }, "the closed connection to cancel its request");
    handler.Answer(1);  // written to no one
  }
  testing::HttpTestClient waiting(server->port());
  waiting.SendRaw(request);
  const std::shared_ptr<CancelFlag> flag = handler.AwaitRequest(2);
  handler.Answer(2);
  EXPECT_NE(waiting.ReadUntil("{}").find("200 OK"), std::string::npos);
  EXPECT_FALSE(flag->Cancelled(0));
  waiting.SendRaw(request);  // the same connection serves the next request
  EXPECT_FALSE(handler.AwaitRequest(3)->Cancelled(0));
  handler.Answer(3);
  EXPECT_NE(waiting.ReadUntil("{}").find("200 OK"), std::string::npos);
  server->StopAccepting();
  server->Stop();
}

}  // namespace
}  // namespace tutti
