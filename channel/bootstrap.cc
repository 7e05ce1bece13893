#include "gyre/channel/bootstrap.h"

#include <utility>

#include "gyre/channel/channel_handler_context.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace internal {

absl::Status ApplyOptions(gyre::Channel& channel, const std::vector<ChannelOptionSetting>& options) {
  for (const ChannelOptionSetting& s : options) {
    absl::Status status = channel.config().SetValue(s);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

void RegisterThen(EventLoopGroup* group, std::shared_ptr<gyre::Channel> channel,
                  std::function<ChannelFuture(gyre::Channel&)> then,
                  Promise<std::shared_ptr<gyre::Channel>> result) {
  ChannelFuture registered = group->Register(channel);
  registered.AddListener([channel, then = std::move(then),
                          result](const ChannelFuture& r) mutable {
    if (!r.IsSuccess()) {
      channel->Close();
      result.TryFailure(r.Cause().ok() ? absl::CancelledError("registration cancelled") : r.Cause());
      return;
    }
    ChannelFuture op = then(*channel);
    op.AddListener([channel, result](const ChannelFuture& done) mutable {
      if (done.IsSuccess()) {
        result.TrySuccess(channel);
      } else {
        channel->Close();
        result.TryFailure(done.Cause());
      }
    });
  });
}

}  // namespace internal

Future<std::shared_ptr<gyre::Channel>> Bootstrap::NewRegisterThen(
    std::function<ChannelFuture(gyre::Channel&)> op) const {
  if (group_ == nullptr) {
    return MakeFailedFuture<std::shared_ptr<gyre::Channel>>(
        nullptr, absl::FailedPreconditionError("bootstrap: Group(...) not set"));
  }
  absl::StatusOr<std::shared_ptr<gyre::Channel>> channel = NewChannel();
  if (!channel.ok()) return MakeFailedFuture<std::shared_ptr<gyre::Channel>>(nullptr, channel.status());
  Promise<std::shared_ptr<gyre::Channel>> result;
  internal::RegisterThen(group_, *channel, std::move(op), result);
  return result;
}

Future<std::shared_ptr<gyre::Channel>> Bootstrap::Connect(const SocketAddress& remote,
                                                    const SocketAddress& local) const {
  return NewRegisterThen([remote, local](gyre::Channel& ch) { return ch.Connect(remote, local); });
}

Future<std::shared_ptr<gyre::Channel>> Bootstrap::Bind(const SocketAddress& local) const {
  return NewRegisterThen([local](gyre::Channel& ch) { return ch.Bind(local); });
}

namespace {

// Registers each accepted child (a ChannelRead of std::shared_ptr<gyre::Channel>).
class Acceptor final : public ChannelInboundHandler {
 public:
  Acceptor(EventLoopGroup* child_group, std::shared_ptr<ChannelHandler> child_handler,
           std::vector<ChannelOptionSetting> child_options)
      : child_group_(child_group),
        child_handler_(std::move(child_handler)),
        child_options_(std::move(child_options)) {}

  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    std::shared_ptr<gyre::Channel>* child = msg.Get<std::shared_ptr<gyre::Channel>>();
    if (child == nullptr || *child == nullptr) {
      ctx.FireChannelRead(std::move(msg));
      return;
    }
    std::shared_ptr<gyre::Channel> ch = *child;
    absl::Status status = internal::ApplyOptions(*ch, child_options_);
    if (status.ok() && child_handler_ != nullptr) {
      status = ch->pipeline().AddLast("", child_handler_);
    }
    if (!status.ok()) {
      GYRE_LOG(WARNING) << "failed to set up an accepted channel; closing it: " << status;
      ch->Close();
      return;
    }
    child_group_->Register(ch).AddListener([ch](const ChannelFuture& f) {
      if (!f.IsSuccess()) {
        GYRE_LOG(WARNING) << "failed to register an accepted channel; closing it: " << f.Cause();
        ch->Close();
      }
    });
  }

 private:
  EventLoopGroup* const child_group_;
  const std::shared_ptr<ChannelHandler> child_handler_;
  const std::vector<ChannelOptionSetting> child_options_;
};

}  // namespace

std::shared_ptr<ChannelHandler> ServerBootstrap::NewAcceptor(
    EventLoopGroup* child_group, std::shared_ptr<ChannelHandler> child_handler,
    std::vector<ChannelOptionSetting> child_options) {
  return std::make_shared<Acceptor>(child_group, std::move(child_handler),
                                    std::move(child_options));
}

Future<std::shared_ptr<gyre::Channel>> ServerBootstrap::Bind(const SocketAddress& local) const {
  if (group_ == nullptr || child_group_ == nullptr) {
    return MakeFailedFuture<std::shared_ptr<gyre::Channel>>(
        nullptr, absl::FailedPreconditionError("server bootstrap: Group(...) not set"));
  }
  if (child_handler_ == nullptr) {
    return MakeFailedFuture<std::shared_ptr<gyre::Channel>>(
        nullptr, absl::FailedPreconditionError("server bootstrap: ChildHandler(...) not set"));
  }
  absl::StatusOr<std::shared_ptr<gyre::Channel>> channel = NewChannel();
  if (!channel.ok()) return MakeFailedFuture<std::shared_ptr<gyre::Channel>>(nullptr, channel.status());
  absl::Status added = (*channel)->pipeline().AddLast(
      "acceptor", NewAcceptor(child_group_, child_handler_, child_options_));
  if (!added.ok()) return MakeFailedFuture<std::shared_ptr<gyre::Channel>>(nullptr, added);
  Promise<std::shared_ptr<gyre::Channel>> result;
  internal::RegisterThen(group_, *channel, [local](gyre::Channel& ch) { return ch.Bind(local); }, result);
  return result;
}

}  // namespace gyre
