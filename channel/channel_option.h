// Channel options and the per-channel configuration that holds them.
//
//   bootstrap.Option(ChannelOption::kTcpNodelay, true)
//            .Option(ChannelOption::kWriteBufferHighWaterMark, 1 << 20);
//   channel->config().Set(ChannelOption::kAutoRead, false);
//
// Each option is typed (bool, int, or absl::Duration); Set validates the value and
// returns InvalidArgument for one out of range (negative buffer sizes, a low water mark
// above the high one, ...). Socket options are applied by the transport when the
// channel's socket exists; setting one later applies it at once (on the channel's loop).
//
// Thread safety: ChannelConfig is thread-safe; AutoRead and the water marks are read
// lock-free on the loop's hot paths.
#ifndef GYRE_CHANNEL_CHANNEL_OPTION_H_
#define GYRE_CHANNEL_CHANNEL_OPTION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/internal/mutex.h"

namespace gyre {

enum class ChannelOptionId {
  kTcpNodelay,
  kSoReuseaddr,
  kSoKeepalive,
  kSoRcvbuf,
  kSoSndbuf,
  kSoBacklog,
  kSoLinger,
  kConnectTimeout,
  kAutoRead,
  kWriteBufferHighWaterMark,
  kWriteBufferLowWaterMark,
  kMaxMessagesPerRead,
  kAllowHalfClosure,
};

template <typename T>
struct ChannelOptionKey {
  ChannelOptionId id;
  const char* name;
};

struct ChannelOption {
  static constexpr ChannelOptionKey<bool> kTcpNodelay{ChannelOptionId::kTcpNodelay, "TCP_NODELAY"};
  static constexpr ChannelOptionKey<bool> kSoReuseaddr{ChannelOptionId::kSoReuseaddr, "SO_REUSEADDR"};
  static constexpr ChannelOptionKey<bool> kSoKeepalive{ChannelOptionId::kSoKeepalive, "SO_KEEPALIVE"};
  static constexpr ChannelOptionKey<int> kSoRcvbuf{ChannelOptionId::kSoRcvbuf, "SO_RCVBUF"};
  static constexpr ChannelOptionKey<int> kSoSndbuf{ChannelOptionId::kSoSndbuf, "SO_SNDBUF"};
  static constexpr ChannelOptionKey<int> kSoBacklog{ChannelOptionId::kSoBacklog, "SO_BACKLOG"};
  // Seconds; negative = off (the default).
  static constexpr ChannelOptionKey<int> kSoLinger{ChannelOptionId::kSoLinger, "SO_LINGER"};
  static constexpr ChannelOptionKey<absl::Duration> kConnectTimeout{
      ChannelOptionId::kConnectTimeout, "CONNECT_TIMEOUT"};
  static constexpr ChannelOptionKey<bool> kAutoRead{ChannelOptionId::kAutoRead, "AUTO_READ"};
  static constexpr ChannelOptionKey<int> kWriteBufferHighWaterMark{
      ChannelOptionId::kWriteBufferHighWaterMark, "WRITE_BUFFER_HIGH_WATER_MARK"};
  static constexpr ChannelOptionKey<int> kWriteBufferLowWaterMark{
      ChannelOptionId::kWriteBufferLowWaterMark, "WRITE_BUFFER_LOW_WATER_MARK"};
  static constexpr ChannelOptionKey<int> kMaxMessagesPerRead{ChannelOptionId::kMaxMessagesPerRead,
                                                             "MAX_MESSAGES_PER_READ"};
  // On a peer's FIN: false (the default) closes the channel; true keeps it open for
  // writing and fires ChannelInputShutdownEvent (gyre/channel/channel_events.h).
  static constexpr ChannelOptionKey<bool> kAllowHalfClosure{ChannelOptionId::kAllowHalfClosure,
                                                            "ALLOW_HALF_CLOSURE"};
};

using ChannelOptionValue = std::variant<bool, int, absl::Duration>;

// One option with its value, type-erased (what bootstraps store).
struct ChannelOptionSetting {
  ChannelOptionId id;
  const char* name;
  ChannelOptionValue value;
};

class ChannelConfig {
 public:
  ChannelConfig() = default;
  ChannelConfig(const ChannelConfig&) = delete;
  ChannelConfig& operator=(const ChannelConfig&) = delete;

  // Validates and stores; then notifies the transport's applier (if any), which may
  // refuse it (e.g. setsockopt failed) with its status.
  template <typename T>
  absl::Status Set(ChannelOptionKey<T> key, T value) {
    return SetValue(ChannelOptionSetting{key.id, key.name, ChannelOptionValue(value)});
  }
  absl::Status SetValue(const ChannelOptionSetting& setting);

  // The value, or nullopt if never set (the transport's default applies then).
  template <typename T>
  std::optional<T> Get(ChannelOptionKey<T> key) const {
    std::optional<ChannelOptionValue> v = GetValue(key.id);
    if (!v.has_value() || !std::holds_alternative<T>(*v)) return std::nullopt;
    return std::get<T>(*v);
  }
  std::optional<ChannelOptionValue> GetValue(ChannelOptionId id) const;

  // Hot-path accessors.
  bool auto_read() const { return auto_read_.load(std::memory_order_relaxed); }
  int64_t high_water_mark() const { return high_water_.load(std::memory_order_relaxed); }
  int64_t low_water_mark() const { return low_water_.load(std::memory_order_relaxed); }
  int max_messages_per_read() const { return max_messages_per_read_.load(std::memory_order_relaxed); }
  bool allow_half_closure() const { return allow_half_closure_.load(std::memory_order_relaxed); }
  absl::Duration connect_timeout() const;

  // The transport installs this to apply socket options (called after validation, with
  // no lock held). Returns the applier's status.
  void SetApplier(absl::AnyInvocable<absl::Status(const ChannelOptionSetting&)> applier);
  // Every setting made so far, in order (for a transport applying them to a new socket).
  std::vector<ChannelOptionSetting> Settings() const;
  // Called when AUTO_READ changes to true (the channel starts reading).
  void SetAutoReadListener(absl::AnyInvocable<void(bool)> listener);

  static constexpr int64_t kDefaultHighWaterMark = 64 * 1024;
  static constexpr int64_t kDefaultLowWaterMark = 32 * 1024;

 private:
  mutable internal::Mutex mu_;
  std::vector<ChannelOptionSetting> settings_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<absl::AnyInvocable<absl::Status(const ChannelOptionSetting&)>> applier_
      ABSL_GUARDED_BY(mu_);
  std::shared_ptr<absl::AnyInvocable<void(bool)>> auto_read_listener_ ABSL_GUARDED_BY(mu_);
  // Relaxed: independent settings, read as hints by the loop; changes are also applied
  // through the loop where ordering matters.
  std::atomic<bool> auto_read_{true};
  std::atomic<int64_t> high_water_{kDefaultHighWaterMark};
  std::atomic<int64_t> low_water_{kDefaultLowWaterMark};
  std::atomic<int> max_messages_per_read_{16};
  std::atomic<bool> allow_half_closure_{false};
  std::atomic<int64_t> connect_timeout_ms_{30000};
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_OPTION_H_
