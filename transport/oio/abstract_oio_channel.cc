#include "gyre/transport/oio/abstract_oio_channel.h"

#include <memory>

namespace gyre {

void AbstractOioChannel::OnLoopClaimed(SingleThreadEventLoop* loop) {
  // weak_from_this: a loop that no shared_ptr owns is not kept alive by the channel
  // (it cannot be), and registration does not fail for it.
  loop_ref_ = static_cast<ThreadPerChannelEventLoop*>(loop)->weak_from_this().lock();
}

void AbstractOioChannel::JoinLoop(SingleThreadEventLoop* loop) {
  static_cast<ThreadPerChannelEventLoop*>(loop)->Attach(shared_from_this(), this);
}

void AbstractOioChannel::LeaveLoop(SingleThreadEventLoop* loop) {
  static_cast<ThreadPerChannelEventLoop*>(loop)->Detach();
}

}  // namespace gyre
