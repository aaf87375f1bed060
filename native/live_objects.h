// Counters of what the addon owns and has not released. Every feature bumps the counter for
// what it acquires and drops it when released; tests end with all of them back at zero.
// Atomic because worker threads (benchmarks, echo servers) update them too.
#pragma once
#include <atomic>
#include <cstdint>

namespace iolab {

enum class Live : int {
  kRings,          // Ring instances not yet destroyed
  kRingOps,        // io_uring ops submitted/queued whose completion has not been handled
  kHeldBuffers,    // JS buffer references held on behalf of in-flight native work
  kMappings,       // mmap regions not yet unmapped
  kOwnedFds,       // fds the addon opened and has neither handed to JS nor closed
  kNativeJobs,     // benchmark jobs running off the JS thread
  kNativeServers,  // echo servers / load generators running off the JS thread
  kBufferRings,    // provided-buffer rings whose memory is not yet freed
  kRingStreams,    // a Ring's streams (multishot recv + sends) not yet closed
  kCount
};

// The counters, updated inline: they change several times per Ring op.
extern std::atomic<int64_t> live_counters[static_cast<int>(Live::kCount)];
inline void LiveAdd(Live kind, int64_t delta) {
  live_counters[static_cast<int>(kind)].fetch_add(delta, std::memory_order_relaxed);
}
inline void LiveInc(Live kind) { LiveAdd(kind, 1); }
inline void LiveDec(Live kind) { LiveAdd(kind, -1); }

// RAII for an fd the addon holds: counted while held, closed unless released to JS.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd);
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ~OwnedFd();
  int get() const { return fd_; }
  // Hands the fd to the caller (JS); it is no longer counted or closed here.
  int release();

 private:
  int fd_ = -1;
};

}  // namespace iolab
