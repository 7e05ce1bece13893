#include "gyre/codec/http/http_request_parser.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/codec/codec_test_util.h"
#include "gyre/codec/http/http_message.h"

namespace gyre {
namespace {

using codec_test::Describe;
using codec_test::Splits;

struct Outcome {
  std::vector<HttpRequest> requests;
  int error = 0;
  int continues = 0;
  std::string detail;
};

// Feeds `pieces` as a cumulation would: unconsumed bytes are presented again with the
// next piece. Each call sees a heap block of exactly the bytes it may read, so a read
// past them is an ASan report.
Outcome ParsePieces(const std::vector<std::string>& pieces, HttpParserLimits limits = {}) {
  HttpRequestParser parser(limits);
  std::string pending;
  Outcome o;
  for (const std::string& piece : pieces) {
    pending += piece;
    for (;;) {
      std::unique_ptr<char[]> exact(new char[pending.size() + 1]);
      std::memcpy(exact.get(), pending.data(), pending.size());
      size_t used = 0;
      const HttpRequestParser::Result r =
          parser.Parse(absl::string_view(exact.get(), pending.size()), &used);
      EXPECT_LE(used, pending.size());
      pending.erase(0, used);
      if (r == HttpRequestParser::kRequest) {
        o.requests.push_back(parser.TakeRequest());
        continue;
      }
      if (r == HttpRequestParser::kExpectContinue) {
        ++o.continues;
        continue;
      }
      if (r == HttpRequestParser::kError) {
        o.error = parser.error_status();
        o.detail = parser.error_detail();
        return o;
      }
      break;
    }
  }
  return o;
}

Outcome RunWhole(absl::string_view input, HttpParserLimits limits = {}) {
  return ParsePieces({std::string(input)}, limits);
}

// Expects `input`, parsed whole within `limits`, to be exactly one request and no error.
void ExpectOneRequest(absl::string_view input, const HttpParserLimits& limits) {
  Outcome ok = RunWhole(input, limits);
  EXPECT_EQ(ok.error, 0) << ok.detail;
  EXPECT_EQ(ok.requests.size(), 1u);
}

TEST(HttpRequestParserTest, ParsesASimpleGet) {
  Outcome o = RunWhole("GET /plaintext?x=1 HTTP/1.1\r\nHost: a\r\nAccept:  text/plain \r\n\r\n");
  ASSERT_EQ(o.error, 0) << o.detail;
  ASSERT_EQ(o.requests.size(), 1u);
  const HttpRequest& r = o.requests[0];
  EXPECT_EQ(r.method(), "GET");
  EXPECT_EQ(r.target(), "/plaintext?x=1");
  EXPECT_EQ(r.path(), "/plaintext");
  EXPECT_EQ(r.version(), HttpVersion::kHttp11);
  EXPECT_TRUE(r.keep_alive());
  EXPECT_FALSE(r.chunked());
  EXPECT_EQ(r.body(), "");
  ASSERT_EQ(r.header_count(), 2u);
  EXPECT_EQ(r.header_name(1), "Accept");
  EXPECT_EQ(r.header_value(1), "text/plain");  // OWS trimmed both sides
  EXPECT_EQ(r.Header("host"), "a");
  EXPECT_EQ(r.Header("x-missing"), std::nullopt);
}

TEST(HttpRequestParserTest, RequestViewsSurviveAMove) {
  Outcome o = RunWhole("GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  HttpRequest moved = std::move(o.requests[0]);
  std::vector<HttpRequest> v;
  v.push_back(std::move(moved));
  EXPECT_EQ(v[0].target(), "/a");
  EXPECT_EQ(v[0].Header("Host"), "h");
}

// A GET, a POST with Content-Length, a chunked POST with an extension and a trailer,
// pipelined, split at every byte boundary and fed one byte at a time.
TEST(HttpRequestParserTest, PipelinedRequestsAtEverySplit) {
  const std::string input = absl::StrCat(
      "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world",
      "PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
      "5;name=v\r\nabcde\r\n3\r\nfgh\r\n0\r\nX-Sum: 1\r\n\r\n",
      "GET /last HTTP/1.0\r\n\r\n");
  for (const std::vector<std::string>& pieces : Splits(input)) {
    Outcome o = ParsePieces(pieces);
    ASSERT_EQ(o.error, 0) << Describe(pieces) << " " << o.detail;
    ASSERT_EQ(o.requests.size(), 4u) << Describe(pieces);
    EXPECT_EQ(o.requests[0].target(), "/");
    EXPECT_EQ(o.requests[1].method(), "POST");
    EXPECT_EQ(o.requests[1].body(), "hello world");
    EXPECT_EQ(o.requests[2].body(), "abcdefgh");
    EXPECT_TRUE(o.requests[2].chunked());
    EXPECT_EQ(o.requests[3].target(), "/last");
    EXPECT_EQ(o.requests[3].version(), HttpVersion::kHttp10);
    EXPECT_FALSE(o.requests[3].keep_alive());
  }
}

TEST(HttpRequestParserTest, ConnectionSemantics) {
  EXPECT_FALSE(RunWhole("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                   .requests.at(0).keep_alive());
  EXPECT_FALSE(RunWhole("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, Close\r\n\r\n")
                   .requests.at(0).keep_alive());
  EXPECT_TRUE(RunWhole("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                  .requests.at(0).keep_alive());
  EXPECT_FALSE(RunWhole("GET / HTTP/1.0\r\n\r\n").requests.at(0).keep_alive());
  // HTTP/1.x above 1.1 is served as 1.1.
  EXPECT_EQ(RunWhole("GET / HTTP/1.2\r\nHost: a\r\n\r\n").requests.at(0).version(),
            HttpVersion::kHttp11);
}

TEST(HttpRequestParserTest, ExpectContinueComesBeforeTheBody) {
  const std::string input =
      "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc";
  for (const std::vector<std::string>& pieces : Splits(input)) {
    Outcome o = ParsePieces(pieces);
    ASSERT_EQ(o.error, 0) << Describe(pieces);
    EXPECT_EQ(o.continues, 1) << Describe(pieces);
    ASSERT_EQ(o.requests.size(), 1u) << Describe(pieces);
    EXPECT_EQ(o.requests[0].body(), "abc");
  }
  // Without a body there is nothing to continue to.
  Outcome o = RunWhole("GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(o.continues, 0);
  EXPECT_EQ(o.requests.size(), 1u);
}

struct BadInput {
  const char* name;
  std::string input;
  int status;
};

class HttpRequestParserErrorTest : public ::testing::TestWithParam<BadInput> {};

// Every malformed input is answered with its status at every split, and nothing before
// the error is lost or invented.
TEST_P(HttpRequestParserErrorTest, AnsweredWithTheRightStatusAtEverySplit) {
  const BadInput& bad = GetParam();
  for (const std::vector<std::string>& pieces : Splits(bad.input)) {
    Outcome o = ParsePieces(pieces);
    EXPECT_EQ(o.error, bad.status) << Describe(pieces) << " " << o.detail;
    EXPECT_TRUE(o.requests.empty()) << Describe(pieces);
  }
}

const std::string kHost = "Host: a\r\n";

INSTANTIATE_TEST_SUITE_P(
    Malformed, HttpRequestParserErrorTest,
    ::testing::Values(
        BadInput{"BadMethodChar", "G@T / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        BadInput{"LeadingSpace", " GET / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        BadInput{"DoubleSpace", "GET  / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        BadInput{"NoVersion", "GET /\r\n" + kHost + "\r\n", 400},
        BadInput{"LowerCaseVersion", "GET / http/1.1\r\n" + kHost + "\r\n", 400},
        BadInput{"LongVersion", "GET / HTTP/1.10\r\n" + kHost + "\r\n", 400},
        BadInput{"Http2", "GET / HTTP/2.0\r\n" + kHost + "\r\n", 505},
        BadInput{"ControlInTarget", std::string("GET /\x01 HTTP/1.1\r\n") + kHost + "\r\n", 400},
        BadInput{"BareLfRequestLine", "GET / HTTP/1.1\n" + kHost + "\r\n", 400},
        BadInput{"BareLfHeader", "GET / HTTP/1.1\r\nHost: a\n\r\n", 400},
        BadInput{"BareLfEnd", "GET / HTTP/1.1\r\nHost: a\r\n\n", 400},
        BadInput{"BareCrLeading", "\rGET / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        BadInput{"BareLfLeading", "\nGET / HTTP/1.1\r\n" + kHost + "\r\n", 400},
        BadInput{"CrInValue", "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
        BadInput{"NulInValue", std::string("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n", 29), 400},
        BadInput{"HeaderFolding", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", 400},
        BadInput{"SpaceBeforeColon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
        BadInput{"NoColon", "GET / HTTP/1.1\r\nHost a\r\n\r\n", 400},
        BadInput{"EmptyName", "GET / HTTP/1.1\r\n: a\r\n" + kHost + "\r\n", 400},
        BadInput{"NoHost", "GET / HTTP/1.1\r\n\r\n", 400},
        BadInput{"TwoHosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        BadInput{"DuplicateContentLength",
                 "POST / HTTP/1.1\r\n" + kHost + "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                 400},
        BadInput{"ContentLengthList", "POST / HTTP/1.1\r\n" + kHost + "Content-Length: 1, 1\r\n\r\nx",
                 400},
        BadInput{"ContentLengthSign", "POST / HTTP/1.1\r\n" + kHost + "Content-Length: +1\r\n\r\nx",
                 400},
        BadInput{"ContentLengthEmpty", "POST / HTTP/1.1\r\n" + kHost + "Content-Length:\r\n\r\n", 400},
        BadInput{"TransferEncodingAndLength",
                 "POST / HTTP/1.1\r\n" + kHost +
                     "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                 400},
        BadInput{"ChunkedNotLast",
                 "POST / HTTP/1.1\r\n" + kHost + "Transfer-Encoding: chunked, gzip\r\n\r\n", 400},
        BadInput{"ChunkedTwice",
                 "POST / HTTP/1.1\r\n" + kHost +
                     "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                 400},
        BadInput{"UnknownCoding",
                 "POST / HTTP/1.1\r\n" + kHost + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
        BadInput{"TransferEncodingInHttp10",
                 "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        BadInput{"BadChunkSize",
                 "POST / HTTP/1.1\r\n" + kHost + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        BadInput{"ChunkSizeOverflow",
                 "POST / HTTP/1.1\r\n" + kHost +
                     "Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
                 400},
        BadInput{"ChunkSizeTrailingJunk",
                 "POST / HTTP/1.1\r\n" + kHost + "Transfer-Encoding: chunked\r\n\r\n5 x\r\n", 400},
        BadInput{"ChunkWithoutCrlf",
                 "POST / HTTP/1.1\r\n" + kHost +
                     "Transfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
                 400},
        BadInput{"ChunkLineBareLf",
                 "POST / HTTP/1.1\r\n" + kHost + "Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n", 400},
        BadInput{"BadTrailer",
                 "POST / HTTP/1.1\r\n" + kHost +
                     "Transfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer\r\n\r\n",
                 400},
        BadInput{"UnknownExpectation",
                 "POST / HTTP/1.1\r\n" + kHost + "Expect: magic\r\nContent-Length: 1\r\n\r\nx",
                 417}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

TEST(HttpRequestParserTest, RequestLineLimitIs414) {
  HttpParserLimits limits;
  limits.max_request_line = 64;
  const std::string target(64, 'a');
  // Complete but too long, and too long before its CRLF arrives.
  EXPECT_EQ(RunWhole("GET /" + target + " HTTP/1.1\r\nHost: a\r\n\r\n", limits).error, 414);
  EXPECT_EQ(RunWhole("GET /" + target + target, limits).error, 414);
  // Exactly at the limit is fine.
  const std::string line = "GET /" + std::string(64 - 14, 'b') + " HTTP/1.1";
  ASSERT_EQ(line.size(), 64u);
  ExpectOneRequest(line + "\r\nHost: a\r\n\r\n", limits);
}

TEST(HttpRequestParserTest, HeaderLimitsAre431) {
  HttpParserLimits limits;
  limits.max_header_bytes = 100;
  limits.max_headers = 4;
  const std::string big = "X-Big: " + std::string(100, 'v') + "\r\n";
  EXPECT_EQ(RunWhole("GET / HTTP/1.1\r\nHost: a\r\n" + big + "\r\n", limits).error, 431);
  // Still waiting for the end of a header line that is already too long.
  EXPECT_EQ(RunWhole("GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(200, 'v'), limits).error,
            431);
  std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 4; ++i) many += "X" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(RunWhole(many + "\r\n", limits).error, 431);
  // Four fields (Host and three more) are within both limits.
  std::string four = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 3; ++i) four += "X" + std::to_string(i) + ": 1\r\n";
  ExpectOneRequest(four + "\r\n", limits);
}

TEST(HttpRequestParserTest, BodyLimitIs413) {
  HttpParserLimits limits;
  limits.max_body = 10;
  // Content-Length over the limit fails at the head: the body is never read.
  Outcome o = RunWhole("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", limits);
  EXPECT_EQ(o.error, 413);
  EXPECT_EQ(RunWhole("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                     limits)
                .error,
            413);
  // Chunks adding up to more than the limit.
  o = RunWhole("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
               "6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n",
               limits);
  EXPECT_EQ(o.error, 413);
  // Exactly the limit.
  o = RunWhole("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789", limits);
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].body(), "0123456789");
}

TEST(HttpRequestParserTest, TrailerAndChunkLineLimits) {
  HttpParserLimits limits;
  limits.max_header_bytes = 50;
  limits.max_chunk_line = 20;
  const std::string head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(RunWhole(head + "0\r\nX: " + std::string(60, 't') + "\r\n\r\n", limits).error, 431);
  EXPECT_EQ(RunWhole(head + "1;" + std::string(30, 'e') + "\r\nx\r\n0\r\n\r\n", limits).error, 400);
  EXPECT_EQ(RunWhole(head + "1;" + std::string(30, 'e'), limits).error, 400);
}

TEST(HttpRequestParserTest, StaysFailedAndConsumesEverything) {
  HttpRequestParser parser;
  size_t used = 0;
  ASSERT_EQ(parser.Parse("BAD\r\n\r\n", &used), HttpRequestParser::kError);
  EXPECT_EQ(parser.error_status(), 400);
  EXPECT_TRUE(parser.failed());
  const absl::string_view next = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  EXPECT_EQ(parser.Parse(next, &used), HttpRequestParser::kError);
  EXPECT_EQ(used, next.size());
}

TEST(HttpRequestParserTest, PartialHeadConsumesNothingAndScansOnce) {
  HttpRequestParser parser;
  size_t used = 7;
  EXPECT_EQ(parser.Parse("GET / HT", &used), HttpRequestParser::kNeedMore);
  EXPECT_EQ(used, 0u);
  EXPECT_TRUE(parser.in_request());
  EXPECT_EQ(parser.Parse("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET", &used),
            HttpRequestParser::kRequest);
  EXPECT_EQ(used, 27u);  // up to the next request's "GET"
  EXPECT_EQ(parser.TakeRequest().target(), "/");
}

}  // namespace
}  // namespace gyre
