// ChannelInitializer: a one-time handler that sets up a channel's pipeline when the
// channel is registered, then removes itself.
//
//   bootstrap.ChildHandler(std::make_shared<ChannelInitializer>([](Channel& ch) {
//     ch.pipeline().AddLast("codec", std::make_shared<LineCodec>()).IgnoreError();
//     ch.pipeline().AddLast("app", std::make_shared<App>()).IgnoreError();
//     return absl::OkStatus();
//   }));
//
// The callback runs once per channel, on the channel's event loop, from HandlerAdded
// (which the pipeline delays until registration). If it returns an error or throws,
// the error is fired as an exception through the pipeline and the channel is closed, as
// Netty does. The initializer is sharable: one instance may serve every accepted child.
//
// Thread safety: the callback may run concurrently for different channels (one per
// loop), so it must be thread-safe if it touches shared state.
// Ownership: holds the callback for its own lifetime.
#ifndef GYRE_CHANNEL_CHANNEL_INITIALIZER_H_
#define GYRE_CHANNEL_CHANNEL_INITIALIZER_H_

#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "gyre/channel/channel_handler.h"

namespace gyre {

class Channel;

class ChannelInitializer final : public ChannelInboundHandler {
 public:
  using InitFunction = std::function<absl::Status(Channel&)>;

  explicit ChannelInitializer(InitFunction init) : init_(std::move(init)) {}

  bool IsSharable() const override { return true; }
  void HandlerAdded(ChannelHandlerContext& ctx) override;
  void ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause) override;

 private:
  InitFunction init_;
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_INITIALIZER_H_
