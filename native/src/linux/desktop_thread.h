// What a desktop object (the key watcher, the recorder) shares with its own thread: an eventfd that wakes
// the thread's poll, the lock, and whether it is stopping or gone. The thread itself is started by
// StartDesktopThread, which ends it the same way for both.
#pragma once

#include <X11/Xlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace runboard::desktop {

struct DesktopThread {
  int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  std::mutex mu;
  bool stopping = false;
  bool ended = false;  // the thread left its loop (and `wake` is closed)

  // Wakes the thread's poll.
  void Wake() const {
    uint64_t one = 1;
    (void)!write(wake, &one, sizeof one);
  }
  // Under `mu`: whether the thread still takes requests.
  bool Accepting() const { return !stopping && !ended; }
  // Asks the thread to leave its loop (once).
  void RequestStop() {
    std::lock_guard<std::mutex> lock(mu);
    if (!Accepting()) return;
    stopping = true;
    Wake();
  }
};

// Hands every event already queued on `dpy` to `handle`, until none is left or the connection is lost
// (`lost`, set by the connection's error handler).
template <typename Handle>
void HandlePendingEvents(Display* dpy, const bool& lost, Handle handle) {
  while (!lost && XPending(dpy) > 0) {
    XEvent ev;
    XNextEvent(dpy, &ev);
    handle(ev);
  }
}

// Runs impl->Run() on a detached thread. Afterwards: marks it ended and takes, under the lock, what
// `drain(impl)` returns (requests that must still complete), completes them, closes the eventfd and
// calls impl->callbacks.ended, the thread's last act.
template <typename Impl, typename Drain>
void StartDesktopThread(const std::shared_ptr<Impl>& impl, Drain drain) {
  std::thread([impl, drain] {
    impl->Run();
    decltype(drain(*impl)) left;
    {
      std::lock_guard<std::mutex> lock(impl->mu);
      impl->ended = true;
      left = drain(*impl);
    }
    for (auto& complete : left) complete();
    close(impl->wake);
    if (impl->callbacks.ended) impl->callbacks.ended();
  }).detach();
}

}  // namespace runboard::desktop
