#include "desktop_bridge.h"

#include <memory>
#include <mutex>
#include <string>

#include "common/desktop_types.h"
#include "common/task_thread.h"

namespace runboard::napi {
namespace {

namespace d = runboard::desktop;

struct Desktop;

struct Job {
  Napi::Promise::Deferred deferred;
  Desktop* owner;
  Marshal ok;
  std::string error, code;
};

// Per JavaScript environment (the main thread, each worker thread): the function that settles its
// promises. The desktop thread itself is one per process: the X and AT-SPI connections are.
// What the desktop thread may touch of an environment, and whether it still may: at teardown Node frees
// the thread-safe function and the Desktop with it, and a late call from the thread would abort the
// process (seen: about one exit in three while a call was in flight).
struct DesktopGate {
  std::mutex mu;
  bool alive = true;
  Napi::ThreadSafeFunction tsfn;
};

struct Desktop {
  Napi::ThreadSafeFunction tsfn;
  int pending = 0;
  std::shared_ptr<DesktopGate> gate = std::make_shared<DesktopGate>();
};

runboard::TaskThread& DesktopThread() {
  static runboard::TaskThread thread;
  return thread;
}

void Settle(Napi::Env env, Napi::Function, Job* job) {
  if (job->ok) {
    try {
      job->deferred.Resolve(job->ok(env));
    } catch (const Napi::Error& e) { job->deferred.Reject(e.Value()); }
  } else {
    auto err = Napi::Error::New(env, job->error);
    err.Set("code", job->code);
    job->deferred.Reject(err.Value());
  }
  Desktop* owner = job->owner;
  delete job;
  if (--owner->pending == 0) owner->tsfn.Unref(env);
}

// Runs `work` on the desktop thread; `work` returns the marshaller that builds the JS value.
}  // namespace

Napi::Value Run(Napi::Env env, std::function<Marshal()> work) {
  auto* desktop = env.GetInstanceData<Desktop>();
  auto* job = new Job{Napi::Promise::Deferred::New(env), desktop, nullptr, "", ""};
  auto promise = job->deferred.Promise();
  if (desktop->pending++ == 0) desktop->tsfn.Ref(env);
  DesktopThread().Post([job, gate = desktop->gate, work = std::move(work)] {
    try {
      job->ok = work();
    } catch (const d::DesktopError& e) {
      job->error = e.what();
      job->code = e.code();
    } catch (const std::exception& e) {
      job->error = e.what();
      job->code = "INTERNAL";
    }
    std::lock_guard<std::mutex> lock(gate->mu);
    // Gone: the process is exiting; the job's promise has no one to reach (it is left, not freed here:
    // its handles belong to the environment).
    if (!gate->alive) return;
    if (gate->tsfn.BlockingCall(job, Settle) != napi_ok) delete job;
  });
  return promise;
}

void InitDesktopBridge(Napi::Env env) {
  auto* desktop = new Desktop();
  desktop->tsfn = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}),
                                                "runboard-desktop", 0, 1);
  desktop->tsfn.Unref(env);
  env.SetInstanceData<Desktop>(desktop);  // deleted with the environment
  desktop->gate->tsfn = desktop->tsfn;
  env.AddCleanupHook([desktop] {
    {
      std::lock_guard<std::mutex> lock(desktop->gate->mu);
      desktop->gate->alive = false;
    }
    desktop->tsfn.Release();
  });
}

}  // namespace runboard::napi
