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

namespace gyre {
namespace internal_transport {

inline ssize_t Recv(int fd, void* buf, size_t len, int flags) {
#if GYRE_DIRECT_SYSCALLS
  return static_cast<ssize_t>(syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr));
#else
  return ::recv(fd, buf, len, flags);
#endif
}

inline ssize_t Send(int fd, const void* buf, size_t len, int flags) {
#if GYRE_DIRECT_SYSCALLS
  return static_cast<ssize_t>(syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0));
#else
  return ::send(fd, buf, len, flags);
#endif
}

inline ssize_t SendMsg(int fd, const msghdr* msg, int flags) {
#if GYRE_DIRECT_SYSCALLS
  return static_cast<ssize_t>(syscall(SYS_sendmsg, fd, msg, flags));
#else
  return ::sendmsg(fd, msg, flags);
#endif
}

inline int EpollWait(int epfd, epoll_event* events, int max_events, int timeout_ms) {
#if GYRE_DIRECT_SYSCALLS
  // epoll_pwait with no signal mask is epoll_wait (which some architectures lack).
  return static_cast<int>(
      syscall(SYS_epoll_pwait, epfd, events, max_events, timeout_ms, nullptr, size_t{8}));
#else
  return ::epoll_wait(epfd, events, max_events, timeout_ms);
#endif
}

inline ssize_t ReadFd(int fd, void* buf, size_t len) {
#if GYRE_DIRECT_SYSCALLS
  return static_cast<ssize_t>(syscall(SYS_read, fd, buf, len));
#else
  return ::read(fd, buf, len);
#endif
}

inline ssize_t WriteFd(int fd, const void* buf, size_t len) {
#if GYRE_DIRECT_SYSCALLS
  return static_cast<ssize_t>(syscall(SYS_write, fd, buf, len));
#else
  return ::write(fd, buf, len);
#endif
}

}  // namespace internal_transport
}  // namespace gyre

#endif  // GYRE_TRANSPORT_INTERNAL_IO_SYSCALLS_H_
