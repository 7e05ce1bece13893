#include "gyre/codec/http/http_server_codec.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/codec/codec_status.h"
#include "gyre/codec/codec_test_util.h"
#include "gyre/codec/http/http_message.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace codec_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::EmbeddedChannel;

// Answers each request with 200 and the body "<method> <target> [<body>]", or holds
// the requests when `defer` is set (the test answers them later).
class Responder final : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    HttpRequest* req = msg.Get<HttpRequest>();
    if (req == nullptr) {
      ctx.FireChannelRead(std::move(msg));
      return;
    }
    ++requests;
    if (defer) {
      held.push_back(std::move(*req));
      return;
    }
    if (void_every > 0 && requests % void_every == 0) {
      ctx.Write(Answer(*req), ctx.VoidPromise());
      return;
    }
    ChannelFuture written = flush_each ? ctx.WriteAndFlush(Answer(*req)) : ctx.Write(Answer(*req));
    if (keep_futures || keep_nth == requests) futures.push_back(written);
  }
  void ChannelReadComplete(ChannelHandlerContext& ctx) override { ctx.Flush(); }

  static HttpResponse Answer(const HttpRequest& req) {
    HttpResponse resp(200);
    resp.AddHeader("Content-Type", "text/plain");
    resp.set_body(absl::StrCat(req.method(), " ", req.target(),
                               req.body().empty() ? "" : " ", req.body()));
    return resp;
  }

  bool defer = false;
  bool flush_each = false;    // WriteAndFlush each answer (else Write; flushed at ReadComplete)
  bool keep_futures = false;  // keep each write's future in `futures`
  int keep_nth = 0;           // keep only the future of the n-th request (from 1)
  int void_every = 0;         // write every n-th answer with the void promise
  std::vector<ChannelFuture> futures;
  int requests = 0;
  std::vector<HttpRequest> held;
};

std::string Expected200(absl::string_view body, absl::string_view extra_headers = "") {
  return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n", extra_headers,
                      "Content-Length: ", body.size(), "\r\n\r\n", body);
}

// `n` pipelined GET requests (/1 .. /n) and the Responder's answers to them.
struct Pipelined {
  std::string requests;
  std::string answers;
};
Pipelined PipelinedGets(int n) {
  Pipelined p;
  for (int i = 1; i <= n; ++i) {
    absl::StrAppend(&p.requests, "GET /", i, " HTTP/1.1\r\nHost: a\r\n\r\n");
    p.answers += Expected200(absl::StrCat("GET /", i));
  }
  return p;
}

// Where connection persistence is kept: nowhere, in HttpServerKeepAliveHandler, or in
// the codec (HttpServerCodecOptions::keep_alive). The last two must behave the same.
enum class KeepAlive { kNone, kHandler, kCodec };

struct Fixture {
  explicit Fixture(HttpServerCodecOptions options = {}, KeepAlive keep_alive = KeepAlive::kNone) {
    responder = std::make_shared<Responder>();
    options.keep_alive = keep_alive == KeepAlive::kCodec;
    std::vector<std::shared_ptr<ChannelHandler>> handlers = {
        std::make_shared<HttpServerCodec>(options)};
    if (keep_alive == KeepAlive::kHandler) {
      handlers.push_back(std::make_shared<HttpServerKeepAliveHandler>());
    }
    handlers.push_back(responder);
    ch = EmbeddedChannel::Create(handlers);
  }
  std::string Out() { return absl::StrJoin(OutboundStrings(*ch), ""); }
  // Makes the responder hold the requests (the test answers them) and writes `input`.
  void HoldRequests(absl::string_view input) {
    responder->defer = true;
    ch->WriteInbound(Buf(input));
  }

  std::shared_ptr<Responder> responder;
  std::shared_ptr<EmbeddedChannel> ch;
};

TEST(HttpServerCodecTest, AnswersAGetWithContentLength) {
  Fixture f;
  f.ch->WriteInbound(Buf("GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(f.Out(), Expected200("GET /plaintext"));
  EXPECT_TRUE(f.ch->CheckException().ok());
  EXPECT_TRUE(f.ch->IsOpen());
  EXPECT_FALSE(f.ch->Finish());
}

// Pipelined requests (with a Content-Length body and a chunked body), split at every
// byte, are answered in order, each exactly once.
TEST(HttpServerCodecTest, PipelinedRequestsAnsweredInOrderAtEverySplit) {
  const std::string input = absl::StrCat(
      "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n",
      "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody",
      "POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n",
      "GET /4 HTTP/1.1\r\nHost: a\r\n\r\n");
  const std::string expected = Expected200("GET /1") + Expected200("POST /2 body") +
                               Expected200("POST /3 xy") + Expected200("GET /4");
  for (const std::vector<std::string>& pieces : Splits(input)) {
    Fixture f;
    Feed(*f.ch, pieces);
    EXPECT_EQ(f.Out(), expected) << Describe(pieces);
    EXPECT_EQ(f.responder->requests, 4) << Describe(pieces);
    EXPECT_TRUE(f.ch->CheckException().ok()) << Describe(pieces);
    EXPECT_TRUE(f.ch->IsOpen());
  }
}

// Responses written while one read is decoded go down as one buffer, in order; each
// write's future completes when that buffer is written.
TEST(HttpServerCodecTest, ResponsesToOneReadGoDownAsOneWrite) {
  Fixture f;
  f.responder->keep_futures = true;
  f.ch->WriteInbound(Buf("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
                         "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n"));
  std::vector<std::string> out = OutboundStrings(*f.ch);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], Expected200("GET /1") + Expected200("GET /2") + Expected200("GET /3"));
  ASSERT_EQ(f.responder->futures.size(), 3u);
  for (const ChannelFuture& written : f.responder->futures) EXPECT_TRUE(written.IsSuccess());

  // The next read starts a new batch.
  f.ch->WriteInbound(Buf("GET /4 HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(f.Out(), Expected200("GET /4"));
  EXPECT_TRUE(f.responder->futures.back().IsSuccess());
}

// In a batch whose other writers dropped their futures, the one future kept still
// completes when the batch is written.
TEST(HttpServerCodecTest, AKeptFutureInABatchOfDroppedOnesCompletes) {
  Fixture f;
  f.responder->keep_nth = 2;
  const Pipelined gets = PipelinedGets(3);
  f.ch->WriteInbound(Buf(gets.requests));
  EXPECT_THAT(OutboundStrings(*f.ch), ::testing::ElementsAre(gets.answers));  // one write
  ASSERT_EQ(f.responder->futures.size(), 1u);
  EXPECT_TRUE(f.responder->futures[0].IsSuccess());
}

// Answers written with the void promise are batched and written as the others are.
TEST(HttpServerCodecTest, VoidPromiseAnswersGoDownInTheBatch) {
  Fixture f;
  f.responder->void_every = 1;
  const Pipelined gets = PipelinedGets(3);
  f.ch->WriteInbound(Buf(gets.requests));
  EXPECT_THAT(OutboundStrings(*f.ch), ::testing::ElementsAre(gets.answers));  // one write
  EXPECT_TRUE(f.ch->CheckException().ok());
  EXPECT_TRUE(f.ch->IsOpen());
}

// Fails every write (after the codec) with Unavailable.
class FailsWrites final : public ChannelOutboundHandler {
 public:
  void Write(ChannelHandlerContext&, Message, ChannelPromise p) override {
    p.TryFailure(absl::UnavailableError("write failed"));
  }
};

// A batch's failed write reaches its void writers through ExceptionCaught and its
// other writers through their futures: with void writes only (the batch goes down with
// the void promise), and mixed with a kept future (the batch's own promise reports).
TEST(HttpServerCodecTest, AFailedBatchReachesVoidAndObservedWriters) {
  for (bool mixed : {false, true}) {
    auto responder = std::make_shared<Responder>();
    responder->void_every = mixed ? 2 : 1;
    responder->keep_futures = true;
    auto ch = EmbeddedChannel::Create(
        {std::make_shared<FailsWrites>(), std::make_shared<HttpServerCodec>(), responder});
    ch->WriteInbound(Buf("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"));
    ch->RunPendingTasks();
    EXPECT_EQ(ch->CheckException().code(), absl::StatusCode::kUnavailable) << mixed;
    ASSERT_EQ(responder->futures.size(), mixed ? 1u : 0u);
    for (const ChannelFuture& w : responder->futures) {
      ASSERT_TRUE(w.IsDone());
      EXPECT_EQ(w.Cause().code(), absl::StatusCode::kUnavailable);
    }
    EXPECT_EQ(ch->OutboundCount(), 0u);
    ch->Finish();
  }
}

// A response the codec cannot encode, written with the void promise, is reported to
// ExceptionCaught.
TEST(HttpServerCodecTest, AnInvalidResponseWithTheVoidPromiseReachesExceptionCaught) {
  Fixture f;
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  f.ch->pipeline().WriteAndFlush(HttpResponse(42), VoidPromise());
  f.ch->RunPendingTasks();
  EXPECT_EQ(f.ch->CheckException().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.Out(), "");
}

// A flush inside the read sends what was batched before it, in order.
TEST(HttpServerCodecTest, AFlushInsideTheReadSendsTheBatchFirst) {
  Fixture f;
  f.responder->flush_each = true;
  f.responder->keep_futures = true;
  f.ch->WriteInbound(Buf("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"));
  std::vector<std::string> out = OutboundStrings(*f.ch);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Expected200("GET /1"));
  EXPECT_EQ(out[1], Expected200("GET /2"));
  for (const ChannelFuture& written : f.responder->futures) EXPECT_TRUE(written.IsSuccess());
}

// An error response after answered requests in the same read follows their answers.
TEST(HttpServerCodecTest, AnErrorAfterBatchedAnswersFollowsThem) {
  Fixture f;
  f.ch->WriteInbound(Buf("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nBAD\r\n\r\n"));
  const std::string out = f.Out();
  EXPECT_THAT(out, StartsWith(Expected200("GET /1") + "HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_FALSE(f.ch->IsOpen());
}

struct ErrorCase {
  const char* name;
  std::string input;
  int status;
  bool too_long;  // TooLongFrame rather than CorruptedFrame
};

class HttpServerCodecErrorTest : public ::testing::TestWithParam<ErrorCase> {};

// Each malformed or over-limit request is answered with its status and
// "Connection: close", the channel is closed, the error reaches ExceptionCaught, and a
// request that follows the bad one is not answered.
TEST_P(HttpServerCodecErrorTest, AnsweredWithStatusAndClose) {
  const ErrorCase& c = GetParam();
  HttpServerCodecOptions options;
  options.limits.max_request_line = 64;
  options.limits.max_header_bytes = 128;
  options.limits.max_body = 16;
  Fixture f(options);
  f.ch->WriteInbound(Buf(c.input + "GET /after HTTP/1.1\r\nHost: a\r\n\r\n"));
  const std::string out = f.Out();
  EXPECT_THAT(out, StartsWith(absl::StrCat("HTTP/1.1 ", c.status, " ", HttpReasonPhrase(c.status),
                                           "\r\n")));
  EXPECT_THAT(out, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("/after")));
  EXPECT_EQ(f.responder->requests, 0);
  EXPECT_FALSE(f.ch->IsOpen());
  std::vector<absl::Status> errors = Exceptions(*f.ch);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(IsTooLongFrame(errors[0]), c.too_long) << errors[0];
  EXPECT_EQ(IsCorruptedFrame(errors[0]), !c.too_long) << errors[0];
  EXPECT_THAT(std::string(errors[0].message()), HasSubstr(absl::StrCat("HTTP ", c.status)));
}

INSTANTIATE_TEST_SUITE_P(
    BadRequests, HttpServerCodecErrorTest,
    ::testing::Values(
        ErrorCase{"BadMethod", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, false},
        ErrorCase{"MissingCrlf", "GET / HTTP/1.1\nHost: a\n\n", 400, false},
        ErrorCase{"BadChunkSize",
                  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400,
                  false},
        ErrorCase{"HeaderFolding", "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n", 400, false},
        ErrorCase{"DuplicateContentLength",
                  "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
                  400, false},
        ErrorCase{"NoHost", "GET / HTTP/1.1\r\n\r\n", 400, false},
        ErrorCase{"UnsupportedVersion", "GET / HTTP/3.0\r\nHost: a\r\n\r\n", 505, false},
        ErrorCase{"UnknownCoding",
                  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: br, chunked\r\n\r\n", 501,
                  false},
        ErrorCase{"RequestLineTooLong", "GET /" + std::string(100, 'a') + " HTTP/1.1\r\n", 414,
                  true},
        ErrorCase{"HeadersTooLarge",
                  "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(200, 'h') + "\r\n\r\n", 431,
                  true},
        ErrorCase{"BodyTooLarge", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 17\r\n\r\n", 413,
                  true},
        ErrorCase{"ChunkedBodyTooLarge",
                  "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "10\r\n0123456789abcdef\r\n1\r\n",
                  413, true}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return std::string(info.param.name); });

// A bad request after requests not yet answered waits for their responses: the error
// response is the last thing written, then the channel closes.
TEST(HttpServerCodecTest, ErrorResponseFollowsOutstandingResponses) {
  Fixture f;
  f.HoldRequests("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
                 "BROKEN\r\n\r\n");
  EXPECT_EQ(f.Out(), "");
  EXPECT_TRUE(f.ch->IsOpen());
  ASSERT_EQ(f.responder->held.size(), 2u);
  EXPECT_FALSE(IsCorruptedFrame(absl::OkStatus()));
  EXPECT_TRUE(IsCorruptedFrame(f.ch->CheckException()));
  f.ch->WriteOutbound(Responder::Answer(f.responder->held[0]));
  EXPECT_EQ(f.Out(), Expected200("GET /1"));
  EXPECT_TRUE(f.ch->IsOpen());
  f.ch->WriteOutbound(Responder::Answer(f.responder->held[1]));
  const std::string out = f.Out();
  EXPECT_THAT(out, StartsWith(Expected200("GET /2") + "HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_FALSE(f.ch->IsOpen());
}

class HttpKeepAliveTest : public ::testing::TestWithParam<KeepAlive> {};
INSTANTIATE_TEST_SUITE_P(HandlerOrCodec, HttpKeepAliveTest,
                         ::testing::Values(KeepAlive::kHandler, KeepAlive::kCodec),
                         [](const ::testing::TestParamInfo<KeepAlive>& info) {
                           return info.param == KeepAlive::kHandler ? "Handler" : "Codec";
                         });

// RFC 9112 9.6: after "Connection: close" no further request is processed; with the
// keep-alive handler the response says so and the channel closes once it is written.
TEST_P(HttpKeepAliveTest, ConnectionCloseStopsTheConnection) {
  Fixture f({}, GetParam());
  f.ch->WriteInbound(Buf("GET /1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                         "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(f.Out(), Expected200("GET /1", "Connection: close\r\n"));
  EXPECT_EQ(f.responder->requests, 1);
  EXPECT_FALSE(f.ch->IsOpen());
  EXPECT_EQ(f.ch->CheckException(), absl::OkStatus());
}

TEST_P(HttpKeepAliveTest, KeepAliveHttp10) {
  Fixture f({}, GetParam());
  f.ch->WriteInbound(Buf("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_EQ(f.Out(), Expected200("GET /a", "Connection: keep-alive\r\n"));
  EXPECT_TRUE(f.ch->IsOpen());
  f.ch->WriteInbound(Buf("GET /b HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(f.Out(), Expected200("GET /b", "Connection: close\r\n"));
  EXPECT_FALSE(f.ch->IsOpen());
}

// A response that itself says "Connection: close" closes the channel too.
TEST_P(HttpKeepAliveTest, KeepAliveHonoursResponseClose) {
  Fixture f({}, GetParam());
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  HttpResponse resp(503);
  resp.AddHeader("Connection", "close");
  f.ch->WriteOutbound(std::move(resp));
  EXPECT_EQ(f.Out(), "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                     "Content-Length: 0\r\n\r\n");
  EXPECT_FALSE(f.ch->IsOpen());
}

// A SharedHttpResponse is encoded as the same HttpResponse would be, any number of
// times, and is never changed by the pipeline.
TEST_P(HttpKeepAliveTest, SharedResponseEncodedWithoutChange) {
  Fixture f({}, GetParam());
  f.HoldRequests("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
                 "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
  auto shared = std::make_shared<HttpResponse>(200);
  shared->AddHeader("Content-Type", "text/plain");
  shared->set_body("same");
  const std::string block_before = shared->header_block();
  SharedHttpResponse s = shared;
  f.ch->WriteOutbound(s);
  f.ch->WriteOutbound(s);
  EXPECT_EQ(f.Out(), absl::StrCat(Expected200("same"), Expected200("same")));
  EXPECT_EQ(shared->header_block(), block_before);
  EXPECT_TRUE(f.ch->IsOpen());
}

// A shared response written again reuses its encoding, except where the answer differs:
// to a HEAD request it carries no body; another shared response is encoded anew.
TEST(HttpServerCodecTest, SharedResponseReencodedWhereTheAnswerDiffers) {
  Fixture f;
  f.HoldRequests("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: a\r\n\r\n"
                 "GET /3 HTTP/1.1\r\nHost: a\r\n\r\nGET /4 HTTP/1.1\r\nHost: a\r\n\r\n");
  auto shared = std::make_shared<HttpResponse>(200);
  shared->AddHeader("Content-Type", "text/plain");
  shared->set_body("same");
  auto other = std::make_shared<HttpResponse>(200);
  other->AddHeader("Content-Type", "text/plain");
  other->set_body("other");
  f.ch->WriteOutbound(SharedHttpResponse(shared));
  f.ch->WriteOutbound(SharedHttpResponse(shared));
  f.ch->WriteOutbound(SharedHttpResponse(shared));
  f.ch->WriteOutbound(SharedHttpResponse(other));
  EXPECT_EQ(f.Out(), absl::StrCat(Expected200("same"),
                                  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                  "Content-Length: 4\r\n\r\n",
                                  Expected200("same"), Expected200("other")));
}

// A shared response that must carry "Connection: close" goes out with it, and the
// shared one stays as it was (the handler writes a changed copy; the codec adds the
// field as it encodes).
TEST_P(HttpKeepAliveTest, KeepAliveNeverChangesASharedResponse) {
  Fixture f({}, GetParam());
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  auto shared = std::make_shared<HttpResponse>(200);
  shared->AddHeader("Content-Type", "text/plain");
  shared->set_body("bye");
  f.ch->WriteOutbound(SharedHttpResponse(shared));
  EXPECT_EQ(f.Out(), Expected200("bye", "Connection: close\r\n"));
  EXPECT_FALSE(shared->has_connection());
  EXPECT_EQ(shared->header_block(), "Content-Type: text/plain\r\n");
  EXPECT_FALSE(f.ch->IsOpen());
}

// A chunked response to a request that closes the connection closes it after its last
// chunk, not before.
TEST_P(HttpKeepAliveTest, AChunkedResponseClosesAfterItsLastChunk) {
  Fixture f({}, GetParam());
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  HttpResponse resp(200);
  resp.set_body("first");
  resp.set_chunked(true, /*end_stream=*/false);
  f.ch->WriteOutbound(std::move(resp));
  f.ch->WriteOutbound(HttpChunk{"more", false});
  EXPECT_TRUE(f.ch->IsOpen());
  f.ch->WriteOutbound(HttpChunk{"", true});
  EXPECT_EQ(f.Out(), "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nfirst\r\n4\r\nmore\r\n0\r\n\r\n");
  EXPECT_FALSE(f.ch->IsOpen());
}

// An answer written with the void promise to a request that closes the connection
// still closes it once written: the close listens on a real promise in its place.
TEST_P(HttpKeepAliveTest, AVoidPromiseAnswerStillClosesTheConnection) {
  Fixture f({}, GetParam());
  f.responder->void_every = 1;
  f.ch->WriteInbound(Buf("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
                         "GET /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                         "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n"));
  f.ch->RunPendingTasks();
  EXPECT_EQ(f.Out(), absl::StrCat(Expected200("GET /1"),
                                  Expected200("GET /2", "Connection: close\r\n")));
  EXPECT_EQ(f.responder->requests, 2);
  EXPECT_FALSE(f.ch->IsOpen());
  EXPECT_EQ(f.ch->CheckException(), absl::OkStatus());
}

// The same for a chunked answer whose parts all go with the void promise: the channel
// closes after the last chunk, not before.
TEST_P(HttpKeepAliveTest, AChunkedVoidPromiseAnswerClosesAfterItsLastChunk) {
  Fixture f({}, GetParam());
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  HttpResponse resp(200);
  resp.set_body("first");
  resp.set_chunked(true, /*end_stream=*/false);
  f.ch->pipeline().WriteAndFlush(std::move(resp), VoidPromise());
  f.ch->RunPendingTasks();
  EXPECT_TRUE(f.ch->IsOpen());
  f.ch->pipeline().WriteAndFlush(HttpChunk{"", true}, VoidPromise());
  f.ch->RunPendingTasks();
  EXPECT_EQ(f.Out(), "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nfirst\r\n0\r\n\r\n");
  EXPECT_FALSE(f.ch->IsOpen());
  EXPECT_EQ(f.ch->CheckException(), absl::OkStatus());
}

// The same shared response answers requests that persist and one that does not: each
// answer carries its own Connection field (the codec's encoding cache keys on it).
TEST_P(HttpKeepAliveTest, ASharedResponseAnswersPersistentAndClosingRequests) {
  Fixture f({}, GetParam());
  f.HoldRequests(
      "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
      "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /4 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  auto shared = std::make_shared<HttpResponse>(200);
  shared->AddHeader("Content-Type", "text/plain");
  shared->set_body("same");
  for (int i = 0; i < 4; ++i) f.ch->WriteOutbound(SharedHttpResponse(shared));
  EXPECT_EQ(f.Out(),
            absl::StrCat(Expected200("same"), Expected200("same", "Connection: keep-alive\r\n"),
                         Expected200("same"), Expected200("same", "Connection: close\r\n")));
  EXPECT_FALSE(f.ch->IsOpen());
  EXPECT_FALSE(shared->has_connection());
}

TEST(HttpServerCodecTest, NullSharedResponseFailsItsWrite) {
  Fixture f;
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  ChannelFuture w = f.ch->pipeline().WriteAndFlush(SharedHttpResponse());
  f.ch->RunPendingTasks();
  ASSERT_TRUE(w.IsDone());
  EXPECT_EQ(w.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.Out(), "");
}

TEST(HttpServerCodecTest, HeadResponseHasNoBody) {
  Fixture f;
  f.ch->WriteInbound(Buf("HEAD /x HTTP/1.1\r\nHost: a\r\n\r\nGET /y HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(f.Out(), absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                  "Content-Length: 7\r\n\r\n",
                                  Expected200("GET /y")));
}

TEST(HttpServerCodecTest, BodilessStatusesGetNoContentLength) {
  Fixture f;
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
  HttpResponse no_content(204);
  no_content.set_body("ignored");
  f.ch->WriteOutbound(std::move(no_content));
  f.ch->WriteOutbound(HttpResponse(304));
  EXPECT_EQ(f.Out(), "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n");
}

TEST(HttpServerCodecTest, ChunkedResponse) {
  Fixture f;
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  HttpResponse resp(200);
  resp.set_body("first");
  resp.set_chunked(true, /*end_stream=*/false);
  f.ch->WriteOutbound(std::move(resp));
  f.ch->WriteOutbound(HttpChunk{std::string(20, 'z'), false});
  f.ch->WriteOutbound(HttpChunk{"end", true});
  EXPECT_EQ(f.Out(), absl::StrCat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "5\r\nfirst\r\n14\r\n",
                                  std::string(20, 'z'), "\r\n3\r\nend\r\n0\r\n\r\n"));
  EXPECT_EQ(f.ch->CheckException(), absl::OkStatus());
}

TEST(HttpServerCodecTest, ChunkedResponseInOneMessage) {
  Fixture f;
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  HttpResponse resp(200);
  resp.set_body("all");
  resp.set_chunked(true);
  f.ch->WriteOutbound(std::move(resp));
  EXPECT_EQ(f.Out(), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nall\r\n0\r\n\r\n");
}

TEST(HttpServerCodecTest, ExpectContinue) {
  Fixture f;
  f.ch->WriteInbound(Buf("POST /u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                         "Content-Length: 3\r\n\r\n"));
  EXPECT_EQ(f.Out(), "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_EQ(f.responder->requests, 0);
  f.ch->WriteInbound(Buf("abc"));
  EXPECT_EQ(f.Out(), Expected200("POST /u abc"));
}

TEST(HttpServerCodecTest, ExpectContinueTooLargeIs413WithoutContinue) {
  HttpServerCodecOptions options;
  options.limits.max_body = 2;
  Fixture f(options);
  f.ch->WriteInbound(Buf("POST /u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                         "Content-Length: 3\r\n\r\n"));
  EXPECT_THAT(f.Out(), StartsWith("HTTP/1.1 413 Content Too Large\r\n"));
  EXPECT_FALSE(f.ch->IsOpen());
  EXPECT_TRUE(IsTooLongFrame(f.ch->CheckException()));
}

TEST(HttpServerCodecTest, InvalidResponsesFailTheirWrite) {
  Fixture f;
  f.HoldRequests("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  HttpResponse injected(200);
  injected.AddHeader("X", "a\r\nSet-Cookie: evil");
  EXPECT_FALSE(injected.headers_valid());
  ChannelFuture w1 = f.ch->pipeline().WriteAndFlush(std::move(injected));
  f.ch->RunPendingTasks();
  ASSERT_TRUE(w1.IsDone());
  EXPECT_EQ(w1.Cause().code(), absl::StatusCode::kInvalidArgument);
  ChannelFuture w2 = f.ch->pipeline().WriteAndFlush(HttpResponse(42));
  f.ch->RunPendingTasks();
  EXPECT_EQ(w2.Cause().code(), absl::StatusCode::kInvalidArgument);
  ChannelFuture w3 = f.ch->pipeline().WriteAndFlush(HttpChunk{"x", true});
  f.ch->RunPendingTasks();
  EXPECT_EQ(w3.Cause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.Out(), "");
  HttpResponse bad_name(200);
  bad_name.AddHeader("Bad Name", "v");
  EXPECT_FALSE(bad_name.headers_valid());
}

TEST(HttpServerCodecTest, ClosedMidRequestIsReported) {
  Fixture f;
  f.ch->WriteInbound(Buf("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_TRUE(f.ch->CheckException().ok());
  f.ch->Finish();
  EXPECT_TRUE(IsCorruptedFrame(f.ch->CheckException()));
  EXPECT_EQ(f.responder->requests, 0);
}

TEST(HttpServerCodecTest, ClosedBetweenRequestsIsQuiet) {
  Fixture f;
  f.ch->WriteInbound(Buf("GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\n"));
  f.Out();
  f.ch->Finish();
  EXPECT_TRUE(f.ch->CheckException().ok());
}

TEST(HttpServerCodecTest, CreateValidatesLimits) {
  HttpServerCodecOptions options;
  options.limits.max_headers = 0;
  absl::StatusOr<std::shared_ptr<HttpServerCodec>> bad = HttpServerCodec::Create(options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("max_headers"));
  options.limits.max_headers = 10;
  options.limits.max_body = size_t{1} << 31;
  EXPECT_FALSE(HttpServerCodec::Create(options).ok());
  EXPECT_TRUE(HttpServerCodec::Create().ok());
}

}  // namespace
}  // namespace codec_test
}  // namespace gyre
