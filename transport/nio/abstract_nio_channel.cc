#include "gyre/transport/nio/abstract_nio_channel.h"

#include <sys/epoll.h>

#include <memory>

namespace gyre {

void AbstractNioChannel::JoinLoop(SingleThreadEventLoop* loop) {
  AbstractSocketChannel::JoinLoop(loop);
  applied_interest_ = kNoInterestApplied;
  ApplyInterest();
}

void AbstractNioChannel::ReleaseFd(SingleThreadEventLoop* loop, int fd) {
  static_cast<NioEventLoop*>(loop)->RemoveFd(fd);
  applied_interest_ = kNoInterestApplied;
}

void AbstractNioChannel::StopAutoRead() {
  std::shared_ptr<Channel> self = shared_from_this();
  RunOnLoop(
      [this, self] {
        loop_affinity_.AssertOnLoop();
        RemoveInterest(EPOLLIN | EPOLLRDHUP);
      },
      nullptr);
}

void AbstractNioChannel::ApplyInterest() {
  if (interest_ == applied_interest_) return;
  NioEventLoop* loop = nio_loop();
  if (loop == nullptr || fd() < 0 || !IsOpen() || !IsRegistered()) return;
  absl::Status s = loop->SetInterest(fd(), interest_, this);
  applied_interest_ = s.ok() ? interest_ : kNoInterestApplied;
  if (!s.ok()) pipeline().FireExceptionCaught(s);
}

}  // namespace gyre
