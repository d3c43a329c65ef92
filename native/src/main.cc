// Marshalling only: argument checks, conversion, typed errors. Capabilities live behind the headers
// in src/common and their per-platform implementations. Every desktop call runs on one dedicated
// thread and settles a promise on the JavaScript thread (desktop_bridge.h); the watcher and the
// recorder run threads of their own, bridged in watcher_bridge.cc and recorder_bridge.cc.
#include <napi.h>

#include "common/peer.h"
#include "common/process_lock.h"

#include "common/actions.h"
#include "common/capture.h"
#include "common/element_json.h"
#include "common/inputter.h"
#include "common/monitors.h"
#include "common/reader.h"
#include "common/sandbox.h"
#include "common/window_manager.h"
#include "desktop_bridge.h"
#include "napi_values.h"
#include "thread_bridge.h"

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

Napi::Value HoldProcessLock(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "holdProcessLock(path: string)");
  std::string err = runboard::HoldProcessLock(info[0].As<Napi::String>().Utf8Value());
  if (err == "held") return Napi::Boolean::New(env, false);
  if (!err.empty()) throw Napi::Error::New(env, err);
  return Napi::Boolean::New(env, true);
}

using namespace runboard::napi;  // NOLINT: the marshalling helpers

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

// A JavaScript string of ASCII text (element_json.h writes nothing else): a one-byte copy, where
// Napi::String::New decodes UTF-8 (15+ ms for a 1.5 MB read).
Napi::String AsciiString(Napi::Env env, const std::string& s) {
  napi_value v;
  NAPI_THROW_IF_FAILED(env, napi_create_string_latin1(env, s.data(), s.size(), &v), Napi::String());
  return Napi::String(env, v);
}

// compact.ts compactTables (pairs as flat arrays) and the short roles to keep.
d::CompactRules CompactRulesFrom(const Napi::Object& c) {
  d::CompactRules rules;
  auto pairs = [&](const char* key, std::unordered_map<std::string, std::string>& into) {
    if (!c.Get(key).IsArray()) throw Napi::TypeError::New(c.Env(), std::string("compact.") + key + " must be an array");
    auto a = c.Get(key).As<Napi::Array>();
    for (uint32_t i = 0; i + 1 < a.Length(); i += 2)
      into[a.Get(i).ToString().Utf8Value()] = a.Get(i + 1).ToString().Utf8Value();
  };
  pairs("roles", rules.roles);
  pairs("actions", rules.actions);
  if (c.Get("keep").IsArray()) {
    auto keep = c.Get("keep").As<Napi::Array>();
    for (uint32_t i = 0; i < keep.Length(); i++) rules.keep.insert(keep.Get(i).ToString().Utf8Value());
  }
  return rules;
}

// An Element of the facade (types.ts) back into the reader's shape: for the compact tree's test only.
d::Element ElementFrom(const Napi::Object& o) {
  d::Element e;
  e.id = static_cast<int>(Int(o, "id", 0));
  e.role = Str(o, "role");
  e.name = Str(o, "name");
  e.value = Str(o, "value");
  e.description = Str(o, "description");
  if (o.Get("bounds").IsArray()) e.bounds = RectFrom(o.Get("bounds"));
  const std::pair<const char*, uint32_t> bits[] = {
      {"focused", d::kFocused}, {"enabled", d::kEnabled},   {"selected", d::kSelected},   {"visible", d::kVisible},
      {"checked", d::kChecked}, {"editable", d::kEditable}, {"focusable", d::kFocusable},
  };
  for (auto& [key, bit] : bits)
    if (Bool(o, key, false)) e.states |= bit;
  e.secret = Bool(o, "secret", false);
  if (o.Get("actions").IsArray()) {
    auto a = o.Get("actions").As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); i++) e.actions.push_back(a.Get(i).ToString().Utf8Value());
  }
  if (o.Get("children").IsArray()) {
    auto a = o.Get("children").As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); i++) e.children.push_back(ElementFrom(a.Get(i).As<Napi::Object>()));
  }
  return e;
}

// The addon's compact tree of given elements (tests: it must be compact.ts toCompact's, rule by rule).
Napi::Value CompactJsonForTest(const Napi::CallbackInfo& info) {
  if (info.Length() < 2 || !info[0].IsArray() || !info[1].IsObject())
    throw Napi::TypeError::New(info.Env(), "expected (elements, compact tables)");
  std::vector<d::Element> els;
  auto a = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); i++) els.push_back(ElementFrom(a.Get(i).As<Napi::Object>()));
  std::string out;
  d::AppendCompactJson(out, els, CompactRulesFrom(info[1].As<Napi::Object>()));
  return AsciiString(info.Env(), out);
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
  // What the reader hands over, each as JSON made on the desktop thread (element_json.h): the elements
  // (unless `elements: false`), desktop-cli's signatures, and the compact tree by compact.ts's tables.
  bool elements = Bool(o, "elements", true);
  bool signatures = Bool(o, "signatures", false);
  std::shared_ptr<d::CompactRules> compact;
  if (o.Get("compact").IsObject())
    compact = std::make_shared<d::CompactRules>(CompactRulesFrom(o.Get("compact").As<Napi::Object>()));
  return Run(info.Env(), [opts, elements, signatures, compact]() -> Marshal {
    auto r = std::make_shared<d::ReadResult>(d::ReadTree(opts));
    auto json = std::make_shared<std::string>();
    if (elements) d::AppendElementsJson(*json, r->elements);
    auto sigs = std::make_shared<std::string>();
    if (signatures) d::AppendSignaturesJson(*sigs, r->elements, r->window.bounds.x, r->window.bounds.y);
    auto tree = std::make_shared<std::string>();
    if (compact) d::AppendCompactJson(*tree, r->elements, *compact);
    r->elements.clear();
    return [r, json, sigs, tree, elements, signatures, compact](Napi::Env env) {
      auto out = Napi::Object::New(env);
      out.Set("window", WindowValue(env, r->window));
      out.Set("scale", r->scale);
      if (elements) out.Set("elementsJson", AsciiString(env, *json));
      if (signatures) out.Set("signaturesJson", AsciiString(env, *sigs));
      if (compact) out.Set("compactJson", AsciiString(env, *tree));
      auto stats = Napi::Object::New(env);
      stats.Set("nodes", r->stats.nodes);
      stats.Set("returned", r->stats.returned);
      stats.Set("roundTrips", r->stats.roundTrips);
      stats.Set("ms", r->stats.ms);
      stats.Set("kept", r->stats.kept);
      stats.Set("refreshed", r->stats.refreshed);
      out.Set("stats", stats);
      return out;
    };
  });
}

Napi::Value KeepTrees(const Napi::CallbackInfo& info) {
  bool on = info.Length() > 0 && info[0].ToBoolean().Value();
  return Run(info.Env(), [on]() -> Marshal {
    d::KeepTrees(on);
    return Undefined();
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
  bool waitHandled = IntArg(info, 2, 0) != 0;
  return Run(info.Env(), [text, delay, waitHandled]() -> Marshal {
    d::TypeText(text, delay, waitHandled);
    return Undefined();
  });
}

Napi::Value Key(const Napi::CallbackInfo& info) {
  std::string combo = StrArg(info, 0);
  int delay = IntArg(info, 1, 0);
  bool waitHandled = IntArg(info, 2, 0) != 0;
  return Run(info.Env(), [combo, delay, waitHandled]() -> Marshal {
    d::KeyCombo(combo, delay, waitHandled);
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
  exports.Set("holdProcessLock", Napi::Function::New(env, HoldProcessLock));
  InitDesktopBridge(env);
  exports.Set("desktopListWindows", Napi::Function::New(env, ListWindows));
  exports.Set("desktopListMonitors", Napi::Function::New(env, ListMonitors));
  exports.Set("desktopListApps", Napi::Function::New(env, ListApps));
  exports.Set("desktopRead", Napi::Function::New(env, Read));
  exports.Set("desktopKeepTrees", Napi::Function::New(env, KeepTrees));
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
  exports.Set("Watcher", DefineWatcher(env));
  exports.Set("Recorder", DefineRecorder(env));
  exports.Set("encodeImage", Napi::Function::New(env, EncodeImage));
  exports.Set("desktopNaiveWalkForBench", Napi::Function::New(env, NaiveWalk));
  exports.Set("desktopCompactJsonForTest", Napi::Function::New(env, CompactJsonForTest));
  return exports;
}

}  // namespace

NODE_API_MODULE(runboard_native, Init)
