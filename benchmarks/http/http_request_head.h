// A minimal HTTP/1.x request-head parser for the raw epoll HTTP baseline server.
//
//   size_t end = FindHeadEnd(input, scanned);      // npos until "\r\n\r\n" arrived
//   HttpRequestHead head;
//   if (end != absl::string_view::npos &&
//       ParseRequestHead(input.substr(0, end), &head) == HeadParse::kOk) { ... }
//
// It understands what load generators such as wrk send: a request line
// `METHOD SP target SP HTTP/1.x`, header lines `name: value`, the `Connection` header
// (`close`, `keep-alive`, comma lists) and `Content-Length` (so a body can be skipped).
// It rejects what it cannot frame safely: `Transfer-Encoding` (kNotImplemented), header
// folding, control characters, conflicting lengths, other versions (kBadRequest).
// Lines end in CRLF only.
//
// Thread safety: stateless functions, safe from any thread. The views in HttpRequestHead
// point into the caller's buffer and live as long as it does.
#ifndef GYRE_BENCHMARKS_HTTP_HTTP_REQUEST_HEAD_H_
#define GYRE_BENCHMARKS_HTTP_HTTP_REQUEST_HEAD_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace gyre::bench {

enum class HttpMethod { kGet, kHead, kOther };

// The parts of a request head the server acts on.
struct HttpRequestHead {
  HttpMethod method = HttpMethod::kOther;
  absl::string_view method_name;
  // The request target without its query (`/plaintext?a=1` gives `/plaintext`).
  absl::string_view path;
  // HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
  bool keep_alive = true;
  bool http10 = false;
  // Body bytes that follow the head (0 without Content-Length).
  uint64_t content_length = 0;
};

enum class HeadParse {
  kOk,
  kBadRequest,      // malformed: answer 400 and close
  kNotImplemented,  // a framing the server does not support (Transfer-Encoding): 501, close
};

// Content-Length values above this are rejected (they cannot be real here).
inline constexpr uint64_t kMaxContentLength = uint64_t{1} << 40;

// Returns the length of the head at the start of `data` including its terminating
// "\r\n\r\n", or absl::string_view::npos when it is not complete yet. `scanned` is how
// many bytes of `data` an earlier call already searched without success (0 the first
// time), so that a head arriving byte by byte is searched in linear time.
size_t FindHeadEnd(absl::string_view data, size_t scanned);

// Parses `head` (exactly one request head, ending in "\r\n\r\n", as FindHeadEnd
// delimits it) into `*out`. Returns kOk, kBadRequest or kNotImplemented; on an error
// `*out` is left partly filled and must not be used.
HeadParse ParseRequestHead(absl::string_view head, HttpRequestHead* out);

}  // namespace gyre::bench

#endif  // GYRE_BENCHMARKS_HTTP_HTTP_REQUEST_HEAD_H_
