// The OTLP/HTTP exporter: one short-lived HTTP/1.1 POST per export, over a
// blocking socket with send and receive timeouts — exports run on the
// tracer's own thread, a few a second at most.
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "tutti/tracing/tracer.h"

namespace tutti {
namespace {

struct Url {
  std::string host, port, path;
};

absl::StatusOr<Url> ParseUrl(const std::string& url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("the OTLP endpoint '", url, "' must be an http:// URL, e.g. http://localhost:4318/v1/traces"));
  }
  const size_t slash = rest.find('/');
  const absl::string_view authority = rest.substr(0, slash);
  Url u{std::string(authority), "80", slash == absl::string_view::npos ? "/v1/traces" : std::string(rest.substr(slash))};
  if (const size_t colon = authority.rfind(':'); colon != absl::string_view::npos) {
    u.host = std::string(authority.substr(0, colon));
    u.port = std::string(authority.substr(colon + 1));
    int port = 0;
    if (!absl::SimpleAtoi(u.port, &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("the OTLP endpoint '", url, "' has a bad port"));
    }
  }
  if (u.host.empty()) return absl::InvalidArgumentError(absl::StrCat("the OTLP endpoint '", url, "' names no host"));
  return u;
}

class OtlpHttpExporter final : public SpanExporter {
 public:
  OtlpHttpExporter(Url url, Duration timeout) : url_(std::move(url)), timeout_(timeout) {}

  absl::Status Export(const std::string& json) override {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(url_.host.c_str(), url_.port.c_str(), &hints, &found) != 0 || found == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot resolve ", url_.host));
    }
    const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
    timeval tv{static_cast<time_t>(timeout_ / kSecond), static_cast<suseconds_t>(timeout_ % kSecond / 1000)};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    const bool connected = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    freeaddrinfo(found);
    absl::Status status = connected ? Post(fd, json) : absl::UnavailableError("cannot connect to the OTLP endpoint");
    if (fd >= 0) close(fd);
    return status;
  }

 private:
  absl::Status Post(int fd, const std::string& json) {
    const std::string out = absl::StrCat("POST ", url_.path, " HTTP/1.1\r\nHost: ", url_.host, ":", url_.port,
                                         "\r\nContent-Type: application/json\r\nContent-Length: ", json.size(),
                                         "\r\nConnection: close\r\n\r\n", json);
    for (size_t sent = 0; sent < out.size();) {
      const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return absl::UnavailableError("the OTLP endpoint closed the connection");
      sent += static_cast<size_t>(n);
    }
    char head[64];
    size_t got = 0;
    while (got < 12) {  // "HTTP/1.1 200"
      const ssize_t n = recv(fd, head + got, sizeof(head) - got, 0);
      if (n <= 0) return absl::UnavailableError("the OTLP endpoint sent no response");
      got += static_cast<size_t>(n);
    }
    if (!absl::StartsWith(absl::string_view(head, got), "HTTP/1.") || head[9] != '2') {
      return absl::UnavailableError(absl::StrCat("the OTLP endpoint answered ", absl::string_view(head + 9, 3)));
    }
    return absl::OkStatus();
  }

  const Url url_;
  const Duration timeout_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SpanExporter>> NewOtlpHttpExporter(const std::string& url, Duration timeout) {
  absl::StatusOr<Url> u = ParseUrl(url);
  if (!u.ok()) return u.status();
  return std::make_unique<OtlpHttpExporter>(*std::move(u), timeout);
}

}  // namespace tutti
