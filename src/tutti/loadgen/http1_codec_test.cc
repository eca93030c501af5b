#include "tutti/loadgen/http1_codec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::HasSubstr;

TEST(Http1CodecTest, RequestsCarryHostTypeHeadersAndLength) {
  std::string out = "left ";
  AppendHttpRequest("POST", "/v2/models/m/infer", "127.0.0.1:8000", {{"Authorization", "Bearer t"}}, "{}", &out);
  EXPECT_EQ(out,
            "left POST /v2/models/m/infer HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
            "Authorization: Bearer t\r\nContent-Length: 2\r\n\r\n{}");
  out.clear();
  AppendHttpRequest("POST", "/x", "h", {{"content-type", "application/octet-stream"}}, "", &out);
  EXPECT_EQ(out, "POST /x HTTP/1.1\r\nHost: h\r\ncontent-type: application/octet-stream\r\nContent-Length: 0\r\n\r\n")
      << "a caller's Content-Type replaces the default";
}

TEST(Http1CodecTest, HeadsAreParsedOnceComplete) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nServer: tutti\r\ncontent-length: 5\r\nInference-Header-Content-Length: 3\r\n\r\n";
  for (size_t cut : {size_t{0}, size_t{9}, head.size() - 1}) {
    absl::StatusOr<std::optional<ResponseHead>> partial = ParseResponseHead(head.substr(0, cut));
    ASSERT_TRUE(partial.ok());
    EXPECT_FALSE(partial->has_value()) << cut;
  }
  absl::StatusOr<std::optional<ResponseHead>> h = ParseResponseHead(head + "abcde");
  ASSERT_TRUE(h.ok() && h->has_value());
  EXPECT_EQ((*h)->status, 200);
  EXPECT_EQ((*h)->head_length, head.size());
  EXPECT_EQ((*h)->body_length, 5u);
  EXPECT_EQ((*h)->json_length, "3");
  EXPECT_TRUE((*h)->keep_alive);
}

TEST(Http1CodecTest, KeepAliveFollowsVersionAndConnection) {
  auto keep = [](const std::string& head) { return (*ParseResponseHead(head))->keep_alive; };
  EXPECT_FALSE(keep("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_FALSE(keep("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_TRUE(keep("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"));
}

TEST(Http1CodecTest, WhatTheClientCannotReadIsAnError) {
  EXPECT_THAT(ParseResponseHead("HTTP/1.1 200 OK\r\n\r\n").status().message(), HasSubstr("without Content-Length"));
  EXPECT_THAT(ParseResponseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").status().message(),
              HasSubstr("chunked"));
  EXPECT_THAT(ParseResponseHead("SPDY/3 200 OK\r\nContent-Length: 0\r\n\r\n").status().message(),
              HasSubstr("bad HTTP status line"));
  EXPECT_THAT(ParseResponseHead("HTTP/1.1 abc\r\nContent-Length: 0\r\n\r\n").status().message(),
              HasSubstr("bad HTTP status line"));
  EXPECT_THAT(ParseResponseHead("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a')).status().message(),
              HasSubstr("over 64 KiB"));
}

}  // namespace
}  // namespace tutti
