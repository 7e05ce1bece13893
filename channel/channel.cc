#include "gyre/channel/channel.h"

#include <atomic>

#include "absl/strings/str_format.h"
#include "gyre/channel/event_loop.h"

namespace gyre {
namespace {

uint64_t NextChannelId() {
  // Relaxed: only uniqueness matters.
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::string ChannelId::AsShortText() const { return absl::StrFormat("%08x", value); }

Channel::Channel(Channel* parent)
    : id_{NextChannelId()}, parent_(parent), close_future_(nullptr), pipeline_(this) {}

Channel::~Channel() = default;

void Channel::set_event_loop(EventLoop* loop) {
  loop_affinity_.Bind(loop);
  loop_.store(loop, std::memory_order_release);
}

ChannelPromise Channel::NewPromise() const { return ChannelPromise(event_loop()); }

void Channel::FailWrite(ChannelPromise& promise, absl::Status cause) {
  if (promise.valid()) {
    promise.TryFailure(std::move(cause));
    return;
  }
  pipeline().FireExceptionCaught(std::move(cause));
}

ChannelFuture EventLoopGroup::Register(std::shared_ptr<Channel> channel) {
  return Next()->Register(std::move(channel));
}

ChannelFuture EventLoop::Register(std::shared_ptr<Channel> channel) {
  if (channel == nullptr) {
    return MakeFailedFuture<void>(this, absl::InvalidArgumentError("Register: null channel"));
  }
  ChannelPromise promise(this);
  Channel::Unsafe& unsafe = channel->unsafe();
  unsafe.Register(this, promise);
  return promise;
}

}  // namespace gyre
