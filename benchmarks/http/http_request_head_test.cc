#include "gyre/benchmarks/http/http_request_head.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace gyre::bench {
namespace {

constexpr size_t kNpos = absl::string_view::npos;

HeadParse Parse(absl::string_view head, HttpRequestHead* out) {
  return ParseRequestHead(head, out);
}

TEST(FindHeadEndTest, FindsTheBlankLine) {
  const std::string data = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET";
  EXPECT_EQ(FindHeadEnd(data, 0), data.size() - 3);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nHost: x\r\n", 0), kNpos);
  EXPECT_EQ(FindHeadEnd("", 0), kNpos);
}

TEST(FindHeadEndTest, TerminatorStraddlingTheScannedPartIsFound) {
  const std::string data = "GET / HTTP/1.1\r\n\r\n";
  // Feed it byte by byte, as the server does, carrying `scanned` along.
  size_t scanned = 0;
  for (size_t n = 1; n <= data.size(); ++n) {
    const size_t end = FindHeadEnd(absl::string_view(data).substr(0, n), scanned);
    if (n < data.size()) {
      ASSERT_EQ(end, kNpos) << n;
      scanned = n;
    } else {
      EXPECT_EQ(end, data.size());
    }
  }
}

TEST(ParseRequestHeadTest, WrkRequest) {
  HttpRequestHead h;
  ASSERT_EQ(Parse("GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", &h), HeadParse::kOk);
  EXPECT_EQ(h.method, HttpMethod::kGet);
  EXPECT_EQ(h.method_name, "GET");
  EXPECT_EQ(h.path, "/plaintext");
  EXPECT_TRUE(h.keep_alive);
  EXPECT_FALSE(h.http10);
  EXPECT_EQ(h.content_length, 0u);
}

TEST(ParseRequestHeadTest, QueryIsStrippedFromPath) {
  HttpRequestHead h;
  ASSERT_EQ(Parse("HEAD /plaintext?a=1&b HTTP/1.1\r\n\r\n", &h), HeadParse::kOk);
  EXPECT_EQ(h.method, HttpMethod::kHead);
  EXPECT_EQ(h.path, "/plaintext");
}

TEST(ParseRequestHeadTest, ConnectionOptions) {
  HttpRequestHead h;
  ASSERT_EQ(Parse("GET / HTTP/1.1\r\nconnection:  Upgrade, CLOSE \r\n\r\n", &h), HeadParse::kOk);
  EXPECT_FALSE(h.keep_alive);
  ASSERT_EQ(Parse("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", &h), HeadParse::kOk);
  EXPECT_TRUE(h.keep_alive);
  ASSERT_EQ(Parse("GET / HTTP/1.0\r\n\r\n", &h), HeadParse::kOk);
  EXPECT_TRUE(h.http10);
  EXPECT_FALSE(h.keep_alive);
  ASSERT_EQ(Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &h), HeadParse::kOk);
  EXPECT_TRUE(h.keep_alive);
}

TEST(ParseRequestHeadTest, ContentLength) {
  HttpRequestHead h;
  ASSERT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 42\r\n\r\n", &h), HeadParse::kOk);
  EXPECT_EQ(h.method, HttpMethod::kOther);
  EXPECT_EQ(h.method_name, "POST");
  EXPECT_EQ(h.content_length, 42u);
  // The same value twice is allowed (RFC 9112 6.3), different values are not.
  ASSERT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n", &h),
            HeadParse::kOk);
  EXPECT_EQ(h.content_length, 7u);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n", &h),
            HeadParse::kBadRequest);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", &h), HeadParse::kBadRequest);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", &h), HeadParse::kBadRequest);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length:\r\n\r\n", &h), HeadParse::kBadRequest);
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", &h),
            HeadParse::kBadRequest);
}

TEST(ParseRequestHeadTest, TransferEncodingIsNotImplemented) {
  HttpRequestHead h;
  EXPECT_EQ(Parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &h),
            HeadParse::kNotImplemented);
}

TEST(ParseRequestHeadTest, MalformedHeadsAreBadRequests) {
  const char* const kBad[] = {
      "\r\n\r\n",                                       // no request line
      "GET\r\n\r\n",                                    // no target, no version
      "GET /\r\n\r\n",                                  // no version
      "GET / HTTP/2.0\r\n\r\n",                         // unsupported version
      "GET / http/1.1\r\n\r\n",                         // version is case-sensitive
      "GET /a b HTTP/1.1\r\n\r\n",                      // space in the target
      "GET  / HTTP/1.1\r\n\r\n",                        // empty target
      "G(T / HTTP/1.1\r\n\r\n",                         // not a token
      "GET / HTTP/1.1\r\nHost x\r\n\r\n",               // header without colon
      "GET / HTTP/1.1\r\n: x\r\n\r\n",                  // empty header name
      "GET / HTTP/1.1\r\nHost : x\r\n\r\n",             // space before the colon
      "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",      // obsolete line folding
      "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n",             // control character in a value
      "GET / HTTP/1.1\r\nA: b\nB: c\r\n\r\n",           // bare LF inside a value
      "GET / HTTP/1.1\r\n",                             // not a complete head
  };
  for (const char* head : kBad) {
    HttpRequestHead h;
    EXPECT_EQ(Parse(head, &h), HeadParse::kBadRequest) << absl::CEscape(head);
  }
}

}  // namespace
}  // namespace gyre::bench
