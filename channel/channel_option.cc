#include "gyre/channel/channel_option.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gyre {
namespace {

absl::Status Invalid(const ChannelOptionSetting& s, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("channel option ", s.name, ": ", why));
}

}  // namespace

absl::Status ChannelConfig::SetValue(const ChannelOptionSetting& setting) {
  const ChannelOptionValue& v = setting.value;
  auto as_int = [&]() -> const int* { return std::get_if<int>(&v); };
  switch (setting.id) {
    case ChannelOptionId::kTcpNodelay:
    case ChannelOptionId::kSoReuseaddr:
    case ChannelOptionId::kSoKeepalive:
    case ChannelOptionId::kAutoRead:
    case ChannelOptionId::kAllowHalfClosure:
      if (!std::holds_alternative<bool>(v)) return Invalid(setting, "needs a bool");
      break;
    case ChannelOptionId::kSoRcvbuf:
    case ChannelOptionId::kSoSndbuf:
      if (as_int() == nullptr || *as_int() <= 0) return Invalid(setting, "needs a positive size");
      break;
    case ChannelOptionId::kSoBacklog:
      if (as_int() == nullptr || *as_int() <= 0) return Invalid(setting, "needs a positive backlog");
      break;
    case ChannelOptionId::kSoLinger:
      if (as_int() == nullptr) return Invalid(setting, "needs seconds (negative: off)");
      break;
    case ChannelOptionId::kMaxMessagesPerRead:
      if (as_int() == nullptr || *as_int() <= 0) return Invalid(setting, "needs a positive count");
      break;
    case ChannelOptionId::kConnectTimeout: {
      const absl::Duration* d = std::get_if<absl::Duration>(&v);
      if (d == nullptr || *d < absl::ZeroDuration()) return Invalid(setting, "needs a duration >= 0");
      break;
    }
    case ChannelOptionId::kWriteBufferHighWaterMark:
      if (as_int() == nullptr || *as_int() <= 0) return Invalid(setting, "needs a positive size");
      if (*as_int() < low_water_.load(std::memory_order_relaxed)) {
        return Invalid(setting, absl::StrCat("below the low water mark ",
                                             low_water_.load(std::memory_order_relaxed)));
      }
      break;
    case ChannelOptionId::kWriteBufferLowWaterMark:
      if (as_int() == nullptr || *as_int() < 0) return Invalid(setting, "needs a size >= 0");
      if (*as_int() > high_water_.load(std::memory_order_relaxed)) {
        return Invalid(setting, absl::StrCat("above the high water mark ",
                                             high_water_.load(std::memory_order_relaxed)));
      }
      break;
  }
  std::shared_ptr<absl::AnyInvocable<absl::Status(const ChannelOptionSetting&)>> applier;
  std::shared_ptr<absl::AnyInvocable<void(bool)>> auto_read_listener;
  bool auto_read_turned_on = false;
  {
    internal::MutexLock lock(&mu_);
    bool replaced = false;
    for (ChannelOptionSetting& s : settings_) {
      if (s.id == setting.id) {
        s = setting;
        replaced = true;
      }
    }
    if (!replaced) settings_.push_back(setting);
    switch (setting.id) {
      case ChannelOptionId::kAutoRead:
        auto_read_turned_on = std::get<bool>(v) && !auto_read_.exchange(true, std::memory_order_relaxed);
        if (!std::get<bool>(v)) auto_read_.store(false, std::memory_order_relaxed);
        break;
      case ChannelOptionId::kWriteBufferHighWaterMark:
        high_water_.store(*as_int(), std::memory_order_relaxed);
        break;
      case ChannelOptionId::kWriteBufferLowWaterMark:
        low_water_.store(*as_int(), std::memory_order_relaxed);
        break;
      case ChannelOptionId::kAllowHalfClosure:
        allow_half_closure_.store(std::get<bool>(v), std::memory_order_relaxed);
        break;
      case ChannelOptionId::kMaxMessagesPerRead:
        max_messages_per_read_.store(*as_int(), std::memory_order_relaxed);
        break;
      case ChannelOptionId::kConnectTimeout:
        connect_timeout_ms_.store(absl::ToInt64Milliseconds(std::get<absl::Duration>(v)),
                                  std::memory_order_relaxed);
        break;
      default:
        break;
    }
    applier = applier_;
    auto_read_listener = auto_read_listener_;
  }
  if (auto_read_turned_on && auto_read_listener != nullptr) (*auto_read_listener)(true);
  if (applier != nullptr) return (*applier)(setting);
  return absl::OkStatus();
}

std::optional<ChannelOptionValue> ChannelConfig::GetValue(ChannelOptionId id) const {
  internal::MutexLock lock(&mu_);
  for (const ChannelOptionSetting& s : settings_) {
    if (s.id == id) return s.value;
  }
  return std::nullopt;
}

absl::Duration ChannelConfig::connect_timeout() const {
  return absl::Milliseconds(connect_timeout_ms_.load(std::memory_order_relaxed));
}

void ChannelConfig::SetApplier(
    absl::AnyInvocable<absl::Status(const ChannelOptionSetting&)> applier) {
  auto shared =
      std::make_shared<absl::AnyInvocable<absl::Status(const ChannelOptionSetting&)>>(
          std::move(applier));
  internal::MutexLock lock(&mu_);
  applier_ = std::move(shared);
}

std::vector<ChannelOptionSetting> ChannelConfig::Settings() const {
  internal::MutexLock lock(&mu_);
  return settings_;
}

void ChannelConfig::SetAutoReadListener(absl::AnyInvocable<void(bool)> listener) {
  auto shared = std::make_shared<absl::AnyInvocable<void(bool)>>(std::move(listener));
  internal::MutexLock lock(&mu_);
  auto_read_listener_ = std::move(shared);
}

}  // namespace gyre
