#include "gyre/channel/channel_handler.h"

#include <utility>

#include "gyre/channel/channel_handler_context.h"

namespace gyre {

void ChannelHandler::ChannelRegistered(ChannelHandlerContext& ctx) { ctx.FireChannelRegistered(); }
void ChannelHandler::ChannelUnregistered(ChannelHandlerContext& ctx) {
  ctx.FireChannelUnregistered();
}
void ChannelHandler::ChannelActive(ChannelHandlerContext& ctx) { ctx.FireChannelActive(); }
void ChannelHandler::ChannelInactive(ChannelHandlerContext& ctx) { ctx.FireChannelInactive(); }
void ChannelHandler::ChannelRead(ChannelHandlerContext& ctx, Message msg) {
  ctx.FireChannelRead(std::move(msg));
}
void ChannelHandler::ChannelReadComplete(ChannelHandlerContext& ctx) {
  ctx.FireChannelReadComplete();
}
void ChannelHandler::UserEventTriggered(ChannelHandlerContext& ctx, Message event) {
  ctx.FireUserEventTriggered(std::move(event));
}
void ChannelHandler::ChannelWritabilityChanged(ChannelHandlerContext& ctx) {
  ctx.FireChannelWritabilityChanged();
}
void ChannelHandler::ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause) {
  ctx.FireExceptionCaught(std::move(cause));
}

void ChannelHandler::Bind(ChannelHandlerContext& ctx, const SocketAddress& local,
                          ChannelPromise promise) {
  ctx.Bind(local, std::move(promise));
}
void ChannelHandler::Connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
                             const SocketAddress& local, ChannelPromise promise) {
  ctx.Connect(remote, local, std::move(promise));
}
void ChannelHandler::Disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) {
  ctx.Disconnect(std::move(promise));
}
void ChannelHandler::Close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  ctx.Close(std::move(promise));
}
void ChannelHandler::Deregister(ChannelHandlerContext& ctx, ChannelPromise promise) {
  ctx.Deregister(std::move(promise));
}
void ChannelHandler::Read(ChannelHandlerContext& ctx) { ctx.Read(); }
void ChannelHandler::Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  ctx.Write(std::move(msg), std::move(promise));
}
void ChannelHandler::Flush(ChannelHandlerContext& ctx) { ctx.Flush(); }

}  // namespace gyre
