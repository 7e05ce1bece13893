// HelloHandler: the TechEmpower "plaintext" application on gyre's HTTP codec.
// `GET /plaintext` and `GET /` (and HEAD) answer 200 "Hello, World!" as text/plain with
// Content-Length, Server and Date; other paths 404; other methods on those paths 405.
//
//   AddHelloPipeline(channel.pipeline());   // codec (keeping connections alive) + this handler
//
// Errors the codec already answered (a 400 and a close) are counted, not logged; any
// other exception closes the connection.
//
// Thread safety: sharable; one instance serves every connection of every loop (its
// counters are atomics; the Date cache is per thread). Ownership: shared_ptr.
#ifndef GYRE_EXAMPLES_HTTP_HELLO_HANDLER_H_
#define GYRE_EXAMPLES_HTTP_HELLO_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_pipeline.h"

namespace gyre {

class HelloHandler final : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override;
  void ChannelReadComplete(ChannelHandlerContext& ctx) override;
  void ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause) override;

  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  uint64_t bad_requests() const { return bad_requests_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> bad_requests_{0};
};

// Adds "http" (HttpServerCodec with keep_alive) and "hello" (`handler`) to `pipeline`.
absl::Status AddHelloPipeline(ChannelPipeline& pipeline, std::shared_ptr<HelloHandler> handler);

}  // namespace gyre

#endif  // GYRE_EXAMPLES_HTTP_HELLO_HANDLER_H_
