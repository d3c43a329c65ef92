// Marshalling only: argument checks, conversion, typed errors. Capabilities live behind the headers
// in src/common and their per-platform implementations.
#include <napi.h>

#include "common/peer.h"
#include "common/sandbox.h"

namespace {

Napi::Value SandboxSupport(const Napi::CallbackInfo& info) {
  auto s = runboard::ProbeSandbox();
  auto out = Napi::Object::New(info.Env());
  out.Set("landlockAbi", s.landlockAbi);
  out.Set("reason", s.landlockReason);
  return out;
}

Napi::Value PeerCredentials(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "peerCredentials(fd: number)");
  runboard::PeerCredentials cred;
  std::string err = runboard::GetPeerCredentials(info[0].As<Napi::Number>().Int32Value(), &cred);
  if (!err.empty()) throw Napi::Error::New(env, err);
  auto out = Napi::Object::New(env);
  out.Set("pid", cred.pid);
  out.Set("uid", cred.uid);
  out.Set("gid", cred.gid);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("sandboxSupport", Napi::Function::New(env, SandboxSupport));
  exports.Set("peerCredentials", Napi::Function::New(env, PeerCredentials));
  return exports;
}

}  // namespace

NODE_API_MODULE(runboard_native, Init)
