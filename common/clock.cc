#include "common/clock.h"

#include <chrono>

namespace neardup {
namespace {

class RealClock : public Clock {
 public:
  int64_t NowMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

const Clock* SystemClock() {
  static const RealClock clock;
  return &clock;
}

}  // namespace neardup
