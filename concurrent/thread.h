// Thread: a started thread, as a ThreadFactory (thread_factory.h) returns it.
//
//   absl::StatusOr<std::unique_ptr<Thread>> t = factory.NewThread([] { Work(); });
//   if (t.ok()) (*t)->Join();
//
// Thread safety: thread-compatible (one owner).
// Ownership: owns the OS thread.
// See docs/threading.md.
#ifndef GYRE_CONCURRENT_THREAD_H_
#define GYRE_CONCURRENT_THREAD_H_

#include <string>
#include <thread>

namespace gyre {

// A started thread. Join() waits for it; destroying a joinable Thread joins it (or,
// when destroyed on the thread itself, detaches it).
//
// Thread safety: thread-compatible (one owner).
// Ownership: owns the OS thread.
class Thread {
 public:
  Thread(std::thread thread, std::string name);
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  ~Thread();

  // Waits for the thread to finish. Does nothing if already joined, or when called on
  // the thread itself (which cannot wait for itself; it is detached instead).
  void Join();

  // Lets the thread run on unowned; Join() and the destructor then do nothing.
  void Detach() {
    if (thread_.joinable()) thread_.detach();
  }

  std::thread::id id() const { return id_; }
  // The name given by the factory (the OS name may be truncated to 15 characters).
  const std::string& name() const { return name_; }

 private:
  std::thread thread_;
  std::thread::id id_;
  std::string name_;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_THREAD_H_
