// Capture on Linux: XShmGetImage into a shared segment kept between calls (the fast path for repeated
// captures, ~4x faster than XGetImage), XGetImage when XShm or shared memory is missing; the cursor
// from XFixes is blended in; box-filter downscale; PNG (libpng, fast level) or JPEG (libjpeg), both
// opened at the first encoding (linux/lazy_lib.h).
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xfixes.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>  // before jpeglib.h, which uses FILE without including it
#include <cstring>

#include <jpeglib.h>
#include <png.h>

#include "common/capture.h"
#include "linux/atspi_tree.h"
#include "linux/lazy_lib.h"

namespace runboard::desktop {
namespace {

#define RB_STR2(x) #x
#define RB_STR(x) RB_STR2(x)

// The libraries the headers above belong to (libpng16.so.16, libjpeg.so.62 on Debian).
const lazy::Lib& PngLib() {
  static const lazy::Lib lib =
      lazy::Open("libpng" RB_STR(PNG_LIBPNG_VER_DLLNUM) ".so." RB_STR(PNG_LIBPNG_VER_SONUM), "libpng16-16");
  return lib;
}
const lazy::Lib& JpegLib() {
#if JPEG_LIB_VERSION == 62
  static const lazy::Lib lib = lazy::Open("libjpeg.so.62", "libjpeg62-turbo");
#elif JPEG_LIB_VERSION == 70
  static const lazy::Lib lib = lazy::Open("libjpeg.so.7", "libjpeg7");
#else
  static const lazy::Lib lib = lazy::Open("libjpeg.so.8", "libjpeg-turbo8");
#endif
  return lib;
}

// Each function the encoders call, looked up at the first encoding; a missing library or function is
// a CAPTURE_FAILED error naming it (and the next encoding tries again).
#define RB_FN(lib, fn) \
  decltype(&::fn) fn = lazy::Need(lazy::Sym<decltype(&::fn)>(lib(), #fn), lib(), #fn, kCaptureFailed);
struct PngApi {
  RB_FN(PngLib, png_create_write_struct)
  RB_FN(PngLib, png_create_info_struct)
  RB_FN(PngLib, png_set_longjmp_fn)
  RB_FN(PngLib, png_destroy_write_struct)
  RB_FN(PngLib, png_get_io_ptr)
  RB_FN(PngLib, png_set_write_fn)
  RB_FN(PngLib, png_set_IHDR)
  RB_FN(PngLib, png_set_compression_level)
  RB_FN(PngLib, png_set_filter)
  RB_FN(PngLib, png_write_info)
  RB_FN(PngLib, png_set_filler)
  RB_FN(PngLib, png_write_row)
  RB_FN(PngLib, png_write_end)
};
struct JpegApi {
  RB_FN(JpegLib, jpeg_std_error)
  RB_FN(JpegLib, jpeg_CreateCompress)
  RB_FN(JpegLib, jpeg_destroy_compress)
  RB_FN(JpegLib, jpeg_mem_dest)
  RB_FN(JpegLib, jpeg_set_defaults)
  RB_FN(JpegLib, jpeg_set_quality)
  RB_FN(JpegLib, jpeg_start_compress)
  RB_FN(JpegLib, jpeg_write_scanlines)
  RB_FN(JpegLib, jpeg_finish_compress)
};
#undef RB_FN
const PngApi& Png() {
  static const PngApi api;
  return api;
}
const JpegApi& Jpeg() {
  static const JpegApi api;
  return api;
}

struct ShmImage {
  XImage* image = nullptr;
  XShmSegmentInfo info{};
  int w = 0, h = 0;

  void Release(Display* d) {
    if (!image) return;
    XShmDetach(d, &info);
    XDestroyImage(image);
    shmdt(info.shmaddr);
    image = nullptr;
  }
};

ShmImage& Shm() {
  static ShmImage s;
  return s;
}

// Grabs a root-window rectangle as RGBA.
std::vector<uint8_t> Grab(Display* d, Window root, const Rect& r) {
  static int shmState = -1;  // -1 unknown, 0 no, 1 yes
  if (shmState < 0) shmState = XShmQueryExtension(d) ? 1 : 0;
  XImage* img = nullptr;
  bool owned = false;
  if (shmState == 1) {
    auto& s = Shm();
    if (s.w != r.w || s.h != r.h) {
      s.Release(d);
      Visual* visual = DefaultVisual(d, DefaultScreen(d));
      s.image = XShmCreateImage(d, visual, DefaultDepth(d, DefaultScreen(d)), ZPixmap, nullptr, &s.info, r.w, r.h);
      if (s.image) {
        // No shared memory for us (kernel.shmmax/shmall too small, an IPC namespace without it): never
        // hand the X server a segment that does not exist; capture with XGetImage from now on, as when
        // the server has no XShm.
        size_t bytes = static_cast<size_t>(s.image->bytes_per_line) * s.image->height;
        s.info.shmid = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
        void* addr = s.info.shmid < 0 ? reinterpret_cast<void*>(-1) : shmat(s.info.shmid, nullptr, 0);
        if (addr == reinterpret_cast<void*>(-1)) {
          if (s.info.shmid >= 0) shmctl(s.info.shmid, IPC_RMID, nullptr);
          XDestroyImage(s.image);
          s.image = nullptr;
          shmState = 0;
          return Grab(d, root, r);
        }
        s.info.shmaddr = s.image->data = static_cast<char*>(addr);
        s.info.readOnly = False;
        XShmAttach(d, &s.info);
        XSync(d, False);
        shmctl(s.info.shmid, IPC_RMID, nullptr);  // freed once both sides detach
        s.w = r.w;
        s.h = r.h;
      }
    }
    if (s.image && XShmGetImage(d, root, s.image, r.x, r.y, AllPlanes)) img = s.image;
  }
  if (!img) {
    img = XGetImage(d, root, r.x, r.y, r.w, r.h, AllPlanes, ZPixmap);
    owned = true;
  }
  if (!img) throw DesktopError(kCaptureFailed, "the X server returned no image");
  std::vector<uint8_t> rgba(static_cast<size_t>(r.w) * r.h * 4);
  bool fast = img->bits_per_pixel == 32 && img->red_mask == 0xff0000 && img->blue_mask == 0xff;
  for (int y = 0; y < r.h; y++) {
    uint8_t* out = &rgba[static_cast<size_t>(y) * r.w * 4];
    if (fast) {
      const uint8_t* in = reinterpret_cast<const uint8_t*>(img->data) + static_cast<size_t>(y) * img->bytes_per_line;
      for (int x = 0; x < r.w; x++, in += 4, out += 4) {
        out[0] = in[2];
        out[1] = in[1];
        out[2] = in[0];
        out[3] = 255;
      }
    } else {
      for (int x = 0; x < r.w; x++, out += 4) {
        unsigned long p = XGetPixel(img, x, y);
        out[0] = (p >> 16) & 0xff;
        out[1] = (p >> 8) & 0xff;
        out[2] = p & 0xff;
        out[3] = 255;
      }
    }
  }
  if (owned) XDestroyImage(img);
  return rgba;
}

void DrawCursor(Display* d, std::vector<uint8_t>& rgba, const Rect& r) {
  int ev, err;
  if (!XFixesQueryExtension(d, &ev, &err)) return;
  XFixesCursorImage* c = XFixesGetCursorImage(d);
  if (!c) return;
  int ox = c->x - c->xhot - r.x, oy = c->y - c->yhot - r.y;
  for (int cy = 0; cy < c->height; cy++) {
    int y = oy + cy;
    if (y < 0 || y >= r.h) continue;
    for (int cx = 0; cx < c->width; cx++) {
      int x = ox + cx;
      if (x < 0 || x >= r.w) continue;
      unsigned long p = c->pixels[cy * c->width + cx];  // premultiplied ARGB
      unsigned a = (p >> 24) & 0xff;
      if (!a) continue;
      uint8_t* o = &rgba[(static_cast<size_t>(y) * r.w + x) * 4];
      o[0] = static_cast<uint8_t>(((p >> 16) & 0xff) + o[0] * (255 - a) / 255);
      o[1] = static_cast<uint8_t>(((p >> 8) & 0xff) + o[1] * (255 - a) / 255);
      o[2] = static_cast<uint8_t>((p & 0xff) + o[2] * (255 - a) / 255);
    }
  }
  XFree(c);
}

// floor(v / n) as a multiply and a shift: exact for v * n < 2^40 (here v <= 255 * 100 * 100, n <= 100),
// and a per-pixel division is most of what a naive box filter costs.
struct Divider {
  uint64_t m = 0;
  explicit Divider(unsigned n) : m(((uint64_t{1} << 40) + n - 1) / n) {}
  unsigned operator()(unsigned v) const { return static_cast<unsigned>((v * m) >> 40); }
};

// Box filter: each output pixel is the mean (truncated) of the input pixels its box covers. Separable:
// the rows of a box are summed into one row first, then each box's columns, so the work is one pass
// over the input plus one over that row per output row.
std::vector<uint8_t> Downscale(const std::vector<uint8_t>& in, int w, int h, int ow, int oh) {
  std::vector<uint8_t> out(static_cast<size_t>(ow) * oh * 4);
  std::vector<int> xs(ow + 1);
  std::vector<Divider> byWidth;
  byWidth.reserve(ow);
  for (int ox = 0; ox < ow; ox++) {
    xs[ox] = ox * w / ow;
    int x1 = std::max(xs[ox] + 1, (ox + 1) * w / ow);
    byWidth.emplace_back(static_cast<unsigned>(x1 - xs[ox]));
  }
  std::vector<uint32_t> rows(static_cast<size_t>(w) * 4);
  for (int oy = 0; oy < oh; oy++) {
    int y0 = oy * h / oh, y1 = std::max(y0 + 1, (oy + 1) * h / oh);
    std::fill(rows.begin(), rows.end(), 0);
    for (int y = y0; y < y1; y++) {
      const uint8_t* src = &in[static_cast<size_t>(y) * w * 4];
      for (size_t i = 0; i < rows.size(); i++) rows[i] += src[i];
    }
    Divider byHeight(static_cast<unsigned>(y1 - y0));
    uint8_t* dst = &out[static_cast<size_t>(oy) * ow * 4];
    for (int ox = 0; ox < ow; ox++, dst += 4) {
      int x0 = xs[ox], x1 = std::max(x0 + 1, (ox + 1) * w / ow);
      unsigned sum[4] = {0, 0, 0, 0};
      for (int x = x0; x < x1; x++)
        for (int k = 0; k < 4; k++) sum[k] += rows[static_cast<size_t>(x) * 4 + k];
      // floor(floor(s / a) / b) == floor(s / (a * b)): the same truncated mean as one division.
      for (int k = 0; k < 4; k++) dst[k] = static_cast<uint8_t>(byWidth[ox](byHeight(sum[k])));
    }
  }
  return out;
}

void PngWrite(png_structp png, png_bytep data, png_size_t len) {
  auto* out = static_cast<std::vector<uint8_t>*>(Png().png_get_io_ptr(png));
  out->insert(out->end(), data, data + len);
}

std::vector<uint8_t> EncodePng(const std::vector<uint8_t>& rgba, int w, int h) {
  const PngApi& p = Png();
  std::vector<uint8_t> out;
  png_structp png = p.png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = p.png_create_info_struct(png);
  if (setjmp(*p.png_set_longjmp_fn(png, longjmp, sizeof(jmp_buf)))) {  // png_jmpbuf(png)
    p.png_destroy_write_struct(&png, &info);
    throw DesktopError(kCaptureFailed, "PNG encoding failed");
  }
  p.png_set_write_fn(png, &out, PngWrite, nullptr);
  p.png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
  p.png_set_compression_level(png, 1);
  p.png_set_filter(png, 0, PNG_FILTER_SUB);
  p.png_write_info(png, info);
  p.png_set_filler(png, 0, PNG_FILLER_AFTER);  // input rows are RGBA; drop A
  for (int y = 0; y < h; y++) p.png_write_row(png, const_cast<png_bytep>(&rgba[static_cast<size_t>(y) * w * 4]));
  p.png_write_end(png, nullptr);
  p.png_destroy_write_struct(&png, &info);
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
};

std::vector<uint8_t> EncodeJpeg(const std::vector<uint8_t>& rgba, int w, int h, int quality) {
  const JpegApi& j = Jpeg();
  jpeg_compress_struct cinfo;
  JpegError jerr;
  cinfo.err = j.jpeg_std_error(&jerr.mgr);
  jerr.mgr.error_exit = [](j_common_ptr c) { longjmp(reinterpret_cast<JpegError*>(c->err)->jump, 1); };
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  if (setjmp(jerr.jump)) {
    j.jpeg_destroy_compress(&cinfo);
    free(mem);
    throw DesktopError(kCaptureFailed, "JPEG encoding failed");
  }
  j.jpeg_CreateCompress(&cinfo, JPEG_LIB_VERSION, sizeof(cinfo));  // jpeg_create_compress(&cinfo)
  j.jpeg_mem_dest(&cinfo, &mem, &size);
  cinfo.image_width = w;
  cinfo.image_height = h;
#ifdef JCS_EXTENSIONS  // libjpeg-turbo reads RGBA rows as they are: no copy per row
  cinfo.input_components = 4;
  cinfo.in_color_space = JCS_EXT_RGBX;
#else
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
#endif
  j.jpeg_set_defaults(&cinfo);
  j.jpeg_set_quality(&cinfo, std::clamp(quality, 1, 100), TRUE);
  j.jpeg_start_compress(&cinfo, TRUE);
#ifndef JCS_EXTENSIONS
  std::vector<uint8_t> row(static_cast<size_t>(w) * 3);
#endif
  while (cinfo.next_scanline < cinfo.image_height) {
    const uint8_t* in = &rgba[static_cast<size_t>(cinfo.next_scanline) * w * 4];
#ifdef JCS_EXTENSIONS
    JSAMPROW rows[1] = {const_cast<JSAMPROW>(in)};
#else
    for (int x = 0; x < w; x++) {
      row[x * 3] = in[x * 4];
      row[x * 3 + 1] = in[x * 4 + 1];
      row[x * 3 + 2] = in[x * 4 + 2];
    }
    JSAMPROW rows[1] = {row.data()};
#endif
    j.jpeg_write_scanlines(&cinfo, rows, 1);
  }
  j.jpeg_finish_compress(&cinfo);
  j.jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> out(mem, mem + size);
  free(mem);
  return out;
}

}  // namespace

std::vector<uint8_t> EncodeImage(const std::vector<uint8_t>& rgba, int width, int height, const std::string& format,
                                 int quality) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * height * 4)
    throw DesktopError(kInvalidArgument, "the image's size does not match its RGBA data (width * height * 4 bytes)");
  if (format == "png") return EncodePng(rgba, width, height);
  if (format == "jpeg" || format == "jpg") return EncodeJpeg(rgba, width, height, quality);
  throw DesktopError(kInvalidArgument, "unknown image format \"" + format + "\" (png, jpeg)");
}

CaptureResult Capture(const CaptureOptions& o) {
  auto& s = x11::Session::Get();
  Rect screen{0, 0, s.screenWidth(), s.screenHeight()};
  Rect r = screen;
  if (o.hasRegion) {
    r = o.region;
  } else if (!o.wholeScreen) {
    auto matches = x11::MatchWindows(atspi::WindowsWithApps(), o.target);
    if (matches.empty()) throw DesktopError(kAppNotFound, "no window matches the query");
    r = matches[0].outer;
  }
  int x1 = std::max(r.x, 0), y1 = std::max(r.y, 0);
  int x2 = std::min(r.x + r.w, screen.w), y2 = std::min(r.y + r.h, screen.h);
  r = {x1, y1, x2 - x1, y2 - y1};
  if (r.w <= 0 || r.h <= 0) throw DesktopError(kCaptureFailed, "the area to capture is off screen");
  auto rgba = Grab(s.dpy(), s.root(), r);
  if (o.cursor) DrawCursor(s.dpy(), rgba, r);
  double scale = std::clamp(o.scale, 0.01, 1.0);
  int ow = std::max(1, static_cast<int>(std::lround(r.w * scale)));
  int oh = std::max(1, static_cast<int>(std::lround(r.h * scale)));
  if (ow != r.w || oh != r.h) rgba = Downscale(rgba, r.w, r.h, ow, oh);
  CaptureResult out;
  out.width = ow;
  out.height = oh;
  out.source = r;
  out.format = o.format;
  if (o.format == "png") out.data = EncodePng(rgba, ow, oh);
  else if (o.format == "jpeg" || o.format == "jpg") out.data = EncodeJpeg(rgba, ow, oh, o.quality), out.format = "jpeg";
  else if (o.format == "raw") out.data = std::move(rgba);
  else throw DesktopError(kInvalidArgument, "unknown image format \"" + o.format + "\" (png, jpeg, raw)");
  return out;
}

}  // namespace runboard::desktop
