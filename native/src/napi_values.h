// Argument checks and value builders shared by main.cc's marshalling and the thread bridges beside it
// (desktop_bridge.cc, watcher_bridge.cc, recorder_bridge.cc).
#pragma once
#include <napi.h>

#include <string>

#include "common/desktop_types.h"
#include "common/inputter.h"
#include "common/reader.h"

namespace runboard::napi {

namespace d = runboard::desktop;

inline std::string Str(const Napi::Object& o, const char* key) {
  auto v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
}
inline int64_t Int(const Napi::Object& o, const char* key, int64_t def = 0) {
  auto v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : def;
}
inline double Num(const Napi::Object& o, const char* key, double def) {
  auto v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : def;
}
inline bool Bool(const Napi::Object& o, const char* key, bool def) {
  auto v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : def;
}
inline Napi::Object ObjArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsObject()) return Napi::Object::New(info.Env());
  return info[i].As<Napi::Object>();
}
inline int IntArg(const Napi::CallbackInfo& info, size_t i, int def = 0) {
  return info.Length() > i && info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : def;
}
inline std::string StrArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsString()) throw Napi::TypeError::New(info.Env(), "expected a string argument");
  return info[i].As<Napi::String>().Utf8Value();
}
inline d::Rect RectFrom(const Napi::Value& v) {
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
inline d::WindowQuery QueryFrom(const Napi::Object& o) {
  d::WindowQuery q;
  q.app = Str(o, "app");
  q.title = Str(o, "title");
  q.windowId = static_cast<uint64_t>(Int(o, "windowId"));
  q.pid = static_cast<int>(Int(o, "pid"));
  return q;
}

inline Napi::Array RectValue(Napi::Env env, const d::Rect& r) {
  auto a = Napi::Array::New(env, 4);
  a.Set(0u, r.x);
  a.Set(1u, r.y);
  a.Set(2u, r.w);
  a.Set(3u, r.h);
  return a;
}
inline Napi::Object WindowValue(Napi::Env env, const d::WindowInfo& w) {
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
inline d::MouseButton ButtonArg(const Napi::CallbackInfo& info, size_t i) {
  int b = IntArg(info, i, 1);
  if (b < 1 || b > 3) throw Napi::RangeError::New(info.Env(), "button must be 1 (left), 2 (middle) or 3 (right)");
  return static_cast<d::MouseButton>(b);
}

}  // namespace runboard::napi
