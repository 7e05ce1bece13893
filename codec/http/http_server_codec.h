// HttpServerCodec: the HTTP/1.1 server side of a pipeline, Netty's HttpServerCodec and
// HttpObjectAggregator in one handler. Inbound it turns bytes into whole HttpRequest
// messages (head and body); outbound it turns HttpResponse / HttpChunk into bytes.
//
//   ch.pipeline().AddLast("http", std::make_shared<HttpServerCodec>());
//   ch.pipeline().AddLast("keep-alive", std::make_shared<HttpServerKeepAliveHandler>());
//   ch.pipeline().AddLast("app", std::make_shared<MyHandler>());  // gets HttpRequest
//
// (or HttpServerCodecOptions::keep_alive, which does the keep-alive handler's part in
// the codec.)
//
// Inbound: bytes go through an HttpRequestParser (see its header for the grammar and the
// limits). Each complete request is fired as an HttpRequest. Pipelined requests are
// fired in order as they arrive. After a request whose connection does not persist
// ("Connection: close", or HTTP/1.0 without keep-alive) the rest of the input is
// discarded (RFC 9112 9.6). "Expect: 100-continue" is answered with "100 Continue"
// when no earlier response is outstanding.
//
// Bad input: the parser's status (400, 413, 414, 417, 431, 501, 505) is answered with a
// response carrying "Connection: close" and a one-line text/plain reason, after the
// responses to the requests before it, and then the channel is closed; the input after
// the error is discarded. The error also goes through ExceptionCaught: a TooLongFrame
// status for 413/414/431, a CorruptedFrame status for the others (codec_status.h). A
// connection that closes in the middle of a request raises CorruptedFrame likewise.
//
// Outbound: an HttpResponse (or a SharedHttpResponse, encoded without a copy) is
// encoded as its status line, its headers, and
//   - unless chunked, a Content-Length (added when the response has none; never for
//     1xx, 204 and 304) and the body;
//   - if chunked, "Transfer-Encoding: chunked", the body as the first chunk, and the
//     last chunk at once when end_stream, else after the HttpChunk whose last is true.
// A response to a HEAD request keeps its headers (Content-Length included) and drops
// its body and chunks. Responses answer requests in the order they are written: the
// n-th final (status >= 200) response answers the n-th request; writing them in order
// is the application's part (as with Netty). A response whose headers are invalid (see
// HttpResponse::AddHeader), a status outside 100..999, or an HttpChunk outside a chunked
// response fails its write's promise with InvalidArgument / FailedPrecondition and
// writes nothing. Other messages (a ByteBuf, ...) pass through untouched. Writes may
// use the void promise (it takes it as it is: AcceptsVoidPromise); their failures reach
// ExceptionCaught.
//
// Thread safety: loop-confined, one per channel (not sharable).
// Ownership: the allocator (if given) must outlive the codec.
#ifndef GYRE_CODEC_HTTP_HTTP_SERVER_CODEC_H_
#define GYRE_CODEC_HTTP_HTTP_SERVER_CODEC_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/codec/byte_to_message_decoder.h"
#include "gyre/codec/http/http_message.h"
#include "gyre/codec/http/http_request_parser.h"

namespace gyre {

struct HttpServerCodecOptions {
  HttpParserLimits limits;
  // Answer "Expect: 100-continue" with "100 Continue" (else the client waits for its
  // own timeout before sending the body).
  bool send_continue = true;
  // Where encoded responses are allocated; nullptr = PooledByteBufAllocator::Default().
  ByteBufAllocator* alloc = nullptr;
  // Keep the connection's persistence in the codec, exactly as HttpServerKeepAliveHandler
  // does (the same Connection fields, the same closes), without a handler of its own:
  // one pipeline hop fewer for every request and response. A shared response that needs
  // a Connection field is not copied: the field is added as it is encoded. Use this or
  // the handler, not both.
  bool keep_alive = false;
};

class HttpServerCodec final : public ByteToMessageDecoder {
 public:
  // Validates the options (every limit positive and at most 1 GiB).
  static absl::StatusOr<std::shared_ptr<HttpServerCodec>> Create(
      HttpServerCodecOptions options = {});
  // Unchecked options; the defaults are always valid.
  explicit HttpServerCodec(HttpServerCodecOptions options = {});

  uint32_t mask() const override { return kBoth; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override;
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  bool AcceptsVoidPromise() const override { return true; }
  void Flush(ChannelHandlerContext& ctx) override;
  void Disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  void Close(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  void Deregister(ChannelHandlerContext& ctx, ChannelPromise promise) override;

  // Requests fired and not yet answered by a final response.
  size_t outstanding_requests() const { return requests_.size(); }

 protected:
  absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override;
  absl::Status DecodeLast(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override;
  void HandlerRemovedInternal(ChannelHandlerContext& ctx) override;

 private:
  struct Pending {
    bool head = false;        // a HEAD request: responses carry no body
    bool keep_alive = true;   // the request lets the connection persist
    bool http10 = false;
  };

  // `shared`: the response's shared handle when it came as a SharedHttpResponse.
  void WriteResponse(ChannelHandlerContext& ctx, const HttpResponse& resp,
                     const SharedHttpResponse* shared, ChannelPromise promise);
  void WriteChunk(ChannelHandlerContext& ctx, HttpChunk& chunk, ChannelPromise promise);
  // After the final response to the oldest request: forgets it, and sends the error
  // response waiting for it, if any.
  void Answered(ChannelHandlerContext& ctx);
  void SendErrorResponse(ChannelHandlerContext& ctx);
  // Passes the responses batched so far down as one buffer (nothing when none are).
  void WriteBatch(ChannelHandlerContext& ctx);

  const HttpServerCodecOptions options_;
  ByteBufAllocator* const alloc_;
  HttpRequestParser parser_;
  std::deque<Pending> requests_;
  bool in_chunked_response_ = false;
  bool chunked_response_to_head_ = false;
  bool close_after_chunks_ = false;  // options_.keep_alive: the chunked response closes
  bool discarding_ = false;  // after a non-persistent request or an error
  bool error_pending_ = false;
  // Responses written while a read is decoded (pipelined requests answered at once) are
  // encoded one after another into `batch_`, which goes down as one write when the read
  // is decoded, or first thing when anything else passes down (a flush, a close, another
  // message): one buffer, one pipeline hop and one iovec for all of them. Their promises
  // complete when that write does.
  bool decoding_ = false;
  ByteBuf batch_;
  // The last SharedHttpResponse encoded with Content-Length (held: immutable while held),
  // whether it answered a HEAD request, and its bytes.
  SharedHttpResponse encoded_shared_;
  bool encoded_for_head_ = false;
  absl::string_view encoded_connection_;  // the Connection line added to it, if any
  std::string encoded_;
  // The promises of the batched responses. When any of them is the void promise, the
  // first one is (WriteResponse keeps it so): the batch's write then reports a failure
  // to ExceptionCaught once.
  std::vector<ChannelPromise> batch_promises_;
};

// HttpServerKeepAliveHandler: the connection-persistence half of a server, as Netty's
// handler of that name. Put it after HttpServerCodec. For each request it remembers
// whether the connection may persist; on the final response to it:
//   - if the request asked to close (or was HTTP/1.0 without keep-alive), or the
//     response carries "Connection: close", the response gets "Connection: close" (if it
//     has no Connection field) and the channel is closed once it has been written;
//   - an HTTP/1.0 keep-alive request gets "Connection: keep-alive" on its response.
// A chunked response closes after its last chunk. A SharedHttpResponse that needs a
// Connection field is copied and the copy changed; one that needs none passes as is.
//
// Thread safety: loop-confined, one per channel (not sharable).
class HttpServerKeepAliveHandler final : public ChannelDuplexHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override;
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  bool AcceptsVoidPromise() const override { return true; }

 private:
  struct Pending {
    bool keep_alive = true;
    bool http10 = false;
  };
  std::deque<Pending> requests_;
  bool close_after_chunks_ = false;
  bool in_chunked_response_ = false;
};

}  // namespace gyre

#endif  // GYRE_CODEC_HTTP_HTTP_SERVER_CODEC_H_
