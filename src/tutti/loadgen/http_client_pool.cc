#include "tutti/loadgen/http_client_pool.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

}  // namespace

// All state below is touched only on the I/O thread.
class HttpClientPool::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(std::string host, int port, int max_connections)
      : host_(std::move(host)),
        port_(port),
        max_connections_(std::max(1, max_connections)),
        work_(net::make_work_guard(ioc_)) {}

  void Start() {
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(host_, std::to_string(port_), ec);
    if (!ec && !results.empty()) endpoint_ = *results.begin();
    thread_ = std::thread([self = shared_from_this()] { self->ioc_.run(); });
  }

  void Stop() {
    net::post(ioc_, [this] {
      queue_.clear();
      for (auto& c : idle_) {
        beast::error_code ec;
        c->stream.socket().close(ec);
      }
      idle_.clear();
      work_.reset();
      ioc_.stop();
    });
    thread_.join();
  }

  void Send(ClientRequest request, Callback done) {
    Job job{std::move(request), std::move(done), false};
    if (ioc_.get_executor().running_in_this_thread()) {
      queue_.push_back(std::move(job));
      return Pump();
    }
    net::post(ioc_, [this, job = std::move(job)]() mutable {
      queue_.push_back(std::move(job));
      Pump();
    });
  }

  void RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
    net::post(ioc_, [this, when, fn = std::move(fn)]() mutable {
      auto timer = std::make_shared<net::steady_timer>(ioc_, when);
      timer->async_wait([timer, fn = std::move(fn)](beast::error_code ec) {
        if (!ec) fn();
      });
    });
  }


 private:
  struct Job {
    ClientRequest request;
    Callback done;
    bool retried;
  };
  struct Conn {
    explicit Conn(net::io_context& ioc) : stream(ioc) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    std::optional<http::response_parser<http::string_body>> parser;
    std::optional<Job> job;
    bool used = false;  // has carried a request before (may be stale)
  };
  using ConnPtr = std::shared_ptr<Conn>;

  // Starts queued jobs on idle connections, opening new ones under the cap.
  void Pump() {
    while (!queue_.empty()) {
      if (!idle_.empty()) {
        ConnPtr c = idle_.back();
        idle_.pop_back();
        Begin(c);
      } else if (open_ < max_connections_) {
        Connect();
        return;  // the new connection pumps when it is up
      } else {
        return;
      }
    }
  }

  void Connect() {
    ++open_;
    auto c = std::make_shared<Conn>(ioc_);
    if (!endpoint_) {
      --open_;
      return FailQueue(absl::StrCat("cannot resolve ", host_));
    }
    c->stream.async_connect(*endpoint_, [this, c](beast::error_code ec) {
      if (ec) {
        --open_;
        return FailQueue(absl::StrCat("cannot connect to ", host_, ":", port_, ": ", ec.message()));
      }
      beast::error_code ignored;
      c->stream.socket().set_option(tcp::no_delay(true), ignored);
      idle_.push_back(c);
      Pump();
    });
  }

  // Nothing will connect now: fail the waiting jobs instead of hanging.
  void FailQueue(const std::string& why) {
    std::deque<Job> failed;
    failed.swap(queue_);
    for (Job& j : failed) j.done(ClientResponse{absl::UnavailableError(why)});
  }

  void Begin(const ConnPtr& c) {
    c->job = std::move(queue_.front());
    queue_.pop_front();
    ClientRequest& r = c->job->request;
    c->req = http::request<http::string_body>(http::string_to_verb(r.method), r.target, 11);
    c->req.set(http::field::host, host_);
    c->req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : r.headers) c->req.set(k, v);
    c->req.keep_alive(true);
    c->req.body() = r.body;
    c->req.prepare_payload();
    http::async_write(c->stream, c->req, [this, c](beast::error_code ec, size_t) {
      if (ec) return Failed(c, ec);
      c->parser.emplace();
      c->parser->body_limit(256 << 20);
      http::async_read(c->stream, c->buffer, *c->parser, [this, c](beast::error_code ec, size_t) {
        if (ec) return Failed(c, ec);
        auto res = c->parser->release();
        ClientResponse out{absl::OkStatus(), static_cast<int>(res.result_int()), std::move(res.body()),
                           std::string(res["Inference-Header-Content-Length"])};
        Job job = std::move(*c->job);
        c->job.reset();
        c->used = true;
        if (res.keep_alive()) {
          idle_.push_back(c);
        } else {
          Close(c);
        }
        job.done(std::move(out));
        Pump();
      });
    });
  }

  void Failed(const ConnPtr& c, beast::error_code ec) {
    Job job = std::move(*c->job);
    c->job.reset();
    const bool stale = c->used;
    Close(c);
    if (stale && !job.retried) {  // the server closed an idle kept-alive connection
      job.retried = true;
      queue_.push_front(std::move(job));
    } else {
      job.done(ClientResponse{absl::UnavailableError(absl::StrCat("HTTP exchange failed: ", ec.message()))});
    }
    Pump();
  }

  void Close(const ConnPtr& c) {
    beast::error_code ec;
    c->stream.socket().close(ec);
    --open_;
  }

  const std::string host_;
  const int port_;
  const int max_connections_;
  int open_ = 0;  // connections open or opening
  net::io_context ioc_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::optional<tcp::endpoint> endpoint_;
  std::thread thread_;
  std::deque<Job> queue_;
  std::vector<ConnPtr> idle_;
};

HttpClientPool::HttpClientPool(std::string host, int port, int max_connections)
    : impl_(std::make_shared<Impl>(std::move(host), port, max_connections)) {
  impl_->Start();
}

HttpClientPool::~HttpClientPool() { impl_->Stop(); }

void HttpClientPool::Send(ClientRequest request, Callback done) { impl_->Send(std::move(request), std::move(done)); }

void HttpClientPool::RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
  impl_->RunAt(when, std::move(fn));
}

}  // namespace tutti
