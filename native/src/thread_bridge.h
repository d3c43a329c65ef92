// What a thread-backed object (watcher, recorder) shares with JavaScript: a thread-safe function to its
// `onMessage`, kept off at environment teardown. Used by watcher_bridge.cc and recorder_bridge.cc.
#pragma once
#include <napi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace runboard::napi {

struct ThreadState {
  Napi::ThreadSafeFunction tsfn;
  // The watcher thread touches the thread-safe function only under `mu` and only while the environment
  // lives: at teardown, Node frees it (a late Release from the thread would abort the process).
  std::mutex mu;
  bool envAlive = true;
  std::atomic<bool> stopped{false};
  bool unrefed = false;                             // JS thread only
  std::shared_ptr<ThreadState>* hookArg = nullptr;  // JS thread only: the env cleanup hook's argument
  uint64_t lastFrameSent = 0;                       // JS thread only, the recorder: the last frame copied out
};

inline void ThreadEnvGone(void* arg) {
  auto* state = static_cast<std::shared_ptr<ThreadState>*>(arg);
  {
    std::lock_guard<std::mutex> lock((*state)->mu);
    (*state)->envAlive = false;
  }
  delete state;
}

// What a thread-backed object (watcher, recorder) shares: a thread-safe function to `onMessage`, the
// environment cleanup hook that keeps the thread off it at teardown, and post(), which the thread
// calls with a message that `deliver` turns into the JavaScript call. `discard` frees a message that
// can no longer be delivered.
template <typename Msg>
std::function<void(Msg*)> OpenBridge(Napi::Env env, const Napi::Function& onMessage, const char* name,
                                     std::shared_ptr<ThreadState>* out,
                                     void (*deliver)(Napi::Env, Napi::Function, Msg*, ThreadState*),
                                     void (*discard)(Msg*)) {
  auto state = std::make_shared<ThreadState>();
  state->tsfn = Napi::ThreadSafeFunction::New(env, onMessage, name, 0, 1);
  // Added after the thread-safe function's own hook, so it runs before that one frees it.
  state->hookArg = new std::shared_ptr<ThreadState>(state);
  napi_add_env_cleanup_hook(env, ThreadEnvGone, state->hookArg);
  *out = state;
  return [state, deliver, discard](Msg* m) {
    auto call = [state, deliver](Napi::Env e, Napi::Function f, Msg* msg) { deliver(e, f, msg, state.get()); };
    std::lock_guard<std::mutex> lock(state->mu);
    if (!state->envAlive || state->tsfn.BlockingCall(m, call) != napi_ok) discard(m);
  };
}

// The thread's last act: `last` (its "ended" message) is posted, then the thread-safe function released.
template <typename Msg>
void CloseBridge(const std::shared_ptr<ThreadState>& state, const std::function<void(Msg*)>& post, Msg* last) {
  post(last);
  std::lock_guard<std::mutex> lock(state->mu);
  if (state->envAlive) state->tsfn.Release();
}

// On the JavaScript thread, for the "ended" message: the thread is gone, the cleanup hook is not needed.
inline void BridgeEnded(Napi::Env env, ThreadState* state) {
  if (!state->hookArg) return;
  napi_remove_env_cleanup_hook(env, ThreadEnvGone, state->hookArg);
  delete state->hookArg;
  state->hookArg = nullptr;
}

// stop(): nothing reaches JavaScript after it, and the object no longer keeps the process alive.
inline void StopBridge(Napi::Env env, ThreadState* state) {
  state->stopped = true;
  if (!state->unrefed) {
    state->unrefed = true;
    state->tsfn.Unref(env);
  }
}

// The classes JavaScript constructs (new Watcher(…), new Recorder(…)).
Napi::Function DefineWatcher(Napi::Env env);
Napi::Function DefineRecorder(Napi::Env env);

}  // namespace runboard::napi
