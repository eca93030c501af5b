#include "tutti/loadgen/http_client_pool.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <future>
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tutti/core/thread_name.h"
#include "tutti/loadgen/http1_codec.h"

namespace tutti {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

}  // namespace

// A single-threaded epoll loop (edge-triggered) over non-blocking sockets:
// the load generator's client must cost far less per request than the
// server it measures, since both share the machine. All state below is
// touched only on the I/O thread, except `posted_` (under `mu_`).
class HttpClientPool::Impl {
 public:
  Impl(std::string host, int port, int max_connections)
      : host_(std::move(host)), port_(port), max_connections_(std::max(1, max_connections)) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    for (auto [fd, key] : {std::pair{wake_, kWakeKey}, std::pair{timer_, kTimerKey}}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = key;
      epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found) == 0 && found) {
      std::memcpy(&address_, found->ai_addr, found->ai_addrlen);
      address_length_ = found->ai_addrlen;
      freeaddrinfo(found);
    }
    thread_ = std::thread([this] {
      SetThreadName("load-io");
      Loop();
    });
  }

  ~Impl() {
    Post([this] { stopping_ = true; });
    thread_.join();
    for (auto& [key, c] : conns_) close(c->fd);
    close(timer_);
    close(wake_);
    close(epoll_);
  }

  void Send(ClientRequest request, Callback done) {
    Job job{std::move(request), std::move(done), false};
    if (std::this_thread::get_id() == thread_.get_id()) {
      queue_.push_back(std::move(job));
      return Pump();
    }
    auto shared = std::make_shared<Job>(std::move(job));
    Post([this, shared] {
      queue_.push_back(std::move(*shared));
      Pump();
    });
  }

  absl::Status Preconnect(int n) {
    std::promise<absl::Status> opened;
    Post([this, n, &opened] {
      const int want = std::min(n, max_connections_) - open_;
      if (want <= 0) return opened.set_value(absl::OkStatus());
      auto left = std::make_shared<int>(want);
      auto failure = std::make_shared<absl::Status>();
      for (int i = 0; i < want; ++i) {
        Connect([left, failure, &opened](absl::Status s) {
          if (!s.ok()) *failure = std::move(s);
          if (--*left == 0) opened.set_value(*failure);
        });
      }
    });
    return opened.get_future().get();
  }

  void RunAt(SteadyTime when, std::function<void()> fn) {
    auto shared = std::make_shared<std::function<void()>>(std::move(fn));
    Post([this, when, shared] {
      timers_.emplace(when, std::move(*shared));
      ArmTimer();
    });
  }

 private:
  struct Job {
    ClientRequest request;
    Callback done;
    bool retried;
  };
  enum class State { kConnecting, kIdle, kBusy, kClosed };
  struct Conn {
    uint64_t key = 0;  // epoll's data for it
    int fd = -1;
    State state = State::kConnecting;
    std::function<void(absl::Status)> opened;  // while connecting
    std::string out;                           // the request being written
    size_t written = 0;
    std::string in;                            // bytes read, not yet consumed
    std::optional<timespec> stamp;             // the kernel's, of the last bytes read (CLOCK_REALTIME)
    std::optional<Job> job;
    bool used = false;  // has carried a request before (may be stale)
  };

  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      posted_.push_back(std::move(fn));
    }
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
  }

  void Loop() {
    epoll_event events[256];
    while (!stopping_) {
      const int n = epoll_wait(epoll_, events, 256, -1);
      for (int i = 0; i < n; ++i) {
        const epoll_event& ev = events[i];
        if (ev.data.u64 == kWakeKey) {
          RunPosted();
          continue;
        }
        if (ev.data.u64 == kTimerKey) {
          RunTimers();
          continue;
        }
        auto it = conns_.find(ev.data.u64);
        if (it == conns_.end()) continue;  // closed earlier in this batch
        Conn* c = it->second.get();
        if (c->state == State::kConnecting) {
          if (ev.events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) Connected(c);
          continue;
        }
        if (ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) Readable(c);
        if (c->state == State::kBusy && (ev.events & EPOLLOUT)) Flush(c);
      }
      graveyard_.clear();
    }
  }

  void RunPosted() {
    uint64_t count;
    (void)!read(wake_, &count, sizeof(count));
    std::vector<std::function<void()>> posted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      posted.swap(posted_);
    }
    for (auto& fn : posted) fn();
  }

  void RunTimers() {
    uint64_t count;
    (void)!read(timer_, &count, sizeof(count));
    const SteadyTime now = std::chrono::steady_clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      std::function<void()> fn = std::move(timers_.begin()->second);
      timers_.erase(timers_.begin());
      fn();
    }
    ArmTimer();
  }

  void ArmTimer() {
    itimerspec spec{};  // all zero: disarmed
    if (!timers_.empty()) {
      // steady_clock is CLOCK_MONOTONIC; an expiry of 0 would disarm.
      const int64_t ns = std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::nanoseconds>(timers_.begin()->first.time_since_epoch()).count());
      spec.it_value.tv_sec = ns / 1000000000;
      spec.it_value.tv_nsec = ns % 1000000000;
    }
    timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }

  // Starts queued jobs on idle connections, opening new ones under the cap.
  void Pump() {
    while (!queue_.empty()) {
      if (!idle_.empty()) {
        Conn* c = idle_.back();
        idle_.pop_back();
        Begin(c);
      } else if (open_ < max_connections_) {
        Connect([this](const absl::Status& s) {
          if (!s.ok()) FailQueue(std::string(s.message()));
        });
        return;  // the new connection pumps when it is up
      } else {
        return;
      }
    }
  }

  // Opens one connection; `opened` learns whether it came up (then it is
  // idle and the queue is pumped).
  void Connect(std::function<void(absl::Status)> opened) {
    if (address_length_ == 0) return opened(absl::UnavailableError(absl::StrCat("cannot resolve ", host_)));
    const int fd = socket(address_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return opened(absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno))));
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));  // ClientResponse::arrived
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address_), address_length_) != 0 && errno != EINPROGRESS) {
      const int e = errno;
      close(fd);
      return opened(Unreachable(e));
    }
    auto conn = std::make_unique<Conn>();
    conn->key = next_key_++;
    conn->fd = fd;
    conn->opened = std::move(opened);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = conn->key;
    conns_[conn->key] = std::move(conn);
    ++open_;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  absl::Status Unreachable(int error) const {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host_, ":", port_, ": ", std::strerror(error)));
  }

  void Connected(Conn* c) {
    int error = 0;
    socklen_t len = sizeof(error);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len);
    std::function<void(absl::Status)> opened = std::move(c->opened);
    if (error != 0) {
      Close(c);
      return opened(Unreachable(error));
    }
    c->state = State::kIdle;
    idle_.push_back(c);
    opened(absl::OkStatus());
    Pump();
  }

  void Begin(Conn* c) {
    c->job = std::move(queue_.front());
    queue_.pop_front();
    c->state = State::kBusy;
    const ClientRequest& r = c->job->request;
    c->out.clear();
    AppendHttpRequest(r.method, r.target, host_, r.headers, r.body, &c->out);
    c->written = 0;
    Flush(c);
  }

  // Writes what is left of the request; the rest goes when the socket is
  // writable again.
  void Flush(Conn* c) {
    while (c->written < c->out.size()) {
      const ssize_t n = send(c->fd, c->out.data() + c->written, c->out.size() - c->written, MSG_NOSIGNAL);
      if (n > 0) {
        c->written += n;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else {
        return Failed(c, absl::StrCat("HTTP exchange failed: ", std::strerror(errno)));
      }
    }
  }

  void Readable(Conn* c) {
    bool eof = false;
    char buffer[64 << 10];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    while (true) {
      iovec iov{buffer, sizeof(buffer)};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      const ssize_t n = recvmsg(c->fd, &msg, 0);
      if (n > 0) {
        c->in.append(buffer, n);
        for (cmsghdr* m = CMSG_FIRSTHDR(&msg); m != nullptr; m = CMSG_NXTHDR(&msg, m)) {
          if (m->cmsg_level == SOL_SOCKET && m->cmsg_type == SCM_TIMESTAMPNS) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(m), sizeof(ts));
            c->stamp = ts;
          }
        }
      } else if (n == 0) {
        eof = true;
        break;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        break;
      } else {
        eof = true;
        break;
      }
    }
    if (c->state == State::kIdle) {  // the server closed a kept-alive connection
      if (eof) Close(c);
      return;
    }
    absl::StatusOr<std::optional<ResponseHead>> head = ParseResponseHead(c->in);
    if (!head.ok()) return Failed(c, std::string(head.status().message()));
    if (*head && c->in.size() >= (*head)->head_length + (*head)->body_length) {
      return Answered(c, **head);
    }
    if (eof) Failed(c, "HTTP exchange failed: the server closed the connection");
  }

  void Answered(Conn* c, const ResponseHead& head) {
    ClientResponse out{absl::OkStatus(), head.status, c->in.substr(head.head_length, head.body_length),
                       head.json_length, Arrived(c->stamp)};
    c->stamp.reset();
    c->in.erase(0, head.head_length + head.body_length);
    Job job = std::move(*c->job);
    c->job.reset();
    c->used = true;
    if (head.keep_alive) {
      c->state = State::kIdle;
      idle_.push_back(c);
    } else {
      Close(c);
    }
    job.done(std::move(out));
    Pump();
  }

  // A kernel timestamp (CLOCK_REALTIME) on the steady clock; never later
  // than now.
  static std::optional<std::chrono::steady_clock::time_point> Arrived(const std::optional<timespec>& stamp) {
    if (!stamp) return std::nullopt;
    timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    const auto now = std::chrono::steady_clock::now();
    const int64_t ago_ns = (int64_t{real.tv_sec} - stamp->tv_sec) * 1'000'000'000 + (real.tv_nsec - stamp->tv_nsec);
    return now - std::chrono::nanoseconds(std::max<int64_t>(0, ago_ns));
  }

  void Failed(Conn* c, const std::string& why) {
    Job job = std::move(*c->job);
    c->job.reset();
    const bool stale = c->used;
    Close(c);
    if (stale && !job.retried) {  // the server closed an idle kept-alive connection
      job.retried = true;
      queue_.push_front(std::move(job));
    } else {
      job.done(ClientResponse{absl::UnavailableError(why)});
    }
    Pump();
  }

  // Nothing will connect now: fail the waiting jobs instead of hanging.
  void FailQueue(const std::string& why) {
    std::deque<Job> failed;
    failed.swap(queue_);
    for (Job& j : failed) j.done(ClientResponse{absl::UnavailableError(why)});
  }

  // Closes `c`; its memory lives until the current batch of events is done.
  void Close(Conn* c) {
    if (c->state == State::kIdle) idle_.erase(std::find(idle_.begin(), idle_.end(), c));
    c->state = State::kClosed;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    auto it = conns_.find(c->key);
    graveyard_.push_back(std::move(it->second));
    conns_.erase(it);
    --open_;
  }

  const std::string host_;
  const int port_;
  const int max_connections_;
  sockaddr_storage address_{};
  socklen_t address_length_ = 0;
  static constexpr uint64_t kWakeKey = 1, kTimerKey = 2;  // epoll data of the two
  int epoll_ = -1, wake_ = -1, timer_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);

  bool stopping_ = false;
  int open_ = 0;  // connections open or opening
  uint64_t next_key_ = 3;  // 1, 2: the wake-up and timer descriptors
  absl::flat_hash_map<uint64_t, std::unique_ptr<Conn>> conns_;  // by key
  std::vector<std::unique_ptr<Conn>> graveyard_;  // closed during this batch of events
  std::deque<Job> queue_;
  std::vector<Conn*> idle_;
  std::multimap<SteadyTime, std::function<void()>> timers_;
};

HttpClientPool::HttpClientPool(std::string host, int port, int max_connections)
    : impl_(std::make_unique<Impl>(std::move(host), port, max_connections)) {}

HttpClientPool::~HttpClientPool() = default;

void HttpClientPool::Send(ClientRequest request, Callback done) { impl_->Send(std::move(request), std::move(done)); }

ClientResponse HttpClientPool::Call(ClientRequest request) {
  std::promise<ClientResponse> p;
  Send(std::move(request), [&p](ClientResponse r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

absl::Status HttpClientPool::Preconnect(int n) { return impl_->Preconnect(n); }

void HttpClientPool::RunAt(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
  impl_->RunAt(when, std::move(fn));
}

}  // namespace tutti
