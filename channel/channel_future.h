// ChannelFuture / ChannelPromise: the futures of channel operations (bind, connect,
// write, close, register). They are Future<void> / Promise<void> whose executor is the
// channel's event loop, so their listeners run on that loop.
//
// Thread safety and ownership: as Future / Promise.
#ifndef GYRE_CHANNEL_CHANNEL_FUTURE_H_
#define GYRE_CHANNEL_CHANNEL_FUTURE_H_

#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"

namespace gyre {

using ChannelFuture = Future<void>;
using ChannelPromise = Promise<void>;

// The void promise (Netty's voidPromise()): for a write whose outcome the writer does
// not want. Nothing is allocated or completed for it, and a failure of the write goes
// to the pipeline's ExceptionCaught instead (Channel::FailWrite). An outbound handler
// between the writer and the transport receives a real promise in its place (so it may
// add listeners); only the transport sees the void one. Any other operation given it
// runs as usual, its outcome unobserved. It is an empty ChannelPromise: do not read its
// state (IsDone, AddListener, ...), as future.h says of an empty handle.
inline ChannelPromise VoidPromise() { return ChannelPromise::Empty(); }

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_FUTURE_H_
