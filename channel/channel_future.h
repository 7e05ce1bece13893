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

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_FUTURE_H_
