// User events a transport fires through a channel's pipeline (UserEventTriggered), as
// Netty's ChannelInputShutdownEvent and ChannelOutputShutdownEvent.
//
//   void UserEventTriggered(ChannelHandlerContext& ctx, Message event) override {
//     if (event.Get<ChannelInputShutdownEvent>() != nullptr) {
//       // The peer sent FIN and ALLOW_HALF_CLOSURE is on: no more input; still writable.
//       ctx.WriteAndFlush(...);  ctx.Close();
//       return;
//     }
//     ctx.FireUserEventTriggered(std::move(event));
//   }
//
// Thread safety: plain values.
#ifndef GYRE_CHANNEL_CHANNEL_EVENTS_H_
#define GYRE_CHANNEL_CHANNEL_EVENTS_H_

namespace gyre {

// The peer shut down its output (a TCP FIN) while ALLOW_HALF_CLOSURE is on; the channel
// stays open for writing. Fired once.
struct ChannelInputShutdownEvent {};

// This side's output was shut down (ShutdownOutput); writes fail from then on. Fired once.
struct ChannelOutputShutdownEvent {};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_EVENTS_H_
