// ProgressivePromise<T>: a Promise<T> that also reports progress.
//
//   ProgressivePromise<void> upload = loop->NewProgressivePromise<void>();
//   upload.AddProgressListener([](const Future<void>&, int64_t done, int64_t total) {
//     Show(done, total);                      // on `loop`'s thread
//   });
//   upload.SetProgress(512, 4096);            // total < 0: unknown
//
// Progress listeners run on executor(): inline when SetProgress is called on its thread,
// otherwise as a task there (one task per SetProgress call that has listeners); each runs
// once per progress report, in the order added. A progress listener that throws is logged.
// Progress listeners are not completion listeners: use AddListener for completion.
//
// Thread safety: every method is thread-safe.
// Ownership: progress listeners live as long as the shared state.
#ifndef GYRE_CONCURRENT_PROGRESSIVE_PROMISE_H_
#define GYRE_CONCURRENT_PROGRESSIVE_PROMISE_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/internal/future_core.h"
#include "gyre/concurrent/promise.h"

namespace gyre {
namespace internal {

template <typename T>
class ProgressiveCore final : public FutureCore<T> {
 public:
  using ProgressListener = absl::AnyInvocable<void(const Future<T>&, int64_t, int64_t)>;

  explicit ProgressiveCore(EventExecutor* executor) : FutureCore<T>(executor) {}

  void AddProgressListener(ProgressListener listener) {
    std::lock_guard<std::mutex> lock(mu_);
    listeners_.push_back(std::make_unique<ProgressListener>(std::move(listener)));
  }

  // Notifies the progress listeners of (progress, total), on the executor.
  void Notify(int64_t progress, int64_t total) {
    Snapshot snapshot;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (listeners_.empty()) return;  // never touches the executor
      for (auto& l : listeners_) snapshot.push_back(l.get());
    }
    if (CanNotifyInline(this->executor())) {
      RunNotificationInline(nullptr, [&] { Run(snapshot, progress, total); });
      return;
    }
    this->AddRef();
    PostNotification(this->executor(), [this, snapshot = std::move(snapshot), progress, total] {
      RunNotificationInline(nullptr, [&] { Run(snapshot, progress, total); });
      this->Release();
    });
  }

 private:
  // Listener pointers are stable: listeners are only appended, and freed with the core.
  using Snapshot = absl::InlinedVector<ProgressListener*, 2>;

  void Run(const Snapshot& snapshot, int64_t progress, int64_t total) {
    this->WithHandle([&](const Future<T>& self) {
      for (ProgressListener* l : snapshot) {
        try {
          (*l)(self, progress, total);
        } catch (const std::exception& e) {
          LogListenerException(e.what());
        } catch (...) {
          LogListenerException("a non-std exception");
        }
      }
    });
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<ProgressListener>> listeners_;  // guarded by mu_
};

}  // namespace internal

template <typename T>
class ProgressivePromise : public Promise<T> {
 public:
  using ProgressListener = typename internal::ProgressiveCore<T>::ProgressListener;

  explicit ProgressivePromise(EventExecutor* executor = nullptr)
      : Promise<T>(internal::AdoptCoreTag{}, new internal::ProgressiveCore<T>(executor)) {}

  // Reports progress. `total < 0` means unknown (then `progress >= 0` is required);
  // otherwise 0 <= progress <= total is required. Returns InvalidArgument for other
  // values and FailedPrecondition once the promise is done; either way nobody is notified.
  absl::Status SetProgress(int64_t progress, int64_t total) {
    if (total < 0) {
      total = -1;
      if (progress < 0) {
        return absl::InvalidArgumentError(absl::StrCat("progress ", progress, " must be >= 0"));
      }
    } else if (progress < 0 || progress > total) {
      return absl::InvalidArgumentError(
          absl::StrCat("progress ", progress, " must be in [0, ", total, "]"));
    }
    if (this->IsDone()) return absl::FailedPreconditionError("promise already complete");
    progressive_core()->Notify(progress, total);
    return absl::OkStatus();
  }

  // As SetProgress; returns false instead of an error.
  bool TryProgress(int64_t progress, int64_t total) { return SetProgress(progress, total).ok(); }

  // Adds a listener called with (future, progress, total) for every later report.
  void AddProgressListener(ProgressListener listener) {
    progressive_core()->AddProgressListener(std::move(listener));
  }

 private:
  internal::ProgressiveCore<T>* progressive_core() const {
    return static_cast<internal::ProgressiveCore<T>*>(this->core());
  }
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_PROGRESSIVE_PROMISE_H_
