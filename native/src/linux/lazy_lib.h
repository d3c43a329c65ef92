// Libraries opened at their first use instead of with the addon. Every process that loads the addon
// (each desktop-cli command is one) pays for every library it links, and libatspi brings eight more
// (libdbus, libsystemd, libgcrypt, lz4, zstd, …) for what few calls need: role names and the
// benchmark's naive walk (every other AT-SPI call is plain D-Bus through GIO). libXft (the HUD's text,
// six more libraries) could be opened the same way; it stays linked for now.
#pragma once
#include <dlfcn.h>

namespace runboard::desktop::lazy {

inline void* Atspi() {
  static void* lib = dlopen("libatspi.so.0", RTLD_LAZY | RTLD_LOCAL);
  return lib;
}

template <typename F>
F Sym(void* lib, const char* name) {
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

}  // namespace runboard::desktop::lazy

// The function `fn` (declared by the library's header) from library `lib` (lazy::Atspi),
// looked up once per call site; nullptr when the library or the function is missing.
#define RB_LAZY(lib, fn)                                                                                    \
  ([] {                                                                                                     \
    static auto f = ::runboard::desktop::lazy::Sym<decltype(&::fn)>(::runboard::desktop::lazy::lib(), #fn); \
    return f;                                                                                               \
  }())
