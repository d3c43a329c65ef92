// One dedicated thread that runs every blocking desktop call, in order. libatspi/D-Bus and Xlib are
// not safe to share between threads, and blocking calls must stay off the JavaScript thread.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace runboard {

class TaskThread {
 public:
  explicit TaskThread(std::function<void()> onStart = {}) : onStart_(std::move(onStart)) {}
  ~TaskThread() { Stop(); }

  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    if (onStart_) onStart_();
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::function<void()> onStart_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::thread thread_;
  bool stopping_ = false;
};

}  // namespace runboard
