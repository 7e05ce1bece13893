// HttpRequestParser: an incremental HTTP/1.1 request parser (RFC 9112) over a byte span.
// It is the part of HttpServerCodec that knows the grammar, usable (and fuzzed) on its
// own: it takes bytes, never reads past them, never allocates beyond the limits, and
// reports every bad input as an HTTP status to answer with.
//
//   HttpRequestParser parser;
//   size_t used = 0;
//   switch (parser.Parse(bytes, &used)) {      // `used` bytes of `bytes` were consumed
//     case HttpRequestParser::kNeedMore: ...   // present the unconsumed bytes again, plus more
//     case HttpRequestParser::kExpectContinue: // head done, "Expect: 100-continue"; call again
//     case HttpRequestParser::kRequest: HttpRequest r = parser.TakeRequest(); ...
//     case HttpRequestParser::kError: parser.error_status();  // 400, 413, 414, 431, 501, 505
//   }
//
// The contract on input: bytes that were not consumed must be presented again, at the
// start of the next call's span, followed by new ones (a ByteToMessageDecoder's
// cumulation does exactly that). The request head is kept unconsumed until it is
// complete, so it is always contiguous; bodies are consumed (copied into the request) as
// they arrive. Each byte of a head is scanned once however the input is split.
//
// What is accepted (and what is answered instead):
//   - request-line `method SP request-target SP HTTP-version CRLF`, single spaces, method
//     a token, target visible ASCII; one or more empty lines before it are skipped
//     (RFC 9112 2.2). A longer line than `max_request_line` -> 414. Bad syntax -> 400.
//     HTTP/1.x with x >= 1 is served as 1.1, HTTP/1.0 as 1.0, other majors -> 505.
//   - header fields `name ":" OWS value OWS CRLF`; whitespace before the colon, obs-fold
//     (a line starting with SP/HTAB), control characters in a value -> 400. More than
//     `max_header_bytes` of header lines, or more than `max_headers` fields -> 431.
//   - lines end with CRLF only: a bare LF or CR -> 400 (no request smuggling through
//     lenient line endings).
//   - HTTP/1.1 needs exactly one Host field -> else 400.
//   - Content-Length: digits only, one field; a list, a duplicate (even equal), a
//     non-digit -> 400; above `max_body` -> 413 at once (the body is not read).
//   - Transfer-Encoding: only `chunked`, as the only coding; with Content-Length, in an
//     HTTP/1.0 request, or with chunked not last -> 400; another coding -> 501.
//     Chunk sizes in hex (at most 16 digits, else 400), chunk extensions skipped (a
//     chunk line longer than `max_chunk_line` -> 400), a body totalling more than
//     `max_body` -> 413, trailer fields checked like header fields and dropped.
//   - Expect: 100-continue -> kExpectContinue once the head is in (for the codec to send
//     "100 Continue"); another expectation -> 417.
// After kError the parser stays failed: every later call consumes all it is given.
//
// Thread safety: thread-compatible (one connection's state). Ownership: holds no
// pointer into the caller's bytes between calls.
#ifndef GYRE_CODEC_HTTP_HTTP_REQUEST_PARSER_H_
#define GYRE_CODEC_HTTP_HTTP_REQUEST_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "gyre/codec/http/http_message.h"

namespace gyre {

// Sizes a request may not exceed. Each must be positive (HttpServerCodec::Create
// validates them).
struct HttpParserLimits {
  size_t max_request_line = 8192;  // bytes of the request line, CRLF excluded -> 414
  size_t max_header_bytes = 8192;  // bytes of all header lines with their CRLFs -> 431
  size_t max_headers = 100;        // header fields -> 431
  size_t max_body = 1 << 20;       // body bytes (Content-Length or all chunks) -> 413
  size_t max_chunk_line = 1024;    // a chunk-size line with its extensions -> 400
};

class HttpRequestParser {
 public:
  enum Result { kNeedMore, kExpectContinue, kRequest, kError };

  explicit HttpRequestParser(HttpParserLimits limits = {}) : limits_(limits) {}

  // Parses from the start of `in`; sets *consumed to the bytes used (possibly 0).
  Result Parse(absl::string_view in, size_t* consumed);

  // The request completed by the last kRequest (moved out).
  HttpRequest TakeRequest() { return std::move(request_); }

  // After kError: the status to answer with and why.
  int error_status() const { return error_status_; }
  const std::string& error_detail() const { return error_detail_; }
  bool failed() const { return state_ == State::kFailed; }
  // True between the first byte of a request and its completion.
  bool in_request() const { return state_ != State::kStart; }

  const HttpParserLimits& limits() const { return limits_; }

 private:
  enum class State : uint8_t { kStart, kHead, kBody, kChunkSize, kChunkData, kChunkCrlf,
                               kTrailer, kFailed };

  Result Fail(int status, absl::string_view detail, absl::string_view in, size_t* consumed);
  // Parses a complete request line / header line (without CRLF) of the head being read;
  // the CR that ended the line must follow `end` in `head` (it stops the scans).
  // Returns 0 or the status to fail with (error_detail_ set).
  int ParseRequestLine(absl::string_view head, size_t begin, size_t end);
  int ParseHeaderLine(absl::string_view head, size_t begin, size_t end);
  // Checks a field line (header or trailer), which must be followed in memory by the CR
  // that ended it; sets name/value offsets relative to `line`.
  int CheckField(absl::string_view line, size_t* name_len, size_t* value_off,
                 size_t* value_len);
  // Interprets the special fields once the head is complete; 0 or the status.
  int FinishHead();
  // Readies for the next request.
  void StartNext();

  HttpParserLimits limits_;
  State state_ = State::kStart;
  // Head being read (offsets from the start of the unconsumed input).
  size_t scan_ = 0;        // bytes of the head already scanned
  size_t line_start_ = 0;  // start of the line being scanned
  size_t header_bytes_ = 0;
  bool seen_request_line_ = false;
  // Special fields seen in the head.
  int content_length_fields_ = 0;
  int host_fields_ = 0;
  uint64_t content_length_ = 0;
  bool te_seen_ = false;
  bool te_chunked_seen_ = false;
  bool te_chunked_last_ = false;
  bool te_chunked_twice_ = false;
  bool te_other_ = false;
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;
  bool expect_continue_ = false;
  bool expect_other_ = false;
  // Body being read.
  uint64_t remaining_ = 0;  // of the Content-Length body or of the current chunk
  size_t trailer_bytes_ = 0;

  HttpRequest request_;
  int error_status_ = 0;
  std::string error_detail_;
};

}  // namespace gyre

#endif  // GYRE_CODEC_HTTP_HTTP_REQUEST_PARSER_H_
