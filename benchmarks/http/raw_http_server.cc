#include "gyre/benchmarks/http/raw_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gyre/benchmarks/http/http_request_head.h"

namespace gyre::bench {
namespace {

constexpr int kMaxEvents = 256;
constexpr int kAcceptBatch = 64;              // accepts per listener wake-up
constexpr int kMaxThreads = 256;
constexpr size_t kInitialInput = 16 * 1024;
constexpr size_t kMinRead = 4 * 1024;         // read no smaller than this
constexpr uint64_t kMaxDiscard = 1024 * 1024;  // input discarded while closing, at most
constexpr size_t kDateSize = 29;               // "Sun, 06 Nov 1994 08:49:37 GMT"

absl::Status ErrnoStatus(int err, absl::string_view what) {
  return absl::ErrnoToStatus(err, what);
}

// A byte buffer holding the bytes [begin_, end_) of a capacity_-byte block. Consuming
// everything rewinds to the start, so a connection whose reads end on a request
// boundary never moves bytes. Grows on demand, never shrinks.
class Buffer {
 public:
  const char* data() const { return block_.get() + begin_; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  absl::string_view view() const { return absl::string_view(data(), size()); }

  char* tail() { return block_.get() + end_; }
  size_t tail_room() const { return capacity_ - end_; }
  void Commit(size_t n) { end_ += n; }

  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void Clear() { begin_ = end_ = 0; }

  void Append(const char* p, size_t n) {
    if (tail_room() < n) Reserve(n);
    std::memcpy(block_.get() + end_, p, n);
    end_ += n;
  }

  // Ensures tail_room() >= n: moves the bytes to the front, then grows if needed.
  void Reserve(size_t n) {
    if (tail_room() >= n) return;
    if (begin_ > 0) {
      std::memmove(block_.get(), block_.get() + begin_, size());
      end_ -= begin_;
      begin_ = 0;
      if (tail_room() >= n) return;
    }
    const size_t capacity = std::max({capacity_ * 2, end_ + n, kInitialInput});
    std::unique_ptr<char[]> block(new char[capacity]);
    if (end_ > 0) std::memcpy(block.get(), block_.get(), end_);
    block_ = std::move(block);
    capacity_ = capacity;
  }

 private:
  std::unique_ptr<char[]> block_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// Writes `t` as an RFC 7231 IMF-fixdate into out[0..29).
void FormatImfFixdate(time_t t, char* out) {
  static constexpr char kDays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr char kMonths[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm tm;
  gmtime_r(&t, &tm);
  const int year = std::clamp(tm.tm_year + 1900, 0, 9999);
  auto two = [](char* p, int v) {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
  };
  std::memcpy(out, kDays[tm.tm_wday], 3);
  out[3] = ',';
  out[4] = ' ';
  two(out + 5, tm.tm_mday);
  out[7] = ' ';
  std::memcpy(out + 8, kMonths[tm.tm_mon], 3);
  out[11] = ' ';
  two(out + 12, year / 100);
  two(out + 14, year % 100);
  out[16] = ' ';
  two(out + 17, tm.tm_hour);
  out[19] = ':';
  two(out + 20, tm.tm_min);
  out[22] = ':';
  two(out + 23, tm.tm_sec);
  std::memcpy(out + 25, " GMT", 4);
}

// A complete response, formatted once; only its Date value changes.
struct Canned {
  std::string bytes;
  size_t date_at = 0;
  size_t body_size = 0;
};

Canned MakeCanned(absl::string_view status, absl::string_view extra_headers,
                  absl::string_view body, bool close) {
  Canned c;
  c.bytes = absl::StrCat("HTTP/1.1 ", status,
                         "\r\nServer: gyre-raw\r\nContent-Type: text/plain\r\nContent-Length: ",
                         body.size(), "\r\n", extra_headers,
                         close ? "Connection: close\r\n" : "", "Date: ");
  c.date_at = c.bytes.size();
  c.bytes.append(kDateSize, 'X');
  absl::StrAppend(&c.bytes, "\r\n\r\n", body);
  c.body_size = body.size();
  return c;
}

enum Reply {
  kOk,
  kOkClose,
  kNotFound,
  kNotFoundClose,
  kNotAllowed,
  kNotAllowedClose,
  kBadRequest,
  kNotImplemented,
  kReplyCount,
};

}  // namespace

// One I/O thread: an epoll instance, a listener, an eventfd to stop it, and the
// connections it accepted. Loop-confined: everything but Stop() runs on its thread.
class RawHttpServer::Worker {
 public:
  // Takes ownership of `listen_fd` (bound and listening, non-blocking).
  static absl::StatusOr<std::unique_ptr<Worker>> Create(int listen_fd,
                                                         int send_buffer_bytes) {
    std::unique_ptr<Worker> w(new Worker(listen_fd, send_buffer_bytes));
    w->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (w->epoll_fd_ < 0) return ErrnoStatus(errno, "epoll_create1");
    w->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->wake_fd_ < 0) return ErrnoStatus(errno, "eventfd");
    // Spare descriptor, given up to accept-and-close a connection when out of fds.
    w->reserve_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &w->listen_tag_;
    if (epoll_ctl(w->epoll_fd_, EPOLL_CTL_ADD, listen_fd, &ev) != 0) {
      return ErrnoStatus(errno, "epoll_ctl(listener)");
    }
    ev.data.ptr = &w->wake_tag_;
    if (epoll_ctl(w->epoll_fd_, EPOLL_CTL_ADD, w->wake_fd_, &ev) != 0) {
      return ErrnoStatus(errno, "epoll_ctl(eventfd)");
    }
    for (int i = 0; i < kReplyCount; ++i) w->canned_[i] = MakeReply(static_cast<Reply>(i));
    return w;
  }

  ~Worker() {
    for (const std::unique_ptr<Conn>& c : conns_) {
      if (c->fd >= 0) close(c->fd);
    }
    for (int fd : {listen_fd_, epoll_fd_, wake_fd_, reserve_fd_}) {
      if (fd >= 0) close(fd);
    }
  }

  // Runs the loop until Stop(); then closes every connection.
  void Run();

  uint64_t partial_writes() const {
    // Relaxed: a statistic; the reader synchronizes with the loop by other means.
    return partial_writes_.load(std::memory_order_relaxed);
  }

  // Asks Run() to return. Thread-safe (an eventfd write).
  void Stop() {
    const uint64_t one = 1;
    ssize_t ignored = write(wake_fd_, &one, sizeof(one));
    (void)ignored;  // only EAGAIN (counter saturated) can fail, and then a wake is pending
  }

 private:
  struct Conn {
    int fd = -1;
    Buffer in;
    Buffer out;
    size_t scanned = 0;      // bytes of `in` already searched for the end of a head
    uint64_t body_left = 0;  // body bytes of the last request still to discard
    uint64_t discarded = 0;  // bytes discarded since closing began
    bool writing = false;    // waiting for EPOLLOUT (reading paused)
    bool close_after_flush = false;
    bool closing = false;    // FIN sent; discarding input until the peer closes
  };

  enum class Next { kNeedMore, kHighWater, kClose };
  enum class Flushed { kDone, kPending, kClosed };

  Worker(int listen_fd, int send_buffer_bytes)
      : listen_fd_(listen_fd), send_buffer_bytes_(send_buffer_bytes) {}

  static Canned MakeReply(Reply r) {
    static constexpr absl::string_view kHello = "Hello, World!";
    switch (r) {
      case kOk: return MakeCanned("200 OK", "", kHello, false);
      case kOkClose: return MakeCanned("200 OK", "", kHello, true);
      case kNotFound: return MakeCanned("404 Not Found", "", "Not Found\n", false);
      case kNotFoundClose: return MakeCanned("404 Not Found", "", "Not Found\n", true);
      case kNotAllowed:
        return MakeCanned("405 Method Not Allowed", "Allow: GET, HEAD\r\n",
                          "Method Not Allowed\n", false);
      case kNotAllowedClose:
        return MakeCanned("405 Method Not Allowed", "Allow: GET, HEAD\r\n",
                          "Method Not Allowed\n", true);
      case kBadRequest: return MakeCanned("400 Bad Request", "", "Bad Request\n", true);
      case kNotImplemented:
        return MakeCanned("501 Not Implemented", "", "Not Implemented\n", true);
      case kReplyCount: break;
    }
    return Canned{};
  }

  void RefreshDate() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec == date_sec_) return;
    date_sec_ = ts.tv_sec;
    char date[kDateSize];
    FormatImfFixdate(ts.tv_sec, date);
    for (Canned& c : canned_) std::memcpy(c.bytes.data() + c.date_at, date, kDateSize);
  }

  void Append(Conn& c, Reply r, bool head_only) {
    const Canned& canned = canned_[r];
    c.out.Append(canned.bytes.data(),
                 canned.bytes.size() - (head_only ? canned.body_size : 0));
  }

  void Accept();
  void OnEvent(Conn& c, uint32_t events);
  void OnReadable(Conn& c);
  void Serve(Conn& c);
  Next Respond(Conn& c);
  Flushed Flush(Conn& c);
  void BeginClose(Conn& c);
  void Discard(Conn& c);
  bool SetInterest(Conn& c, uint32_t events);
  void Close(Conn& c);

  const int listen_fd_;
  const int send_buffer_bytes_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int reserve_fd_ = -1;
  // Addresses that tag the listener's and the eventfd's epoll events.
  char listen_tag_ = 0;
  char wake_tag_ = 0;
  time_t date_sec_ = -1;
  Canned canned_[kReplyCount];
  std::vector<std::unique_ptr<Conn>> conns_;  // every record ever made, open or free
  std::vector<Conn*> free_;                   // closed records, ready for reuse
  // Written by the loop only (load and store, no locked instruction), read by tests.
  std::atomic<uint64_t> partial_writes_{0};
};

void RawHttpServer::Worker::Run() {
  epoll_event events[kMaxEvents];
  bool stopping = false;
  RefreshDate();
  while (!stopping) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "raw_epoll_http: epoll_wait: %s\n", std::strerror(errno));
      break;
    }
    RefreshDate();
    for (int k = 0; k < n; ++k) {
      void* tag = events[k].data.ptr;
      if (tag == &listen_tag_) {
        Accept();
      } else if (tag == &wake_tag_) {
        stopping = true;
      } else {
        OnEvent(*static_cast<Conn*>(tag), events[k].events);
      }
    }
  }
  for (const std::unique_ptr<Conn>& c : conns_) {
    if (c->fd >= 0) Close(*c);
  }
}

void RawHttpServer::Worker::Accept() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && reserve_fd_ >= 0) {
        // Out of descriptors: refuse one connection rather than spin on the listener.
        close(reserve_fd_);
        const int refused = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (refused >= 0) close(refused);
        reserve_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
        std::fprintf(stderr, "raw_epoll_http: out of file descriptors; refused a connection\n");
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        std::fprintf(stderr, "raw_epoll_http: accept4: %s\n", std::strerror(errno));
      }
      return;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (send_buffer_bytes_ > 0) {
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer_bytes_, sizeof(send_buffer_bytes_));
    }
    Conn* c;
    if (free_.empty()) {
      conns_.push_back(std::make_unique<Conn>());
      c = conns_.back().get();
      free_.reserve(conns_.size());  // Close() never allocates
    } else {
      c = free_.back();
      free_.pop_back();
    }
    c->fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      std::fprintf(stderr, "raw_epoll_http: epoll_ctl(add): %s\n", std::strerror(errno));
      Close(*c);
    }
  }
}

void RawHttpServer::Worker::OnEvent(Conn& c, uint32_t events) {
  if (c.closing) {
    Discard(c);
    return;
  }
  if (!c.writing) {
    OnReadable(c);  // EPOLLIN, or EPOLLERR/EPOLLHUP, which the read reports
    return;
  }
  switch (Flush(c)) {
    case Flushed::kDone: break;
    case Flushed::kPending: return;
    case Flushed::kClosed: return;
  }
  if (c.close_after_flush) {
    BeginClose(c);
    return;
  }
  Serve(c);  // requests left unanswered at the high-water mark
}

void RawHttpServer::Worker::OnReadable(Conn& c) {
  c.in.Reserve(c.in.empty() ? kInitialInput : kMinRead);
  const ssize_t n = recv(c.fd, c.in.tail(), c.in.tail_room(), 0);
  if (n > 0) {
    c.in.Commit(static_cast<size_t>(n));
    Serve(c);
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    Close(c);  // the peer closed (every response so far is written) or the socket failed
  }
}

// Answers what is buffered, writing after each batch, until the input needs more bytes,
// the socket is full, or the connection is to close.
void RawHttpServer::Worker::Serve(Conn& c) {
  for (;;) {
    const Next next = Respond(c);
    c.close_after_flush = next == Next::kClose;
    if (!c.out.empty()) {
      if (Flush(c) != Flushed::kDone) return;
    }
    if (next == Next::kClose) {
      BeginClose(c);
      return;
    }
    if (next == Next::kNeedMore) break;
  }
  if (c.writing) {
    c.writing = false;
    SetInterest(c, EPOLLIN);
  }
}

RawHttpServer::Worker::Next RawHttpServer::Worker::Respond(Conn& c) {
  for (;;) {
    if (c.body_left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(c.body_left, c.in.size()));
      c.in.Consume(n);
      c.body_left -= n;
      if (c.body_left > 0) return Next::kNeedMore;
    }
    if (c.out.size() >= kOutputHighWater) return Next::kHighWater;
    const absl::string_view data = c.in.view();
    const size_t end = FindHeadEnd(data, c.scanned);
    if (end == absl::string_view::npos) {
      if (data.size() >= kMaxHeadSize) {
        Append(c, kBadRequest, false);
        return Next::kClose;
      }
      c.scanned = data.size();
      return Next::kNeedMore;
    }
    c.scanned = 0;
    HttpRequestHead head;
    switch (ParseRequestHead(data.substr(0, end), &head)) {
      case HeadParse::kOk: break;
      case HeadParse::kBadRequest: Append(c, kBadRequest, false); return Next::kClose;
      case HeadParse::kNotImplemented: Append(c, kNotImplemented, false); return Next::kClose;
    }
    // HTTP/1.0 keep-alive would need a "Connection: keep-alive" reply; close instead.
    const bool keep = head.keep_alive && !head.http10;
    const bool known = head.path == "/plaintext" || head.path == "/";
    Reply reply;
    if (!known) {
      reply = keep ? kNotFound : kNotFoundClose;
    } else if (head.method == HttpMethod::kOther) {
      reply = keep ? kNotAllowed : kNotAllowedClose;
    } else {
      reply = keep ? kOk : kOkClose;
    }
    Append(c, reply, head.method == HttpMethod::kHead);
    c.in.Consume(end);
    c.body_left = head.content_length;
    if (!keep) return Next::kClose;
  }
}

RawHttpServer::Worker::Flushed RawHttpServer::Worker::Flush(Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.Consume(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      partial_writes_.store(partial_writes_.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
      if (!c.writing) {
        c.writing = true;
        if (!SetInterest(c, EPOLLOUT)) return Flushed::kClosed;
      }
      return Flushed::kPending;
    }
    Close(c);  // EPIPE, ECONNRESET, ...
    return Flushed::kClosed;
  }
  return Flushed::kDone;
}

void RawHttpServer::Worker::BeginClose(Conn& c) {
  shutdown(c.fd, SHUT_WR);
  c.closing = true;
  c.in.Clear();
  if (c.writing) {
    c.writing = false;
    SetInterest(c, EPOLLIN);
  }
}

void RawHttpServer::Worker::Discard(Conn& c) {
  c.in.Reserve(kMinRead);
  const ssize_t n = recv(c.fd, c.in.tail(), c.in.tail_room(), 0);
  if (n > 0) {
    c.discarded += static_cast<uint64_t>(n);
    if (c.discarded > kMaxDiscard) Close(c);
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    Close(c);
  }
}

bool RawHttpServer::Worker::SetInterest(Conn& c, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = &c;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev) == 0) return true;
  std::fprintf(stderr, "raw_epoll_http: epoll_ctl(mod): %s\n", std::strerror(errno));
  Close(c);
  return false;
}

void RawHttpServer::Worker::Close(Conn& c) {
  close(c.fd);  // also leaves the epoll set: the descriptor was never duplicated
  c.fd = -1;
  c.in.Clear();
  c.out.Clear();
  c.scanned = 0;
  c.body_left = 0;
  c.discarded = 0;
  c.writing = false;
  c.close_after_flush = false;
  c.closing = false;
  free_.push_back(&c);
}

absl::StatusOr<std::unique_ptr<RawHttpServer>> RawHttpServer::Create(
    const RawHttpServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port out of range: ", options.port));
  }
  if (options.send_buffer_bytes < 0) {
    return absl::InvalidArgumentError("send_buffer_bytes must not be negative");
  }
  if (options.threads < 1 || options.threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be in [1, ", kMaxThreads, "]: ", options.threads));
  }
  sockaddr_storage ss{};
  socklen_t len;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, options.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    len = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("host is not a numeric IPv4 or IPv6 address: \"", options.host, "\""));
  }
  auto set_port = [&](int port) {
    if (ss.ss_family == AF_INET) {
      v4->sin_port = htons(static_cast<uint16_t>(port));
    } else {
      v6->sin6_port = htons(static_cast<uint16_t>(port));
    }
  };

  std::unique_ptr<RawHttpServer> server(new RawHttpServer());
  int port = options.port;
  for (int i = 0; i < options.threads; ++i) {
    const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoStatus(errno, "socket");
    absl::StatusOr<std::unique_ptr<Worker>> worker =
        Worker::Create(fd, options.send_buffer_bytes);  // owns fd now
    if (!worker.ok()) return worker.status();
    const int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
      return ErrnoStatus(errno, "setsockopt(SO_REUSEADDR)");
    }
    // Every thread listens on the same port; the kernel balances connections.
    if (options.threads > 1 &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
      return ErrnoStatus(errno, "setsockopt(SO_REUSEPORT)");
    }
    set_port(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return ErrnoStatus(errno, absl::StrCat("bind ", options.host, ":", port));
    }
    if (listen(fd, SOMAXCONN) != 0) return ErrnoStatus(errno, "listen");
    if (i == 0) {
      sockaddr_storage bound{};
      socklen_t bound_len = sizeof(bound);
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
        return ErrnoStatus(errno, "getsockname");
      }
      port = ntohs(bound.ss_family == AF_INET
                       ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                       : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    }
    server->workers_.push_back(*std::move(worker));
  }
  server->port_ = port;
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(ss.ss_family, ss.ss_family == AF_INET ? static_cast<void*>(&v4->sin_addr)
                                                  : static_cast<void*>(&v6->sin6_addr),
            text, sizeof(text));
  server->address_ = ss.ss_family == AF_INET ? absl::StrCat(text, ":", port)
                                             : absl::StrCat("[", text, "]:", port);
  for (const std::unique_ptr<Worker>& w : server->workers_) {
    try {
      server->threads_.emplace_back([worker = w.get()] { worker->Run(); });
    } catch (const std::system_error& e) {
      server->Shutdown();
      return absl::ResourceExhaustedError(absl::StrCat("cannot start a thread: ", e.what()));
    }
  }
  return server;
}

RawHttpServer::~RawHttpServer() { Shutdown(); }

uint64_t RawHttpServer::PartialWritesForTesting() const {
  uint64_t n = 0;
  for (const std::unique_ptr<Worker>& w : workers_) n += w->partial_writes();
  return n;
}

void RawHttpServer::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    for (const std::unique_ptr<Worker>& w : workers_) w->Stop();
    for (std::thread& t : threads_) t.join();
  });
}

}  // namespace gyre::bench
