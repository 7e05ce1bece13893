// Small helpers over the BSD socket calls the transports share.
//
//   absl::StatusOr<int> fd = internal_transport::OpenTcpSocket(AF_INET);
//
// Thread safety: stateless functions; thread-safe.
#ifndef GYRE_TRANSPORT_INTERNAL_SOCKET_UTIL_H_
#define GYRE_TRANSPORT_INTERNAL_SOCKET_UTIL_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gyre/channel/channel_option.h"
#include "gyre/channel/socket_address.h"

namespace gyre {
namespace internal_transport {

// A status for `err` (an errno value) with `what` and strerror in the message; the code
// follows absl::ErrnoToStatusCode (ECONNREFUSED: Unavailable, EADDRINUSE:
// FailedPrecondition, ...).
absl::Status ErrnoStatus(int err, absl::string_view what);

// FailedPrecondition "channel is closed": an operation on a closed channel.
absl::Status ClosedError();
// FailedPrecondition "channel output is shut down": a write after ShutdownOutput.
absl::Status OutputShutdownError();

// A non-blocking, close-on-exec TCP socket of `family`.
absl::StatusOr<int> OpenTcpSocket(int family);

// Applies `setting` to `fd` when it is a socket option; OK for the options that are not
// (AUTO_READ, water marks, ...).
absl::Status ApplySocketOption(int fd, const ChannelOptionSetting& setting);

// The socket's local / peer address; empty on failure.
SocketAddress LocalAddress(int fd);
SocketAddress PeerAddress(int fd);

}  // namespace internal_transport
}  // namespace gyre

#endif  // GYRE_TRANSPORT_INTERNAL_SOCKET_UTIL_H_
