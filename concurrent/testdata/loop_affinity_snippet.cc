// Compiled by loop_affinity_analysis_test.sh with clang's thread-safety analysis:
// as is it must compile; with -DOFF_LOOP it must not (a loop-confined member touched
// by a function that never established it runs on the loop).
#include "gyre/concurrent/loop_affinity.h"

namespace {

class Loop {
 public:
  void OnLoop() {
    affinity_.AssertOnLoop();
    ++count_;
  }
  void Helper() ABSL_EXCLUSIVE_LOCKS_REQUIRED(affinity_) { ++count_; }
  void CallsHelper() {
    affinity_.AssertOnLoop();
    Helper();
  }
#ifdef OFF_LOOP
  void OffLoop() { ++count_; }
#endif

 private:
  gyre::LoopAffinity affinity_;
  int count_ ABSL_GUARDED_BY(affinity_) = 0;
};

}  // namespace

int main() {
  Loop loop;
  loop.OnLoop();
  loop.CallsHelper();
  return 0;
}
