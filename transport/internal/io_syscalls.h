// The system calls on the transports' I/O paths (recv, send, sendmsg, epoll_wait, and the
// eventfd's read and write), made without glibc's cancellation-point bookkeeping.
//
//   ssize_t n = internal_transport::Recv(fd, buf, len, 0);   // as ::recv: -1 and errno
//
// glibc makes each of these a thread-cancellation point: in a multi-threaded process
// every call brackets the system call with two more calls (about 90 instructions per
// echoed message). gyre never cancels its threads, so it calls the kernel directly.
// Under a sanitizer they stay the libc functions, whose interceptors check the buffers
// and model the synchronization that passes through fds.
//
// Thread safety: stateless; as the system calls themselves.
#ifndef GYRE_TRANSPORT_INTERNAL_IO_SYSCALLS_H_
#define GYRE_TRANSPORT_INTERNAL_IO_SYSCALLS_H_

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GYRE_DIRECT_SYSCALLS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GYRE_DIRECT_SYSCALLS 0
#endif
#endif
#ifndef GYRE_DIRECT_SYSCALLS
#define GYRE_DIRECT_SYSCALLS 1
#endif

// GYRE_IO_SYSCALL(type, number, libc call, syscall arguments...): the call as made.
#if GYRE_DIRECT_SYSCALLS
#define GYRE_IO_SYSCALL(type, nr, libc_call, ...) static_cast<type>(syscall(nr, __VA_ARGS__))
#else
#define GYRE_IO_SYSCALL(type, nr, libc_call, ...) (libc_call)
#endif

namespace gyre {
namespace internal_transport {

inline ssize_t Recv(int fd, void* buf, size_t len, int flags) {
  return GYRE_IO_SYSCALL(ssize_t, SYS_recvfrom, ::recv(fd, buf, len, flags),  //
                         fd, buf, len, flags, nullptr, nullptr);
}

inline ssize_t Send(int fd, const void* buf, size_t len, int flags) {
  return GYRE_IO_SYSCALL(ssize_t, SYS_sendto, ::send(fd, buf, len, flags),  //
                         fd, buf, len, flags, nullptr, 0);
}

inline ssize_t SendMsg(int fd, const msghdr* msg, int flags) {
  return GYRE_IO_SYSCALL(ssize_t, SYS_sendmsg, ::sendmsg(fd, msg, flags), fd, msg, flags);
}

// epoll_pwait with no signal mask is epoll_wait (which some architectures lack).
inline int EpollWait(int epfd, epoll_event* events, int max_events, int timeout_ms) {
  return GYRE_IO_SYSCALL(int, SYS_epoll_pwait, ::epoll_wait(epfd, events, max_events, timeout_ms),
                         epfd, events, max_events, timeout_ms, nullptr, size_t{8});
}

inline ssize_t ReadFd(int fd, void* buf, size_t len) {
  return GYRE_IO_SYSCALL(ssize_t, SYS_read, ::read(fd, buf, len), fd, buf, len);
}

inline ssize_t WriteFd(int fd, const void* buf, size_t len) {
  return GYRE_IO_SYSCALL(ssize_t, SYS_write, ::write(fd, buf, len), fd, buf, len);
}

}  // namespace internal_transport
}  // namespace gyre

#undef GYRE_IO_SYSCALL

#endif  // GYRE_TRANSPORT_INTERNAL_IO_SYSCALLS_H_
