// Libraries opened at their first use instead of with the addon. Every process that loads the addon
// (each desktop-cli command is one) pays for every library it links: the dynamic linker resolves
// their symbols at load time, each lookup going through Node's large symbol table first. Opened here:
// - GLib/GObject/GIO (gio_lazy.cc), the largest tree (libmount, libblkid, libselinux, pcre2, libffi,
//   …), for AT-SPI over D-Bus: `type` and `click --x/--y` never load it;
// - libatspi, which brings eight more (libdbus, libsystemd, libgcrypt, lz4, zstd, …), for role names
//   and the benchmark's naive walk (every other AT-SPI call is plain D-Bus through GIO);
// - libXft, which brings six more (fontconfig, freetype, expat, brotli, Xrender), for the takeover
//   HUD's text only (watcher_linux.cc; without it the HUD falls back to the core X font);
// - libpng and libjpeg, for image encoding only (capture_linux.cc; without them encoding fails with a
//   CAPTURE_FAILED error that names the missing library).
// What stays linked is libX11 and its small extension libraries (17 libraries in all, from 35);
// native/scripts/build.mjs fails if a function of a library above is linked directly.
#pragma once
#include <dlfcn.h>

#include <string>

#include "common/desktop_types.h"

namespace runboard::desktop::lazy {

// A library opened (RTLD_LAZY | RTLD_LOCAL: its symbols stay out of the process's global scope);
// `handle` is null, and `error` says why, when it could not be.
struct Lib {
  const char* soname;
  const char* package;  // what provides it (Debian's package name), for error messages
  void* handle;
  std::string error;
};

inline Lib Open(const char* soname, const char* package, int moreFlags = 0) {
  void* h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL | moreFlags);
  const char* e = h ? nullptr : dlerror();
  return Lib{soname, package, h, e ? e : ""};
}

inline const Lib& Atspi() {
  static const Lib lib = Open("libatspi.so.0", "libatspi2.0-0");
  return lib;
}

inline const Lib& Xft() {
  static const Lib lib = Open("libXft.so.2", "libxft2");
  return lib;
}

// GLib, GObject and GIO (gio_lazy.cc).
const Lib& Gio();

template <typename F>
F Sym(const Lib& lib, const char* name) {
  return lib.handle ? reinterpret_cast<F>(dlsym(lib.handle, name)) : nullptr;
}

// `f`, or a DesktopError with `code` saying which library or function is missing.
template <typename F>
F Need(F f, const Lib& lib, const char* name, const char* code) {
  if (f) return f;
  if (!lib.handle)
    throw DesktopError(code, std::string("cannot load ") + lib.soname + " (install " + lib.package + "): " + lib.error);
  throw DesktopError(code, std::string("cannot find ") + name + " in " + lib.soname);
}

}  // namespace runboard::desktop::lazy

// The function `fn` (declared by the library's header) from library `lib` (a function returning a
// lazy::Lib, e.g. lazy::Atspi), looked up once per call site; nullptr when the library or the
// function is missing.
#define RB_LAZY(lib, fn)                                                         \
  ([] {                                                                          \
    static auto f = ::runboard::desktop::lazy::Sym<decltype(&::fn)>(lib(), #fn); \
    return f;                                                                    \
  }())
