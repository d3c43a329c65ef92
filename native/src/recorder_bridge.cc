// The recorder (a person's input with the frame before each event), bridged to JavaScript.
// Its owner (issue 30) may change this file; main.cc only registers it.
//
// new Recorder({ region?: [x, y, w, h], frameIntervalMs?, settleMs?, borderWidth? }, onMessage) starts a thread of its
// own (common/recorder.h). onMessage(type, payload): 'ready' {frame}; 'event' {kind, time, keycode,
// keysym, key, text, modifierKey, modifiers, button, x, y, window, synthetic, device, frameId, frame?};
// 'focus' {time, focused, app, path, role, name, bounds, editable, secret} or {error} (AT-SPI focus changes);
// 'paused' {paused, time} (a setPaused took effect: after every event before its instant, before any after it);
// 'mark' {time, frame?} (a mark() reached, in the same order; the screen at its instant);
// 'window' {window, bounds, mapped} (a top-level window mapped, moved or resized, or unmapped);
// 'error' {message, code} (the thread has ended). A frame ({id, width, height, source, data: RGBA}) is
// copied into JavaScript once, with the first event that refers to it; later events carry its id only.
// Lifetime as the watcher's (OpenBridge): stop() unrefs at once.
#include <memory>
#include <string>

#include "common/recorder.h"
#include "napi_values.h"
#include "thread_bridge.h"

namespace runboard::napi {
namespace {

struct RecorderMsg {
  enum Kind { kReady, kEvent, kError, kEnded, kDrained, kFocus, kPaused, kMarked, kWindow } kind;
  d::RecordedEvent event;
  std::shared_ptr<const d::RecorderFrame> frame;
  std::string message, code;
  Napi::Promise::Deferred* deferred = nullptr;  // kDrained: drain()'s promise
  unsigned long time = 0;  // kDrained: the stop's server time; kPaused: the pause's or resume's; kMarked: the mark's
  d::RecordedFocus focus = {};    // kFocus
  bool paused = false;            // kPaused
  d::RecordedWindow window = {};  // kWindow
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
    m->deferred->Resolve(Napi::Number::New(env, static_cast<double>(m->time)));
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
  } else if (m->kind == RecorderMsg::kMarked) {
    type = "mark";  // a frame of its own each time (marks are rare): the events' frame ids are left as they are
    payload.Set("time", static_cast<double>(m->time));
    if (m->frame) payload.Set("frame", FrameValue(env, *m->frame));
  } else if (m->kind == RecorderMsg::kWindow) {
    type = "window";
    payload.Set("window", static_cast<double>(m->window.window));
    payload.Set("bounds", RectValue(env, m->window.bounds));
    payload.Set("mapped", m->window.mapped);
  } else if (m->kind == RecorderMsg::kPaused) {
    type = "paused";
    payload.Set("paused", m->paused);
    payload.Set("time", static_cast<double>(m->time));
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
        {InstanceMethod("setPaused", &NativeRecorder::SetPaused), InstanceMethod("mark", &NativeRecorder::Mark),
         InstanceMethod("stop", &NativeRecorder::Stop), InstanceMethod("drain", &NativeRecorder::Drain)});
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
    cb.paused = [post](bool paused, unsigned long time) {
      auto* m = new RecorderMsg{RecorderMsg::kPaused, {}, nullptr, "", ""};
      m->paused = paused;
      m->time = time;
      post(m);
    };
    cb.marked = [post](unsigned long time, std::shared_ptr<const d::RecorderFrame> f) {
      auto* m = new RecorderMsg{RecorderMsg::kMarked, {}, std::move(f), "", ""};
      m->time = time;
      post(m);
    };
    cb.window = [post](const d::RecordedWindow& w) {
      auto* m = new RecorderMsg{RecorderMsg::kWindow, {}, nullptr, "", ""};
      m->window = w;
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

  // mark(): whether a 'mark' message ({time, frame}) will follow, after every event before the call.
  Napi::Value Mark(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), recorder_->Mark()); }

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
      m->time = t;
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

}  // namespace

Napi::Function DefineRecorder(Napi::Env env) { return NativeRecorder::Define(env); }

}  // namespace runboard::napi
