#include "gyre/codec/http/http_server_codec.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_future.h"
#include "gyre/codec/codec_status.h"

namespace gyre {
namespace {

// What a final response to a request does to the connection (RFC 9112 9.3), as
// HttpServerKeepAliveHandler and HttpServerCodecOptions::keep_alive decide it: whether
// the channel closes after it, and the Connection value to add ("" for none), also as
// the whole header line the codec appends while encoding.
struct Persistence {
  bool close = false;
  absl::string_view connection;
  absl::string_view line;
};
Persistence DecidePersistence(bool request_keep_alive, bool http10, const HttpResponse& resp) {
  Persistence p;
  p.close = !request_keep_alive || resp.connection_close();
  if (!resp.has_connection()) {
    if (p.close) {
      p.connection = "close";
      p.line = "Connection: close\r\n";
    } else if (http10) {
      p.connection = "keep-alive";
      p.line = "Connection: keep-alive\r\n";
    }
  }
  return p;
}

// Closes the channel once the write of `promise` completes (whatever its outcome); the
// void promise becomes a real one for it.
void CloseAfterWrite(ChannelHandlerContext& ctx, ChannelPromise& promise) {
  promise = ctx.Unvoid(std::move(promise));
  promise.AddListener(
      [ch = ctx.channel().shared_from_this()](const ChannelFuture&) { ch->Close(); });
}

constexpr size_t kMaxLimit = size_t{1} << 30;
constexpr absl::string_view kCrlf = "\r\n";
constexpr absl::string_view kLastChunk = "0\r\n\r\n";
// The first buffer of a batch of responses: room for a pipeline of small ones.
constexpr size_t kBatchCapacity = 4096;

// Fills the writable bytes of a buffer sized beforehand with plain copies, then
// publishes them with one SetWriterIndex. Overflowing the reserved room (a sizing bug)
// is reported by ok(), never written past.
class Appender {
 public:
  explicit Appender(ByteBuf& buf) : buf_(buf) {
    absl::Span<uint8_t> room = buf.WritableSpan();
    p_ = reinterpret_cast<char*>(room.data());
    end_ = p_ + room.size();
  }
  Appender& operator<<(absl::string_view s) {
    if (static_cast<size_t>(end_ - p_) < s.size()) {
      ok_ = false;
    } else if (ok_ && !s.empty()) {
      std::memcpy(p_, s.data(), s.size());
      p_ += s.size();
      written_ += s.size();
    }
    return *this;
  }
  // Bytes appended so far (published by Finish).
  size_t written() const { return written_; }
  // Publishes what was written; false if anything did not fit.
  bool Finish() {
    return ok_ && buf_.SetWriterIndex(buf_.writer_index() + written_).ok();
  }

 private:
  ByteBuf& buf_;
  char* p_ = nullptr;
  char* end_ = nullptr;
  size_t written_ = 0;
  bool ok_ = true;
};

absl::string_view VersionText(HttpVersion v) {
  return v == HttpVersion::kHttp10 ? "HTTP/1.0 " : "HTTP/1.1 ";
}

// `n` in decimal, written at the end of `buf` (20 bytes).
absl::string_view Decimal(uint64_t n, char* buf) {
  char* end = buf + 20;
  char* p = end;
  do {
    *--p = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  return absl::string_view(p, static_cast<size_t>(end - p));
}

// Lower-case hex of n into buf (at least 16 bytes); returns the digits.
absl::string_view Hex(uint64_t n, char* buf) {
  char* end = buf + 16;
  char* p = end;
  do {
    *--p = "0123456789abcdef"[n & 15];
    n >>= 4;
  } while (n != 0);
  return absl::string_view(p, static_cast<size_t>(end - p));
}

}  // namespace

absl::StatusOr<std::shared_ptr<HttpServerCodec>> HttpServerCodec::Create(
    HttpServerCodecOptions options) {
  const HttpParserLimits& l = options.limits;
  const std::pair<const char*, size_t> limits[] = {
      {"max_request_line", l.max_request_line}, {"max_header_bytes", l.max_header_bytes},
      {"max_headers", l.max_headers},           {"max_body", l.max_body},
      {"max_chunk_line", l.max_chunk_line}};
  for (const auto& [name, value] : limits) {
    if (value == 0 || value > kMaxLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("HttpServerCodec: ", name, " must be in [1, 2^30], got ", value));
    }
  }
  return std::make_shared<HttpServerCodec>(options);
}

HttpServerCodec::HttpServerCodec(HttpServerCodecOptions options)
    : options_(options),
      alloc_(options.alloc != nullptr ? options.alloc : PooledByteBufAllocator::Default()),
      parser_(options.limits) {}

absl::Status HttpServerCodec::Decode(ChannelHandlerContext& ctx, ByteBuf& in,
                                     DecoderOutput& out) {
  if (discarding_ || !in.IsReadable()) {
    return in.IsReadable() ? in.Skip(in.ReadableBytes()) : absl::OkStatus();
  }
  size_t used = 0;
  const HttpRequestParser::Result r = parser_.Parse(in.ReadableView(), &used);
  absl::Status skipped = in.Skip(used);
  if (!skipped.ok()) return skipped;
  switch (r) {
    case HttpRequestParser::kNeedMore:
      return absl::OkStatus();
    case HttpRequestParser::kExpectContinue:
      if (options_.send_continue && requests_.empty()) {
        WriteBatch(ctx);  // the answers to earlier requests go first
        absl::StatusOr<ByteBuf> buf = alloc_->CopiedBuffer("HTTP/1.1 100 Continue\r\n\r\n");
        if (!buf.ok()) return buf.status();
        ctx.WriteAndFlush(*std::move(buf));
      }
      return absl::OkStatus();
    case HttpRequestParser::kRequest: {
      HttpRequest req = parser_.TakeRequest();
      requests_.push_back(
          Pending{req.method() == "HEAD", req.keep_alive(), req.version() == HttpVersion::kHttp10});
      // RFC 9112 9.6: no further request is processed on a connection that will close.
      if (!req.keep_alive()) discarding_ = true;
      out.push_back(std::move(req));
      return absl::OkStatus();
    }
    case HttpRequestParser::kError:
      break;
  }
  discarding_ = true;
  if (requests_.empty()) {
    SendErrorResponse(ctx);
  } else {
    error_pending_ = true;
  }
  const int status = parser_.error_status();
  const std::string detail =
      absl::StrCat("HTTP ", status, " ", HttpReasonPhrase(status), ": ", parser_.error_detail());
  return status == 413 || status == 414 || status == 431 ? TooLongFrameError(detail)
                                                         : CorruptedFrameError(detail);
}

absl::Status HttpServerCodec::DecodeLast(ChannelHandlerContext& ctx, ByteBuf& in,
                                         DecoderOutput& out) {
  if (in.IsReadable()) {
    absl::Status s = Decode(ctx, in, out);
    if (!s.ok()) return s;
  }
  if (!discarding_ && parser_.in_request()) {
    return CorruptedFrameError("connection closed before the HTTP request was complete");
  }
  return absl::OkStatus();
}

void HttpServerCodec::SendErrorResponse(ChannelHandlerContext& ctx) {
  WriteBatch(ctx);  // the answers before it go first
  const int status = parser_.error_status();
  const std::string body =
      absl::StrCat(HttpReasonPhrase(status), ": ", parser_.error_detail(), "\n");
  const std::string text = absl::StrCat(
      "HTTP/1.1 ", status, " ", HttpReasonPhrase(status),
      "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", body.size(),
      "\r\nConnection: close\r\n\r\n", body);
  std::shared_ptr<Channel> ch = ctx.channel().shared_from_this();
  absl::StatusOr<ByteBuf> buf = alloc_->CopiedBuffer(text);
  if (!buf.ok()) {
    ch->Close();
    return;
  }
  ctx.WriteAndFlush(*std::move(buf)).AddListener([ch](const ChannelFuture&) { ch->Close(); });
}

void HttpServerCodec::Answered(ChannelHandlerContext& ctx) {
  if (!requests_.empty()) requests_.pop_front();
  if (error_pending_ && requests_.empty()) {
    error_pending_ = false;
    WriteBatch(ctx);
    ctx.Flush();
    SendErrorResponse(ctx);
  }
}

void HttpServerCodec::ChannelRead(ChannelHandlerContext& ctx, Message msg) {
  decoding_ = true;
  ByteToMessageDecoder::ChannelRead(ctx, std::move(msg));
  decoding_ = false;
  WriteBatch(ctx);
}

void HttpServerCodec::WriteBatch(ChannelHandlerContext& ctx) {
  if (!batch_) return;
  ByteBuf batch = std::move(batch_);
  if (batch_promises_.empty()) {  // only a response that failed to encode started it
    ctx.Write(std::move(batch));
    return;
  }
  // A write whose writer dropped its future is done with here: no one could see it
  // complete. Only the rest wait for the batch's write. The first is always kept: it
  // can be the batch's own promise (the transport releases it as cheaply when it turns
  // out unobserved), so a batch of one response makes no promise of its own.
  size_t kept = 1;
  for (size_t i = 1; i < batch_promises_.size(); ++i) {
    if (batch_promises_[i].ResetIfUnobserved()) continue;
    if (kept != i) batch_promises_[kept] = std::move(batch_promises_[i]);
    ++kept;
  }
  batch_promises_.erase(batch_promises_.begin() + static_cast<ptrdiff_t>(kept),
                        batch_promises_.end());
  if (kept == 1) {
    ChannelPromise promise = std::move(batch_promises_.front());
    batch_promises_.clear();
    ctx.Write(std::move(batch), std::move(promise));
    return;
  }
  ChannelFuture written = ctx.Write(std::move(batch));
  written.AddListener([promises = std::move(batch_promises_),
                       channel = ctx.channel().weak_from_this()](const ChannelFuture& f) mutable {
    for (ChannelPromise& p : promises) {
      if (f.IsSuccess()) {
        p.TrySuccessAndReset();
        continue;
      }
      absl::Status cause =
          f.IsCancelled() ? absl::CancelledError("the batched write was cancelled") : f.Cause();
      if (p.valid()) {
        p.TryFailure(std::move(cause));
      } else if (std::shared_ptr<Channel> ch = channel.lock()) {
        ch->FailWrite(p, std::move(cause));  // the void promise: ExceptionCaught
      }
    }
  });
  batch_promises_.clear();
}

void HttpServerCodec::Flush(ChannelHandlerContext& ctx) {
  WriteBatch(ctx);
  ctx.Flush();
}

void HttpServerCodec::Disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) {
  WriteBatch(ctx);
  ctx.Disconnect(std::move(promise));
}

void HttpServerCodec::Close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  WriteBatch(ctx);
  ctx.Close(std::move(promise));
}

void HttpServerCodec::Deregister(ChannelHandlerContext& ctx, ChannelPromise promise) {
  WriteBatch(ctx);
  ctx.Deregister(std::move(promise));
}

void HttpServerCodec::HandlerRemovedInternal(ChannelHandlerContext& ctx) { WriteBatch(ctx); }

void HttpServerCodec::Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  if (const HttpResponse* resp = msg.Get<HttpResponse>()) {
    WriteResponse(ctx, *resp, nullptr, std::move(promise));
    return;
  }
  if (const SharedHttpResponse* shared = msg.Get<SharedHttpResponse>()) {
    if (*shared == nullptr) {
      ctx.channel().FailWrite(promise,
                              absl::InvalidArgumentError("a null SharedHttpResponse was written"));
      return;
    }
    WriteResponse(ctx, **shared, shared, std::move(promise));
    return;
  }
  if (HttpChunk* chunk = msg.Get<HttpChunk>()) {
    WriteChunk(ctx, *chunk, std::move(promise));
    return;
  }
  WriteBatch(ctx);
  ctx.Write(std::move(msg), std::move(promise));
}

void HttpServerCodec::WriteResponse(ChannelHandlerContext& ctx, const HttpResponse& resp,
                                    const SharedHttpResponse* shared, ChannelPromise promise) {
  const int status = resp.status();
  if (status < 100 || status > 999) {
    ctx.channel().FailWrite(promise, absl::InvalidArgumentError(
        absl::StrCat("HttpResponse status ", status, " is not a three-digit code")));
    return;
  }
  if (!resp.headers_valid()) {
    ctx.channel().FailWrite(promise, absl::InvalidArgumentError(
        "HttpResponse has a header that may not be sent (a field name that is not a token, "
        "or a control character in a value)"));
    return;
  }
  if (in_chunked_response_) {
    ctx.channel().FailWrite(promise, absl::FailedPreconditionError(
        "HttpResponse written before the chunked response in progress ended"));
    return;
  }
  const bool informational = status < 200;
  const Pending answered = !informational && !requests_.empty() ? requests_.front() : Pending{};
  const bool head = answered.head;
  const bool bodiless = informational || status == 204 || status == 304;
  const bool chunked = resp.chunked() && !bodiless;
  const bool send_body = !head && !bodiless && !resp.body().empty();
  // Persistence (options_.keep_alive): the Connection line appended to the headers.
  bool close = false;
  absl::string_view connection;
  if (options_.keep_alive && !informational) {
    const Persistence p = DecidePersistence(answered.keep_alive, answered.http10, resp);
    close = p.close;
    connection = p.line;
  }
  // A shared response is immutable: written again (a cached reply), its bytes are those
  // of its last encoding, which `encoded_shared_` keeps alive.
  const bool cacheable = shared != nullptr && !chunked;
  const bool hit = cacheable && *shared == encoded_shared_ && head == encoded_for_head_ &&
                   connection == encoded_connection_;
  const absl::string_view reason = hit ? absl::string_view() : HttpReasonPhrase(status);
  char status_digits[3] = {static_cast<char>('0' + status / 100),
                           static_cast<char>('0' + status / 10 % 10),
                           static_cast<char>('0' + status % 10)};
  char length_digits[20];
  const absl::string_view length =
      hit || chunked ? absl::string_view() : Decimal(resp.body().size(), length_digits);
  char hex[16];
  const absl::string_view body_size_hex =
      chunked && send_body ? Hex(resp.body().size(), hex) : absl::string_view();

  size_t size =
      9 + 3 + 1 + reason.size() + 2 + resp.header_block().size() + connection.size() + 2;
  if (hit) {
    size = encoded_.size();
  } else if (chunked) {
    size += 28 + (send_body ? body_size_hex.size() + 4 + resp.body().size() : 0) +
            kLastChunk.size();
  } else {
    size += 18 + length.size() + (send_body ? resp.body().size() : 0);
  }
  // A complete response written while a read is decoded joins the batch; anything else
  // gets its own buffer (after the batch, to keep the order).
  const bool batch = decoding_ && (!chunked || resp.end_stream());
  absl::StatusOr<ByteBuf> own;
  if (batch) {
    absl::Status room = batch_ ? batch_.EnsureWritable(size)
                               : (own = alloc_->Buffer(std::max(size, kBatchCapacity))).status();
    if (!room.ok()) {
      ctx.channel().FailWrite(promise, room);
      return;
    }
    if (!batch_) batch_ = *std::move(own);
  } else {
    WriteBatch(ctx);
    own = alloc_->Buffer(size);
    if (!own.ok()) {
      ctx.channel().FailWrite(promise, own.status());
      return;
    }
  }
  ByteBuf& target = batch ? batch_ : *own;
  Appender out(target);
  bool ends = true;
  if (hit) {
    out << encoded_;
  } else if (chunked) {
    out << VersionText(resp.version()) << absl::string_view(status_digits, 3) << " " << reason
        << kCrlf << resp.header_block() << connection;
    out << "Transfer-Encoding: chunked\r\n\r\n";
    if (send_body) out << body_size_hex << kCrlf << resp.body() << kCrlf;
    if (resp.end_stream()) {
      if (!head) out << kLastChunk;
    } else {
      ends = false;
      in_chunked_response_ = true;
      chunked_response_to_head_ = head;
    }
  } else {
    out << VersionText(resp.version()) << absl::string_view(status_digits, 3) << " " << reason
        << kCrlf << resp.header_block() << connection;
    if (!resp.has_content_length() && !bodiless) {
      out << "Content-Length: " << length << kCrlf;
    }
    out << kCrlf;
    if (send_body) out << resp.body();
  }
  const size_t written = out.written();
  if (!out.Finish()) {
    in_chunked_response_ = false;
    ctx.channel().FailWrite(promise,
                            absl::InternalError("HttpServerCodec: response larger than sized"));
    return;
  }
  if (cacheable && !hit) {
    const absl::string_view all = target.ReadableView();
    const absl::string_view mine = all.substr(all.size() - written);
    encoded_.assign(mine.data(), mine.size());
    encoded_shared_ = *shared;
    encoded_for_head_ = head;
    encoded_connection_ = connection;
  }
  if (close) {
    if (ends) {
      CloseAfterWrite(ctx, promise);
    } else {
      close_after_chunks_ = true;
    }
  }
  if (batch) {
    batch_promises_.push_back(std::move(promise));
    // A void promise goes first (see batch_promises_).
    if (!batch_promises_.back().valid() && batch_promises_.front().valid()) {
      std::swap(batch_promises_.front(), batch_promises_.back());
    }
  } else {
    ctx.Write(*std::move(own), std::move(promise));
  }
  if (!informational && ends) Answered(ctx);
}

void HttpServerCodec::WriteChunk(ChannelHandlerContext& ctx, HttpChunk& chunk,
                                 ChannelPromise promise) {
  if (!in_chunked_response_) {
    ctx.channel().FailWrite(promise, absl::FailedPreconditionError(
        "HttpChunk written without a chunked HttpResponse in progress"));
    return;
  }
  WriteBatch(ctx);
  const bool send = !chunked_response_to_head_;
  char hex[16];
  const absl::string_view size_hex = Hex(chunk.data.size(), hex);
  const size_t size = send ? size_hex.size() + 4 + chunk.data.size() + kLastChunk.size() : 0;
  absl::StatusOr<ByteBuf> buf = alloc_->Buffer(size);
  if (!buf.ok()) {
    ctx.channel().FailWrite(promise, buf.status());
    return;
  }
  Appender out(*buf);
  if (send && !chunk.data.empty()) out << size_hex << kCrlf << chunk.data << kCrlf;
  if (send && chunk.last) out << kLastChunk;
  if (!out.Finish()) {
    ctx.channel().FailWrite(promise,
                            absl::InternalError("HttpServerCodec: chunk larger than sized"));
    return;
  }
  if (chunk.last && close_after_chunks_) CloseAfterWrite(ctx, promise);
  ctx.Write(*std::move(buf), std::move(promise));
  if (chunk.last) {
    in_chunked_response_ = false;
    chunked_response_to_head_ = false;
    close_after_chunks_ = false;
    Answered(ctx);
  }
}

// ---------------------------------------------------------------------------------
// HttpServerKeepAliveHandler

void HttpServerKeepAliveHandler::ChannelRead(ChannelHandlerContext& ctx, Message msg) {
  if (const HttpRequest* req = msg.Get<HttpRequest>()) {
    requests_.push_back(Pending{req->keep_alive(), req->version() == HttpVersion::kHttp10});
  }
  ctx.FireChannelRead(std::move(msg));
}

void HttpServerKeepAliveHandler::Write(ChannelHandlerContext& ctx, Message msg,
                                       ChannelPromise promise) {
  HttpResponse* own = msg.Get<HttpResponse>();
  const SharedHttpResponse* shared = own == nullptr ? msg.Get<SharedHttpResponse>() : nullptr;
  const HttpResponse* resp = own != nullptr ? own : shared != nullptr ? shared->get() : nullptr;
  if (resp != nullptr) {
    if (resp->status() >= 200 && !in_chunked_response_) {
      Pending p;
      if (!requests_.empty()) {
        p = requests_.front();
        requests_.pop_front();
      }
      const Persistence decided = DecidePersistence(p.keep_alive, p.http10, *resp);
      const bool close = decided.close;
      if (!decided.connection.empty()) {
        if (own == nullptr) {
          // A shared response is never changed: write a changed copy.
          msg = HttpResponse(*resp);
          own = msg.Get<HttpResponse>();
          resp = own;
        }
        own->AddHeader("Connection", decided.connection);
      }
      if (resp->chunked() && !resp->end_stream()) {
        in_chunked_response_ = true;
        close_after_chunks_ = close;
      } else if (close) {
        CloseAfterWrite(ctx, promise);
      }
    }
  } else if (const HttpChunk* chunk = msg.Get<HttpChunk>()) {
    if (chunk->last && in_chunked_response_) {
      in_chunked_response_ = false;
      if (close_after_chunks_) CloseAfterWrite(ctx, promise);
      close_after_chunks_ = false;
    }
  }
  ctx.Write(std::move(msg), std::move(promise));
}

}  // namespace gyre
