// The desktop thread and its promises: every desktop call runs on one dedicated thread
// (common/task_thread.h) and settles a promise on the JavaScript thread of the environment that made it.
#pragma once
#include <napi.h>

#include <functional>

namespace runboard::napi {

// Builds the JavaScript value of a result, on the JavaScript thread.
using Marshal = std::function<Napi::Value(Napi::Env)>;

// Runs `work` on the desktop thread; `work` returns the marshaller that builds the JS value. A
// DesktopError thrown by `work` rejects the promise with its code.
Napi::Value Run(Napi::Env env, std::function<Marshal()> work);

inline Marshal Undefined() {
  return [](Napi::Env env) { return env.Undefined(); };
}

// Once per environment, before the first Run.
void InitDesktopBridge(Napi::Env env);

}  // namespace runboard::napi
