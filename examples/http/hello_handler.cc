#include "gyre/examples/http/hello_handler.h"

#include <time.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gyre/channel/channel.h"
#include "gyre/codec/codec_status.h"
#include "gyre/codec/http/http_message.h"
#include "gyre/codec/http/http_server_codec.h"

namespace gyre {
namespace {

constexpr absl::string_view kHello = "Hello, World!";

// The responses this handler sends, built through HttpResponse's API once per second
// per thread (the Date changes) and shared by every write in that second (as servers
// cache their fixed headers): a write holds a reference, never a copy.
struct Prototypes {
  time_t second = -1;
  SharedHttpResponse ok;
  SharedHttpResponse not_found;
  SharedHttpResponse not_allowed;
};

void Fill(HttpResponse& resp, absl::string_view date) {
  resp.AddHeader("Server", "gyre");
  resp.AddHeader("Date", date);
  resp.AddHeader("Content-Type", "text/plain");
}

const Prototypes& CurrentPrototypes() {
  thread_local Prototypes p;
  const time_t now = time(nullptr);
  if (now != p.second) {
    tm parts;
    gmtime_r(&now, &parts);
    char date[40];
    const size_t n = strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &parts);
    const absl::string_view d(date, n);
    auto ok = std::make_shared<HttpResponse>(200);
    Fill(*ok, d);
    ok->set_body(kHello);
    auto not_found = std::make_shared<HttpResponse>(404);
    Fill(*not_found, d);
    not_found->set_body("Not Found\n");
    auto not_allowed = std::make_shared<HttpResponse>(405);
    Fill(*not_allowed, d);
    not_allowed->AddHeader("Allow", "GET, HEAD");
    not_allowed->set_body("Method Not Allowed\n");
    p.second = now;
    p.ok = std::move(ok);
    p.not_found = std::move(not_found);
    p.not_allowed = std::move(not_allowed);
  }
  return p;
}

}  // namespace

void HelloHandler::ChannelRead(ChannelHandlerContext& ctx, Message msg) {
  const HttpRequest* req = msg.Get<HttpRequest>();
  if (req == nullptr) {
    ctx.FireChannelRead(std::move(msg));
    return;
  }
  requests_.fetch_add(1, std::memory_order_relaxed);
  const absl::string_view path = req->path();
  const bool known = path == "/plaintext" || path == "/";
  const bool get = req->method() == "GET" || req->method() == "HEAD";
  const Prototypes& p = CurrentPrototypes();
  // The void promise: nothing here waits for the write (a failure reaches ExceptionCaught).
  ctx.Write(!known ? p.not_found : get ? p.ok : p.not_allowed, ctx.VoidPromise());
}

void HelloHandler::ChannelReadComplete(ChannelHandlerContext& ctx) { ctx.Flush(); }

void HelloHandler::ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause) {
  if (IsCorruptedFrame(cause) || IsTooLongFrame(cause)) {
    // The codec answered it (status and close).
    bad_requests_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ctx.channel().Close();
}

absl::Status AddHelloPipeline(ChannelPipeline& pipeline, std::shared_ptr<HelloHandler> handler) {
  // Persistence in the codec (HttpServerCodecOptions::keep_alive): the same answers as
  // an HttpServerKeepAliveHandler after it, one pipeline hop fewer each way.
  HttpServerCodecOptions options;
  options.keep_alive = true;
  absl::Status s = pipeline.AddLast("http", std::make_shared<HttpServerCodec>(options));
  if (s.ok()) s = pipeline.AddLast("hello", std::move(handler));
  return s;
}

}  // namespace gyre
