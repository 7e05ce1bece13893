#include "gyre/testing/embedded_channel.h"

#include <utility>

namespace gyre {
namespace testing {

EmbeddedChannel::EmbeddedChannel() : Channel(nullptr) {
  pipeline().SetUnhandledHooks(
      [this](Message msg) { inbound_.push_back(std::move(msg)); },
      [this](absl::Status cause) { exceptions_.push_back(std::move(cause)); });
}

EmbeddedChannel::~EmbeddedChannel() = default;

std::shared_ptr<EmbeddedChannel> EmbeddedChannel::CreateUnregistered() {
  return std::shared_ptr<EmbeddedChannel>(new EmbeddedChannel());
}

std::shared_ptr<EmbeddedChannel> EmbeddedChannel::Create(
    std::vector<std::shared_ptr<ChannelHandler>> handlers) {
  std::shared_ptr<EmbeddedChannel> ch = CreateUnregistered();
  for (auto& h : handlers) {
    absl::Status s = ch->pipeline().AddLast("", std::move(h));
    if (!s.ok()) ch->exceptions_.push_back(s);
  }
  absl::Status s = ch->Register();
  if (!s.ok()) ch->exceptions_.push_back(s);
  return ch;
}

absl::Status EmbeddedChannel::Register() {
  ChannelFuture f = loop_.Register(shared_from_this());
  loop_.RunPendingTasks();
  return f.IsDone() ? f.Cause() : absl::InternalError("registration did not complete");
}

void EmbeddedChannel::EmbeddedUnsafe::Register(EventLoop* loop, ChannelPromise promise) {
  if (ch_->IsRegistered()) {
    promise.TryFailure(absl::FailedPreconditionError("already registered"));
    return;
  }
  ch_->set_event_loop(loop);
  ch_->set_registered(true);
  ch_->loop_.AddRegistered(1);
  ch_->pipeline().InvokeHandlerAddedIfNeeded();
  promise.TrySuccess();
  ch_->pipeline().FireChannelRegistered();
  ch_->active_ = true;
  ch_->pipeline().FireChannelActive();
}

void EmbeddedChannel::EmbeddedUnsafe::Close(ChannelPromise promise) {
  if (!ch_->open_) {
    promise.TrySuccess();
    return;
  }
  bool was_active = ch_->active_;
  ch_->open_ = false;
  ch_->active_ = false;
  promise.TrySuccess();
  if (was_active) ch_->pipeline().FireChannelInactive();
  ch_->CompleteCloseFuture();
  if (ch_->IsRegistered()) Deregister(ChannelPromise(nullptr));
}

void EmbeddedChannel::EmbeddedUnsafe::Deregister(ChannelPromise promise) {
  if (!ch_->IsRegistered()) {
    promise.TrySuccess();
    return;
  }
  ch_->set_registered(false);
  ch_->loop_.AddRegistered(-1);
  promise.TrySuccess();
  ch_->pipeline().FireChannelUnregistered();
}

void EmbeddedChannel::EmbeddedUnsafe::Write(Message msg, ChannelPromise promise) {
  if (!ch_->open_) {
    ch_->FailWrite(promise, absl::FailedPreconditionError("channel closed"));
    return;
  }
  ch_->outbound_.push_back(std::move(msg));
  promise.TrySuccess();
}

bool EmbeddedChannel::WriteInbound(Message msg) {
  pipeline().FireChannelRead(std::move(msg));
  pipeline().FireChannelReadComplete();
  loop_.RunPendingTasks();
  return !inbound_.empty();
}

bool EmbeddedChannel::WriteOutbound(Message msg) {
  pipeline().WriteAndFlush(std::move(msg));
  loop_.RunPendingTasks();
  return !outbound_.empty();
}

std::optional<Message> EmbeddedChannel::ReadInbound() {
  if (inbound_.empty()) return std::nullopt;
  Message m = std::move(inbound_.front());
  inbound_.pop_front();
  return m;
}

std::optional<Message> EmbeddedChannel::ReadOutbound() {
  if (outbound_.empty()) return std::nullopt;
  Message m = std::move(outbound_.front());
  outbound_.pop_front();
  return m;
}

absl::Status EmbeddedChannel::CheckException() {
  if (exceptions_.empty()) return absl::OkStatus();
  absl::Status first = exceptions_.front();
  exceptions_.erase(exceptions_.begin());
  return first;
}

bool EmbeddedChannel::Finish() {
  Close();
  loop_.RunPendingTasks();
  return !inbound_.empty() || !outbound_.empty();
}

}  // namespace testing
}  // namespace gyre
