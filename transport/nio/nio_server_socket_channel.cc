#include "gyre/transport/nio/nio_server_socket_channel.h"

#include <sys/epoll.h>

#include "gyre/transport/internal/abstract_server_socket_channel_impl.h"

namespace gyre {

template class AbstractServerSocketChannel<AbstractNioChannel, NioSocketChannel,
                                           NioServerSocketChannel>;

void NioServerSocketChannel::OnIoEvent(uint32_t events) {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) AcceptEvent();
}

void NioServerSocketChannel::UpdateAcceptInterest() {
  if (AcceptWanted()) {
    AddInterest(EPOLLIN);
  } else {
    RemoveInterest(EPOLLIN);
  }
}

}  // namespace gyre
