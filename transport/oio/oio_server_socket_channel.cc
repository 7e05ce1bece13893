#include "gyre/transport/oio/oio_server_socket_channel.h"

#include <poll.h>

#include "gyre/transport/internal/abstract_server_socket_channel_impl.h"

namespace gyre {

template class AbstractServerSocketChannel<AbstractOioChannel, OioSocketChannel,
                                           OioServerSocketChannel>;

short OioServerSocketChannel::PollEvents() const {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if (fd() < 0 || !IsOpen() || !IsActive() || !AcceptWanted()) return 0;
  return POLLIN;
}

void OioServerSocketChannel::OnPollEvent(short revents) {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if ((revents & (POLLIN | POLLERR | POLLHUP)) != 0) AcceptEvent();
}

}  // namespace gyre
