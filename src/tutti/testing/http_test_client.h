// A blocking HTTP/1.1 client for tests, on loopback: keep-alive requests,
// plus raw sockets for sending malformed or half-sent requests.
#ifndef TUTTI_TESTING_HTTP_TEST_CLIENT_H_
#define TUTTI_TESTING_HTTP_TEST_CLIENT_H_

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tutti::testing {

struct ClientResponse {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string json_length;  // Inference-Header-Content-Length, if any
};

class HttpTestClient {
 public:
  explicit HttpTestClient(int port, const std::string& host = "127.0.0.1") : socket_(ioc_) { Connect(host, port); }

  // Sends one request on the kept-alive connection and reads the response.
  ClientResponse Request(const std::string& method, const std::string& target,
                         const std::string& body = "",
                         const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.keep_alive(true);
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(socket_, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 << 20);
    http::read(socket_, buffer_, parser);
    auto res = parser.release();
    return {static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::content_type]),
            std::string(res["Inference-Header-Content-Length"])};
  }

  // Writes raw bytes on the connection.
  void SendRaw(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }

  // Reads until `text` has arrived ("": never) or the server closes the
  // connection; returns what arrived.
  std::string ReadUntil(const std::string& text) {
    std::string out;
    boost::beast::error_code ec;
    char buf[4096];
    while (text.empty() || out.find(text) == std::string::npos) {
      const size_t n = socket_.read_some(boost::asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    return out;
  }

  // Reads until the server closes the connection; returns what arrived.
  std::string ReadUntilClosed() { return ReadUntil(""); }

  void Close() {
    boost::beast::error_code ec;
    socket_.close(ec);
  }

 private:
  void Connect(const std::string& host, int port) {
    boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address(host),
                                      static_cast<unsigned short>(port));
    socket_.connect(ep);
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_HTTP_TEST_CLIENT_H_
