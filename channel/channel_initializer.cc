#include "gyre/channel/channel_initializer.h"

#include <utility>

#include "gyre/channel/channel.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

void ChannelInitializer::HandlerAdded(ChannelHandlerContext& ctx) {
  absl::Status status;
  absl::Status thrown = internal::CatchAsStatus("channel initializer", [&] {
    status = init_ ? init_(ctx.channel()) : absl::OkStatus();
  });
  if (!thrown.ok()) status = std::move(thrown);
  // Remove this initializer first, so the handlers it added see events from now on.
  ctx.pipeline().Remove(this).IgnoreError();
  if (!status.ok()) {
    ctx.pipeline().FireExceptionCaught(status);
    ctx.channel().Close();
  }
}

void ChannelInitializer::ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause) {
  GYRE_LOG(WARNING) << "failed to initialize channel " << ctx.channel().id().AsShortText()
                    << "; closing it: " << cause;
  ctx.FireExceptionCaught(cause);
  ctx.channel().Close();
}

}  // namespace gyre
