// AdminServer: gyre's in-process gRPC admin service (tools/admin/admin.proto, service
// gyre.admin.v1.Admin). It lists the live named executor groups, describes one (each
// executor's state, thread, queue depths, busy time, registered channels and I/O time
// for event loops, stalled loops), streams snapshots, shuts groups down gracefully and
// describes the process. gRPC server reflection is on.
//
//   AdminServerOptions options;                       // 127.0.0.1, a free port
//   absl::StatusOr<std::unique_ptr<AdminServer>> admin = AdminServer::Start(options);
//   if (!admin.ok()) return admin.status();
//   std::printf("admin on %s\n", (*admin)->address().c_str());
//
// Security: binding to an address other than loopback or a unix socket needs a token
// (refused at Start otherwise). With a token every Admin RPC must carry the metadata
// `authorization: Bearer <token>` (compared in constant time), else UNAUTHENTICATED.
// `read_only` refuses ShutdownGroup with PERMISSION_DENIED. A unix socket (`unix:PATH`)
// gets mode 0600. The reflection service itself is not authenticated: it describes the
// schema only, never process data.
//
// Threading: RPCs are served on gRPC's own threads, never on a gyre loop. Snapshots
// read the executors' published statistics without taking any lock a loop holds, so a
// stuck loop cannot hang an RPC.
//
// Thread safety: Start is thread-safe; the returned server's methods are thread-safe.
// Ownership: the server owns its gRPC server; destroying it stops serving (open
// streams end with CANCELLED) and removes a unix socket file it created.
#ifndef GYRE_TOOLS_ADMIN_ADMIN_SERVER_H_
#define GYRE_TOOLS_ADMIN_ADMIN_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gyre {

struct AdminServerOptions {
  // "HOST:PORT" (port 0: any free port) or "unix:PATH".
  std::string address = "127.0.0.1:0";
  // Empty: no authentication (loopback and unix sockets only). Printable ASCII, no
  // spaces.
  std::string token;
  // Refuse ShutdownGroup.
  bool read_only = false;
  // A loop whose running task is older than this while work is queued is stalled
  // (a request may ask for another threshold). Must be > 0.
  absl::Duration stall_threshold = absl::Seconds(1);
};

// The version GetProcess reports.
inline constexpr char kGyreVersion[] = "0.1.0";

class AdminServer {
 public:
  // Validates `options`, binds and starts serving. InvalidArgument for a bad option
  // (a non-loopback address without a token among them), Unavailable when the address
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(AdminServerOptions options);

  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // The bound address, for clients: "127.0.0.1:43211" (the chosen port), "unix:PATH".
  const std::string& address() const;

  // Stops serving; open streams end. Idempotent; the destructor calls it.
  void Shutdown();

  class Impl;

 private:
  explicit AdminServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True for "localhost", 127.0.0.0/8 and ::1 hosts, and for unix sockets (exposed for
// tests).
bool IsLoopbackAddress(const std::string& address);

}  // namespace gyre

#endif  // GYRE_TOOLS_ADMIN_ADMIN_SERVER_H_
