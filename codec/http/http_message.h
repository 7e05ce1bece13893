// HttpRequest / HttpResponse / HttpChunk: the messages //codec/http passes through a
// pipeline. A server pipeline receives HttpRequest (head and whole body) and writes
// HttpResponse (optionally followed by HttpChunk pieces of a chunked body).
//
//   void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
//     HttpRequest* req = msg.Get<HttpRequest>();
//     HttpResponse resp(200);
//     resp.AddHeader("Content-Type", "text/plain");
//     resp.set_body("hi");
//     ctx.Write(std::move(resp));      // Content-Length is added by the codec
//   }
//
// HttpRequest keeps the request head as one string it owns; method, target, header
// names and values are views into it (no string per header). HttpResponse keeps its
// header block serialized as it is built ("Name: value\r\n" appended), so encoding is
// a few copies into one buffer.
//
// Thread safety: thread-compatible values. Ownership: each owns its bytes; the views an
// HttpRequest returns are valid while it lives (moving it keeps them valid: the views
// are offsets resolved on access).
#ifndef GYRE_CODEC_HTTP_HTTP_MESSAGE_H_
#define GYRE_CODEC_HTTP_HTTP_MESSAGE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "gyre/concurrent/internal/small_block.h"

namespace gyre {

enum class HttpVersion : uint8_t { kHttp10, kHttp11 };

class HttpRequest {
 public:
  HttpRequest() = default;

  absl::string_view method() const { return View(method_); }
  absl::string_view target() const { return View(target_); }
  // The target without its query ("/a?b" -> "/a").
  absl::string_view path() const {
    const absl::string_view t = target();
    const void* q = t.empty() ? nullptr : std::memchr(t.data(), '?', t.size());
    if (q == nullptr) return t;
    return t.substr(0, static_cast<size_t>(static_cast<const char*>(q) - t.data()));
  }
  HttpVersion version() const { return version_; }
  // Whether the connection stays open after the response (RFC 9112 9.3: HTTP/1.1
  // unless "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
  bool keep_alive() const { return keep_alive_; }
  bool chunked() const { return chunked_; }
  const std::string& body() const { return body_; }
  std::string& mutable_body() { return body_; }

  size_t header_count() const { return headers_.size(); }
  absl::string_view header_name(size_t i) const { return View(headers_[i].name); }
  absl::string_view header_value(size_t i) const { return View(headers_[i].value); }
  // The first value of header `name` (case-insensitive), or nullopt.
  std::optional<absl::string_view> Header(absl::string_view name) const;

 private:
  friend class HttpRequestParser;  // fills it
  struct Span {
    uint32_t off = 0;
    uint32_t len = 0;
  };
  struct Field {
    Span name;
    Span value;
  };
  absl::string_view View(Span s) const { return absl::string_view(head_).substr(s.off, s.len); }

  // The request line and header lines as received (from the small-block cache: most
  // heads are a few hundred bytes, made and freed once per request).
  std::basic_string<char, std::char_traits<char>, internal::SmallBlockAllocator<char>> head_;
  Span method_;
  Span target_;
  HttpVersion version_ = HttpVersion::kHttp11;
  bool keep_alive_ = true;
  bool chunked_ = false;
  absl::InlinedVector<Field, 8> headers_;
  std::string body_;
};

// The standard reason phrase of `status` ("Unknown" if none).
absl::string_view HttpReasonPhrase(int status);

class HttpResponse {
 public:
  explicit HttpResponse(int status = 200, HttpVersion version = HttpVersion::kHttp11)
      : status_(status), version_(version) {}

  int status() const { return status_; }
  HttpVersion version() const { return version_; }

  // Appends a header line. `name` must be a token and `value` free of control
  // characters other than HTAB (no CR/LF: no header injection); otherwise the response
  // is marked invalid and HttpServerCodec fails its write with InvalidArgument.
  void AddHeader(absl::string_view name, absl::string_view value);
  // False once a header that may not be sent was added.
  bool headers_valid() const { return headers_valid_; }
  // The header block as added ("Name: value\r\n" lines).
  const std::string& header_block() const { return headers_; }
  // The first value of header `name` (case-insensitive), or nullopt. Linear scan.
  std::optional<absl::string_view> Header(absl::string_view name) const;
  bool has_content_length() const { return has_content_length_; }
  // True if a "Connection: close" header was added.
  bool connection_close() const { return connection_close_; }
  bool has_connection() const { return has_connection_; }

  const std::string& body() const { return body_; }
  void set_body(std::string body) { body_ = std::move(body); }
  void set_body(absl::string_view body) { body_.assign(body.data(), body.size()); }
  void set_body(const char* body) { body_ = body; }

  // Chunked transfer coding: the head carries "Transfer-Encoding: chunked", body() (if
  // any) goes out as the first chunk; with end_stream the last chunk follows at once,
  // else the response ends with an HttpChunk whose last() is true.
  void set_chunked(bool chunked, bool end_stream = true) {
    chunked_ = chunked;
    end_stream_ = end_stream;
  }
  bool chunked() const { return chunked_; }
  bool end_stream() const { return end_stream_; }

 private:
  int status_;
  HttpVersion version_;
  bool chunked_ = false;
  bool end_stream_ = true;
  bool has_content_length_ = false;
  bool connection_close_ = false;
  bool has_connection_ = false;
  bool headers_valid_ = true;
  std::string headers_;
  std::string body_;
};

// A response shared by many writes, such as a cached reply: a Message holds it inline,
// so writing one copies nothing. HttpServerCodec encodes it without changing it; a
// handler that must change a shared response (HttpServerKeepAliveHandler adding
// "Connection: close") writes a changed copy instead. Immutable, so safe to share
// across threads.
using SharedHttpResponse = std::shared_ptr<const HttpResponse>;

// A piece of a chunked response body; `last` ends the response (its data, if any, is
// sent as a chunk before the terminating zero-length chunk).
struct HttpChunk {
  std::string data;
  bool last = false;
};

}  // namespace gyre

#endif  // GYRE_CODEC_HTTP_HTTP_MESSAGE_H_
