// Marshalling only: argument checks, conversion, typed errors. Capabilities live behind the headers
// in src/common and their per-platform implementations. Every desktop call runs on one dedicated
// thread (common/task_thread.h) and settles a promise on the JavaScript thread.
#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include "common/peer.h"

#include "common/actions.h"
#include "common/capture.h"
#include "common/inputter.h"
#include "common/monitors.h"
#include "common/reader.h"
#include "common/recorder.h"
#include "common/sandbox.h"
#include "common/task_thread.h"
#include "common/watcher.h"
#include "common/window_manager.h"

namespace {

namespace d = runboard::desktop;

Napi::Value SandboxSupport(const Napi::CallbackInfo& info) {
  auto s = runboard::ProbeSandbox();
  auto out = Napi::Object::New(info.Env());
  out.Set("landlockAbi", s.landlockAbi);
  out.Set("reason", s.landlockReason);
  return out;
}

Napi::Value PeerIdentity(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "peerIdentity(fd: number)");
  runboard::PeerIdentity peer;
  std::string err = runboard::GetPeerIdentity(info[0].As<Napi::Number>().Int32Value(), &peer);
  if (!err.empty()) throw Napi::Error::New(env, err);
  auto out = Napi::Object::New(env);
  out.Set("pid", peer.pid);
  out.Set("uid", peer.uid);
  out.Set("userNs", peer.userNs);
  out.Set("userNsBelowOwn", peer.userNsBelowOwn);
  auto ancestors = Napi::Array::New(env, peer.ancestors.size());
  for (size_t i = 0; i < peer.ancestors.size(); i++) ancestors.Set(i, peer.ancestors[i]);
  out.Set("ancestors", ancestors);
  return out;
}

// ---- the desktop thread and promise plumbing ----

using Marshal = std::function<Napi::Value(Napi::Env)>;

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

// ---- argument helpers ----

std::string Str(const Napi::Object& o, const char* key) {
  auto v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
}
int64_t Int(const Napi::Object& o, const char* key, int64_t def = 0) {
  auto v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : def;
}
double Num(const Napi::Object& o, const char* key, double def) {
  auto v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : def;
}
bool Bool(const Napi::Object& o, const char* key, bool def) {
  auto v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : def;
}
Napi::Object ObjArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsObject()) return Napi::Object::New(info.Env());
  return info[i].As<Napi::Object>();
}
int IntArg(const Napi::CallbackInfo& info, size_t i, int def = 0) {
  return info.Length() > i && info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : def;
}
std::string StrArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsString()) throw Napi::TypeError::New(info.Env(), "expected a string argument");
  return info[i].As<Napi::String>().Utf8Value();
}
d::Rect RectFrom(const Napi::Value& v) {
  d::Rect r;
  if (!v.IsArray()) return r;
  auto a = v.As<Napi::Array>();
  if (a.Length() != 4) return r;
  r.x = a.Get(0u).As<Napi::Number>().Int32Value();
  r.y = a.Get(1u).As<Napi::Number>().Int32Value();
  r.w = a.Get(2u).As<Napi::Number>().Int32Value();
  r.h = a.Get(3u).As<Napi::Number>().Int32Value();
  return r;
}
d::WindowQuery QueryFrom(const Napi::Object& o) {
  d::WindowQuery q;
  q.app = Str(o, "app");
  q.title = Str(o, "title");
  q.windowId = static_cast<uint64_t>(Int(o, "windowId"));
  q.pid = static_cast<int>(Int(o, "pid"));
  return q;
}

Napi::Array RectValue(Napi::Env env, const d::Rect& r) {
  auto a = Napi::Array::New(env, 4);
  a.Set(0u, r.x);
  a.Set(1u, r.y);
  a.Set(2u, r.w);
  a.Set(3u, r.h);
  return a;
}
Napi::Object WindowValue(Napi::Env env, const d::WindowInfo& w) {
  auto o = Napi::Object::New(env);
  o.Set("id", static_cast<double>(w.id));
  o.Set("pid", w.pid);
  o.Set("app", w.app);
  o.Set("appClass", w.appClass);
  o.Set("title", w.title);
  o.Set("bounds", RectValue(env, w.bounds));
  o.Set("focused", w.focused);
  return o;
}
Napi::Object ElementValue(Napi::Env env, const d::Element& e) {
  auto o = Napi::Object::New(env);
  o.Set("id", e.id);
  o.Set("role", e.role);
  o.Set("name", e.name);
  if (!e.secret) o.Set("value", e.value);
  o.Set("description", e.description);
  o.Set("bounds", RectValue(env, e.bounds));
  o.Set("states", e.states);
  o.Set("secret", e.secret);
  auto actions = Napi::Array::New(env, e.actions.size());
  for (uint32_t i = 0; i < e.actions.size(); i++) actions.Set(i, e.actions[i]);
  o.Set("actions", actions);
  auto children = Napi::Array::New(env, e.children.size());
  for (uint32_t i = 0; i < e.children.size(); i++) children.Set(i, ElementValue(env, e.children[i]));
  o.Set("children", children);
  return o;
}
d::MouseButton ButtonArg(const Napi::CallbackInfo& info, size_t i) {
  int b = IntArg(info, i, 1);
  if (b < 1 || b > 3) throw Napi::RangeError::New(info.Env(), "button must be 1 (left), 2 (middle) or 3 (right)");
  return static_cast<d::MouseButton>(b);
}
Marshal Undefined() {
  return [](Napi::Env env) { return env.Undefined(); };
}

// ---- exported functions ----

Napi::Value ListMonitors(const Napi::CallbackInfo& info) {
  return Run(info.Env(), []() -> Marshal {
    auto mons = d::ListMonitors();
    return [mons](Napi::Env env) {
      auto a = Napi::Array::New(env, mons.size());
      for (uint32_t i = 0; i < mons.size(); i++) {
        auto o = Napi::Object::New(env);
        o.Set("name", mons[i].name);
        o.Set("bounds", RectValue(env, mons[i].bounds));
        o.Set("primary", mons[i].primary);
        a.Set(i, o);
      }
      return a;
    };
  });
}

Napi::Value ListWindows(const Napi::CallbackInfo& info) {
  auto q = QueryFrom(ObjArg(info, 0));
  return Run(info.Env(), [q]() -> Marshal {
    auto wins = d::ListWindows(q);
    return [wins](Napi::Env env) {
      auto a = Napi::Array::New(env, wins.size());
      for (uint32_t i = 0; i < wins.size(); i++) a.Set(i, WindowValue(env, wins[i]));
      return a;
    };
  });
}

Napi::Value ListApps(const Napi::CallbackInfo& info) {
  return Run(info.Env(), []() -> Marshal {
    auto apps = d::ListApps();
    return [apps](Napi::Env env) {
      auto a = Napi::Array::New(env, apps.size());
      for (uint32_t i = 0; i < apps.size(); i++) {
        auto o = Napi::Object::New(env);
        o.Set("name", apps[i].name);
        o.Set("pid", apps[i].pid);
        o.Set("accessible", apps[i].accessible);
        o.Set("windows", apps[i].windows);
        a.Set(i, o);
      }
      return a;
    };
  });
}

Napi::Value Read(const Napi::CallbackInfo& info) {
  auto o = ObjArg(info, 0);
  d::ReadOptions opts;
  opts.target = QueryFrom(o);
  opts.depth = static_cast<int>(Int(o, "depth", -1));
  opts.visibleOnly = Bool(o, "visibleOnly", true);
  opts.actions = Bool(o, "actions", true);
  if (o.Get("bbox").IsArray()) {
    opts.hasBbox = true;
    opts.bbox = RectFrom(o.Get("bbox"));
  }
  if (o.Get("roles").IsArray()) {
    auto roles = o.Get("roles").As<Napi::Array>();
    for (uint32_t i = 0; i < roles.Length(); i++) opts.roles.push_back(roles.Get(i).As<Napi::String>().Utf8Value());
  }
  return Run(info.Env(), [opts]() -> Marshal {
    auto r = std::make_shared<d::ReadResult>(d::ReadTree(opts));
    return [r](Napi::Env env) {
      auto out = Napi::Object::New(env);
      out.Set("window", WindowValue(env, r->window));
      out.Set("scale", r->scale);
      auto els = Napi::Array::New(env, r->elements.size());
      for (uint32_t i = 0; i < r->elements.size(); i++) els.Set(i, ElementValue(env, r->elements[i]));
      out.Set("elements", els);
      auto stats = Napi::Object::New(env);
      stats.Set("nodes", r->stats.nodes);
      stats.Set("returned", r->stats.returned);
      stats.Set("roundTrips", r->stats.roundTrips);
      stats.Set("ms", r->stats.ms);
      out.Set("stats", stats);
      return out;
    };
  });
}

Napi::Value DoAction(const Napi::CallbackInfo& info) {
  auto q = QueryFrom(ObjArg(info, 0));
  int id = IntArg(info, 1, -1);
  std::string action = info.Length() > 2 && info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
  return Run(info.Env(), [q, id, action]() -> Marshal {
    std::string done = d::DoAction(q, id, action);
    return [done](Napi::Env env) { return Napi::String::New(env, done); };
  });
}

Napi::Value SetValue(const Napi::CallbackInfo& info) {
  auto q = QueryFrom(ObjArg(info, 0));
  int id = IntArg(info, 1, -1);
  std::string value = StrArg(info, 2);
  return Run(info.Env(), [q, id, value]() -> Marshal {
    std::string kind = d::SetValue(q, id, value);
    return [kind](Napi::Env env) { return Napi::String::New(env, kind); };
  });
}

Napi::Value Move(const Napi::CallbackInfo& info) {
  int x = IntArg(info, 0), y = IntArg(info, 1);
  return Run(info.Env(), [x, y]() -> Marshal {
    d::MoveMouse(x, y);
    return Undefined();
  });
}

Napi::Value Click(const Napi::CallbackInfo& info) {
  int x = IntArg(info, 0), y = IntArg(info, 1), count = IntArg(info, 3, 1);
  auto button = ButtonArg(info, 2);
  return Run(info.Env(), [x, y, button, count]() -> Marshal {
    d::Click(x, y, button, count);
    return Undefined();
  });
}

Napi::Value Scroll(const Napi::CallbackInfo& info) {
  int x = IntArg(info, 0), y = IntArg(info, 1), dx = IntArg(info, 2), dy = IntArg(info, 3);
  return Run(info.Env(), [x, y, dx, dy]() -> Marshal {
    d::Scroll(x, y, dx, dy);
    return Undefined();
  });
}

Napi::Value Drag(const Napi::CallbackInfo& info) {
  int fx = IntArg(info, 0), fy = IntArg(info, 1), tx = IntArg(info, 2), ty = IntArg(info, 3);
  int steps = IntArg(info, 4, 10), delay = IntArg(info, 5, 10);
  auto button = ButtonArg(info, 6);
  return Run(info.Env(), [=]() -> Marshal {
    d::Drag(fx, fy, tx, ty, steps, delay, button);
    return Undefined();
  });
}

Napi::Value Type(const Napi::CallbackInfo& info) {
  std::string text = StrArg(info, 0);
  int delay = IntArg(info, 1, 0);
  return Run(info.Env(), [text, delay]() -> Marshal {
    d::TypeText(text, delay);
    return Undefined();
  });
}

Napi::Value Key(const Napi::CallbackInfo& info) {
  std::string combo = StrArg(info, 0);
  int delay = IntArg(info, 1, 0);
  return Run(info.Env(), [combo, delay]() -> Marshal {
    d::KeyCombo(combo, delay);
    return Undefined();
  });
}

Napi::Value Focus(const Napi::CallbackInfo& info) {
  auto q = QueryFrom(ObjArg(info, 0));
  return Run(info.Env(), [q]() -> Marshal {
    auto w = d::FocusWindow(q);
    return [w](Napi::Env env) { return WindowValue(env, w); };
  });
}

Napi::Value Capture(const Napi::CallbackInfo& info) {
  auto o = ObjArg(info, 0);
  d::CaptureOptions opts;
  opts.target = QueryFrom(o);
  opts.wholeScreen = opts.target.app.empty() && opts.target.title.empty() && !opts.target.windowId && !opts.target.pid;
  if (o.Get("region").IsArray()) {
    opts.hasRegion = true;
    opts.region = RectFrom(o.Get("region"));
  }
  opts.scale = Num(o, "scale", 1);
  opts.format = o.Get("format").IsString() ? Str(o, "format") : "png";
  opts.quality = static_cast<int>(Int(o, "quality", 80));
  opts.cursor = Bool(o, "cursor", true);
  return Run(info.Env(), [opts]() -> Marshal {
    auto r = std::make_shared<d::CaptureResult>(d::Capture(opts));
    return [r](Napi::Env env) {
      auto out = Napi::Object::New(env);
      out.Set("data", Napi::Buffer<uint8_t>::Copy(env, r->data.data(), r->data.size()));
      out.Set("width", r->width);
      out.Set("height", r->height);
      out.Set("source", RectValue(env, r->source));
      out.Set("format", r->format);
      return out;
    };
  });
}

Napi::Value Pointer(const Napi::CallbackInfo& info) {
  return Run(info.Env(), []() -> Marshal {
    auto p = d::QueryPointer();
    return [p](Napi::Env env) {
      auto o = Napi::Object::New(env);
      o.Set("x", p.x);
      o.Set("y", p.y);
      o.Set("onScreen", p.onScreen);
      o.Set("screen", RectValue(env, p.screen));
      o.Set("buttons", p.buttons);
      if (p.hasMonitor) {
        auto m = Napi::Object::New(env);
        m.Set("name", p.monitorName);
        m.Set("bounds", RectValue(env, p.monitor));
        m.Set("primary", p.primary);
        o.Set("monitor", m);
      } else {
        o.Set("monitor", env.Null());
      }
      return o;
    };
  });
}

// ---- the watcher (key presses with their source device, the takeover HUD) ----
//
// new Watcher({ keys?: boolean, keyNames?: string[], hud?: string, hudAt?: [x, y] }, onMessage) starts a thread of its
// own (common/watcher.h). onMessage(type, payload): 'ready'; 'key' {keycode, keysym, key, deviceId,
// device, synthetic, time}; 'error' {message, code} (the thread has ended). The thread-safe function
// keeps the process alive while the watcher runs; stop() unrefs it at once, so a watcher stuck on a
// stalled display cannot keep the process alive either.

struct WatcherMsg {
  enum Kind { kReady, kKey, kError, kHudDone, kEnded } kind;
  d::KeyEvent key;
  std::string message, code;
  Napi::Promise::Deferred* deferred = nullptr;
};

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

void ThreadEnvGone(void* arg) {
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
void BridgeEnded(Napi::Env env, ThreadState* state) {
  if (!state->hookArg) return;
  napi_remove_env_cleanup_hook(env, ThreadEnvGone, state->hookArg);
  delete state->hookArg;
  state->hookArg = nullptr;
}

// stop(): nothing reaches JavaScript after it, and the object no longer keeps the process alive.
void StopBridge(Napi::Env env, ThreadState* state) {
  state->stopped = true;
  if (!state->unrefed) {
    state->unrefed = true;
    state->tsfn.Unref(env);
  }
}

void Deliver(Napi::Env env, Napi::Function onMessage, WatcherMsg* msg, ThreadState* state) {
  std::unique_ptr<WatcherMsg> m(msg);
  if (m->deferred) {
    m->deferred->Resolve(env.Undefined());
    delete m->deferred;
    return;
  }
  if (m->kind == WatcherMsg::kEnded) return BridgeEnded(env, state);
  if (state->stopped) return;  // nothing reaches JavaScript after stop()
  auto payload = Napi::Object::New(env);
  const char* type = "ready";
  if (m->kind == WatcherMsg::kKey) {
    type = "key";
    payload.Set("keycode", m->key.keycode);
    payload.Set("keysym", static_cast<double>(m->key.keysym));
    payload.Set("key", m->key.key);
    payload.Set("deviceId", m->key.deviceId);
    payload.Set("device", m->key.device);
    payload.Set("synthetic", m->key.synthetic);
    payload.Set("time", static_cast<double>(m->key.time));
  } else if (m->kind == WatcherMsg::kError) {
    type = "error";
    payload.Set("message", m->message);
    payload.Set("code", m->code);
  }
  onMessage.Call({Napi::String::New(env, type), payload});
}

class NativeWatcher : public Napi::ObjectWrap<NativeWatcher> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Watcher",
        {InstanceMethod("setHud", &NativeWatcher::SetHud), InstanceMethod("stop", &NativeWatcher::Stop)});
  }

  explicit NativeWatcher(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeWatcher>(info) {
    auto env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction())
      throw Napi::TypeError::New(env, "new Watcher(options: object, onMessage: function)");
    auto o = info[0].As<Napi::Object>();
    d::WatcherOptions opts;
    opts.keys = Bool(o, "keys", true);
    opts.hudText = Str(o, "hud");
    if (o.Get("hudAt").IsArray()) {
      auto at = o.Get("hudAt").As<Napi::Array>();
      if (at.Length() != 2 || !at.Get(0u).IsNumber() || !at.Get(1u).IsNumber())
        throw Napi::TypeError::New(env, "hudAt must be [x, y]");
      opts.hudAtX = at.Get(0u).As<Napi::Number>().Int32Value();
      opts.hudAtY = at.Get(1u).As<Napi::Number>().Int32Value();
    }
    if (o.Get("keyNames").IsArray()) {
      auto a = o.Get("keyNames").As<Napi::Array>();
      for (uint32_t i = 0; i < a.Length(); i++) {
        if (!a.Get(i).IsString()) throw Napi::TypeError::New(env, "keyNames must be strings");
        opts.keyNames.push_back(a.Get(i).As<Napi::String>().Utf8Value());
      }
    }
    if (!opts.keys && opts.hudText.empty()) throw Napi::TypeError::New(env, "a watcher needs keys or a HUD");
    auto post = OpenBridge<WatcherMsg>(env, info[1].As<Napi::Function>(), "runboard-watcher", &state_, Deliver,
                                       [](WatcherMsg* m) {
                                         delete m->deferred;  // (its promise is gone with its environment)
                                         delete m;
                                       });
    auto state = state_;
    d::WatcherCallbacks cb;
    cb.ready = [post] { post(new WatcherMsg{WatcherMsg::kReady, {}, "", "", nullptr}); };
    cb.key = [post](const d::KeyEvent& k) { post(new WatcherMsg{WatcherMsg::kKey, k, "", "", nullptr}); };
    cb.failed = [post](const d::DesktopError& e) {
      post(new WatcherMsg{WatcherMsg::kError, {}, e.what(), e.code(), nullptr});
    };
    cb.ended = [state, post] { CloseBridge(state, post, new WatcherMsg{WatcherMsg::kEnded, {}, "", "", nullptr}); };
    watcher_ = std::make_unique<d::Watcher>(std::move(opts), std::move(cb));
    post_ = post;
  }

  ~NativeWatcher() override {
    if (watcher_) watcher_->Stop();
  }

 private:
  // setHud(visible): resolves once the X server has mapped/unmapped the HUD.
  Napi::Value SetHud(const Napi::CallbackInfo& info) {
    auto env = info.Env();
    auto* deferred = new Napi::Promise::Deferred(Napi::Promise::Deferred::New(env));
    auto promise = deferred->Promise();
    bool visible = info.Length() > 0 && info[0].ToBoolean().Value();
    auto post = post_;
    bool queued = watcher_->SetHudVisible(visible, [post, deferred] {
      post(new WatcherMsg{WatcherMsg::kHudDone, {}, "", "", deferred});
    });
    if (!queued) {  // stopped or ended: nothing to show or hide (and no thread to settle it)
      deferred->Resolve(env.Undefined());
      delete deferred;
    }
    return promise;
  }

  Napi::Value Stop(const Napi::CallbackInfo& info) {
    StopBridge(info.Env(), state_.get());
    watcher_->Stop();
    return info.Env().Undefined();
  }

  std::shared_ptr<ThreadState> state_;
  std::unique_ptr<d::Watcher> watcher_;
  std::function<void(WatcherMsg*)> post_;
};

// ---- the recorder (a person's input with the frame before each event) ----
//
// new Recorder({ region?: [x, y, w, h], frameIntervalMs?, settleMs?, borderWidth? }, onMessage) starts a thread of its
// own (common/recorder.h). onMessage(type, payload): 'ready' {frame}; 'event' {kind, time, keycode,
// keysym, key, text, modifierKey, modifiers, button, x, y, window, synthetic, device, frameId, frame?};
// 'focus' {time, focused, app, path, role, name, bounds, editable, secret} or {error} (AT-SPI focus changes);
// 'error' {message, code} (the thread has ended). A frame ({id, width, height, source, data: RGBA}) is
// copied into JavaScript once, with the first event that refers to it; later events carry its id only.
// Lifetime as the watcher's (OpenBridge): stop() unrefs at once.

struct RecorderMsg {
  enum Kind { kReady, kEvent, kError, kEnded, kDrained, kFocus } kind;
  d::RecordedEvent event;
  std::shared_ptr<const d::RecorderFrame> frame;
  std::string message, code;
  Napi::Promise::Deferred* deferred = nullptr;  // kDrained: drain()'s promise
  unsigned long stopTime = 0;
  d::RecordedFocus focus = {};  // kFocus
};

Napi::Object FrameValue(Napi::Env env, const d::RecorderFrame& f) {
  auto o = Napi::Object::New(env);
  o.Set("id", static_cast<double>(f.id));
  o.Set("width", f.width);
  o.Set("height", f.height);
  o.Set("source", RectValue(env, f.source));
  o.Set("data", Napi::Buffer<uint8_t>::Copy(env, f.rgba.data(), f.rgba.size()));
  return o;
}

void DeliverRecording(Napi::Env env, Napi::Function onMessage, RecorderMsg* msg, ThreadState* state) {
  uint64_t* lastFrameSent = &state->lastFrameSent;
  std::unique_ptr<RecorderMsg> m(msg);
  if (m->kind == RecorderMsg::kEnded) return BridgeEnded(env, state);
  if (m->kind == RecorderMsg::kDrained) {  // after every event it reported (the bridge keeps the order)
    m->deferred->Resolve(Napi::Number::New(env, static_cast<double>(m->stopTime)));
    delete m->deferred;
    return;
  }
  if (state->stopped) return;  // nothing reaches JavaScript after stop()
  auto payload = Napi::Object::New(env);
  const char* type = "ready";
  if (m->kind == RecorderMsg::kReady) {
    payload.Set("frame", FrameValue(env, *m->frame));
    *lastFrameSent = m->frame->id;
  } else if (m->kind == RecorderMsg::kEvent) {
    type = "event";
    const auto& e = m->event;
    payload.Set("kind", e.kind == d::RecordedKind::kKeyPress      ? "keyPress"
                        : e.kind == d::RecordedKind::kButtonPress ? "buttonPress"
                                                                  : "buttonRelease");
    payload.Set("time", static_cast<double>(e.time));
    payload.Set("keycode", e.keycode);
    payload.Set("keysym", static_cast<double>(e.keysym));
    payload.Set("key", e.key);
    payload.Set("text", e.text);
    payload.Set("modifierKey", e.modifierKey);
    payload.Set("modifiers", e.modifiers);
    payload.Set("button", e.button);
    payload.Set("x", e.x);
    payload.Set("y", e.y);
    payload.Set("window", static_cast<double>(e.window));
    payload.Set("synthetic", e.synthetic);
    payload.Set("device", e.device);
    if (e.frame) {
      payload.Set("frameId", static_cast<double>(e.frame->id));
      if (e.frame->id != *lastFrameSent) {
        payload.Set("frame", FrameValue(env, *e.frame));
        *lastFrameSent = e.frame->id;
      }
    }
  } else if (m->kind == RecorderMsg::kFocus) {
    type = "focus";
    const auto& f = m->focus;
    if (!f.error.empty()) {
      payload.Set("error", f.error);
    } else {
      payload.Set("time", static_cast<double>(f.time));
      payload.Set("focused", f.focused);
      payload.Set("app", f.app);
      payload.Set("path", f.path);
      payload.Set("role", f.role);
      payload.Set("name", f.name);
      payload.Set("bounds", RectValue(env, f.bounds));
      payload.Set("editable", f.editable);
      payload.Set("secret", f.secret);
    }
  } else {
    type = "error";
    payload.Set("message", m->message);
    payload.Set("code", m->code);
  }
  onMessage.Call({Napi::String::New(env, type), payload});
}

class NativeRecorder : public Napi::ObjectWrap<NativeRecorder> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Recorder",
        {InstanceMethod("setPaused", &NativeRecorder::SetPaused), InstanceMethod("stop", &NativeRecorder::Stop),
         InstanceMethod("drain", &NativeRecorder::Drain)});
  }

  explicit NativeRecorder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeRecorder>(info) {
    auto env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction())
      throw Napi::TypeError::New(env, "new Recorder(options: object, onMessage: function)");
    auto o = info[0].As<Napi::Object>();
    d::RecorderOptions opts;
    if (o.Get("region").IsArray()) {
      opts.hasRegion = true;
      opts.region = RectFrom(o.Get("region"));
    }
    opts.frameIntervalMs = static_cast<int>(Int(o, "frameIntervalMs", opts.frameIntervalMs));
    opts.settleMs = static_cast<int>(Int(o, "settleMs", opts.settleMs));
    opts.borderWidth = static_cast<int>(Int(o, "borderWidth", opts.borderWidth));
    auto post = OpenBridge<RecorderMsg>(env, info[1].As<Napi::Function>(), "runboard-recorder", &state_,
                                        DeliverRecording, [](RecorderMsg* m) { delete m; });
    auto state = state_;
    post_ = post;
    d::RecorderCallbacks cb;
    cb.ready = [post](std::shared_ptr<const d::RecorderFrame> f) {
      post(new RecorderMsg{RecorderMsg::kReady, {}, std::move(f), "", ""});
    };
    cb.event = [post](const d::RecordedEvent& e) { post(new RecorderMsg{RecorderMsg::kEvent, e, nullptr, "", ""}); };
    cb.focus = [post](const d::RecordedFocus& f) {
      auto* m = new RecorderMsg{RecorderMsg::kFocus, {}, nullptr, "", ""};
      m->focus = f;
      post(m);
    };
    cb.failed = [post](const d::DesktopError& e) {
      post(new RecorderMsg{RecorderMsg::kError, {}, nullptr, e.what(), e.code()});
    };
    cb.ended = [state, post] { CloseBridge(state, post, new RecorderMsg{RecorderMsg::kEnded, {}, nullptr, "", ""}); };
    recorder_ = std::make_unique<d::Recorder>(std::move(opts), std::move(cb));
  }

  ~NativeRecorder() override {
    if (recorder_) recorder_->Stop();
  }

 private:
  Napi::Value SetPaused(const Napi::CallbackInfo& info) {
    recorder_->SetPaused(info.Length() > 0 && info[0].ToBoolean().Value());
    return info.Env().Undefined();
  }

  Napi::Value Stop(const Napi::CallbackInfo& info) {
    StopBridge(info.Env(), state_.get());
    recorder_->Stop();
    return info.Env().Undefined();
  }

  // drain(): Promise<stopTime>: stops at an instant of the X server; every event before it has been
  // delivered to onMessage when it settles (common/recorder.h, Drain). 0: it had stopped already.
  Napi::Value Drain(const Napi::CallbackInfo& info) {
    auto env = info.Env();
    auto* deferred = new Napi::Promise::Deferred(Napi::Promise::Deferred::New(env));
    auto promise = deferred->Promise();
    auto post = post_;
    bool queued = recorder_->Drain([post, deferred](unsigned long t) {
      auto* m = new RecorderMsg{RecorderMsg::kDrained, {}, nullptr, "", ""};
      m->deferred = deferred;
      m->stopTime = t;
      post(m);
    });
    if (!queued) {
      deferred->Resolve(Napi::Number::New(env, 0));
      delete deferred;
    }
    return promise;
  }

  std::shared_ptr<ThreadState> state_;
  std::unique_ptr<d::Recorder> recorder_;
  std::function<void(RecorderMsg*)> post_;
};

// encodeImage(rgba: Buffer, width, height, format: 'png' | 'jpeg', quality): Promise<Buffer>, encoded on
// libuv's thread pool (not the desktop thread: encoding must not hold up reads and input).
class EncodeWorker : public Napi::AsyncWorker {
 public:
  EncodeWorker(Napi::Env env, std::vector<uint8_t> rgba, int w, int h, std::string format, int quality)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        rgba_(std::move(rgba)),
        w_(w),
        h_(h),
        format_(std::move(format)),
        quality_(quality) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      out_ = d::EncodeImage(rgba_, w_, h_, format_, quality_);
    } catch (const d::DesktopError& e) {
      code_ = e.code();
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(Napi::Buffer<uint8_t>::Copy(Env(), out_.data(), out_.size())); }
  void OnError(const Napi::Error& e) override {
    e.Value().Set("code", code_);
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<uint8_t> rgba_, out_;
  int w_, h_;
  std::string format_;
  int quality_;
  std::string code_;
};

Napi::Value EncodeImage(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  if (info.Length() < 4 || !info[0].IsBuffer() || !info[3].IsString())
    throw Napi::TypeError::New(env, "encodeImage(rgba: Buffer, width, height, format, quality?)");
  auto buf = info[0].As<Napi::Buffer<uint8_t>>();
  auto* worker = new EncodeWorker(env, std::vector<uint8_t>(buf.Data(), buf.Data() + buf.Length()), IntArg(info, 1),
                                  IntArg(info, 2), StrArg(info, 3), IntArg(info, 4, 85));
  auto promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value NaiveWalk(const Napi::CallbackInfo& info) {
  auto q = QueryFrom(ObjArg(info, 0));
  return Run(info.Env(), [q]() -> Marshal {
    int n = d::NaiveWalkForBench(q);
    return [n](Napi::Env env) { return Napi::Number::New(env, n); };
  });
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("sandboxSupport", Napi::Function::New(env, SandboxSupport));
  exports.Set("peerIdentity", Napi::Function::New(env, PeerIdentity));
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
  exports.Set("desktopListWindows", Napi::Function::New(env, ListWindows));
  exports.Set("desktopListMonitors", Napi::Function::New(env, ListMonitors));
  exports.Set("desktopListApps", Napi::Function::New(env, ListApps));
  exports.Set("desktopRead", Napi::Function::New(env, Read));
  exports.Set("desktopDoAction", Napi::Function::New(env, DoAction));
  exports.Set("desktopSetValue", Napi::Function::New(env, SetValue));
  exports.Set("desktopMove", Napi::Function::New(env, Move));
  exports.Set("desktopClick", Napi::Function::New(env, Click));
  exports.Set("desktopScroll", Napi::Function::New(env, Scroll));
  exports.Set("desktopDrag", Napi::Function::New(env, Drag));
  exports.Set("desktopType", Napi::Function::New(env, Type));
  exports.Set("desktopKey", Napi::Function::New(env, Key));
  exports.Set("desktopFocus", Napi::Function::New(env, Focus));
  exports.Set("desktopCapture", Napi::Function::New(env, Capture));
  exports.Set("desktopPointer", Napi::Function::New(env, Pointer));
  exports.Set("Watcher", NativeWatcher::Define(env));
  exports.Set("Recorder", NativeRecorder::Define(env));
  exports.Set("encodeImage", Napi::Function::New(env, EncodeImage));
  exports.Set("desktopNaiveWalkForBench", Napi::Function::New(env, NaiveWalk));
  return exports;
}

}  // namespace

NODE_API_MODULE(runboard_native, Init)
