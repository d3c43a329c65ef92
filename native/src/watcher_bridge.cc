// The watcher (key presses with their source device, the takeover HUD), bridged to JavaScript.
//
// new Watcher({ keys?: boolean, keyNames?: string[], hud?: string, hudAt?: [x, y] }, onMessage) starts a thread of its
// own (common/watcher.h). onMessage(type, payload): 'ready'; 'key' {keycode, keysym, key, deviceId,
// device, synthetic, time}; 'error' {message, code} (the thread has ended). The thread-safe function
// keeps the process alive while the watcher runs; stop() unrefs it at once, so a watcher stuck on a
// stalled display cannot keep the process alive either.

#include <memory>
#include <string>

#include "common/watcher.h"
#include "napi_values.h"
#include "thread_bridge.h"

namespace runboard::napi {
namespace {

struct WatcherMsg {
  enum Kind { kReady, kKey, kError, kHudDone, kEnded } kind;
  d::KeyEvent key;
  std::string message, code;
  Napi::Promise::Deferred* deferred = nullptr;
};

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

}  // namespace

Napi::Function DefineWatcher(Napi::Env env) { return NativeWatcher::Define(env); }

}  // namespace runboard::napi
