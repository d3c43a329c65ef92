// Marshalling only: argument checks, conversion, typed errors. Capabilities live behind the headers
// in src/common and their per-platform implementations.
#include <napi.h>

#include "common/sandbox.h"

namespace {

Napi::Value SandboxSupport(const Napi::CallbackInfo& info) {
  auto s = runboard::ProbeSandbox();
  auto out = Napi::Object::New(info.Env());
  out.Set("landlockAbi", s.landlockAbi);
  out.Set("reason", s.landlockReason);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("sandboxSupport", Napi::Function::New(env, SandboxSupport));
  return exports;
}

}  // namespace

NODE_API_MODULE(runboard_native, Init)
