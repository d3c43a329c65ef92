// Capture capability: pixels of the screen or of one window, cursor drawn in, scaled, encoded.
#pragma once
#include "common/desktop_types.h"

namespace runboard::desktop {

struct CaptureOptions {
  WindowQuery target;  // empty: the whole screen
  bool wholeScreen = true;
  bool hasRegion = false;
  Rect region;                 // a screen region instead of a window
  double scale = 1;            // 0.05 .. 1
  std::string format = "png";  // png | jpeg | raw (RGBA)
  int quality = 80;            // JPEG quality
  bool cursor = true;
};

struct CaptureResult {
  std::vector<uint8_t> data;
  int width = 0, height = 0;
  Rect source;  // captured screen rectangle, physical pixels
  std::string format;
};

CaptureResult Capture(const CaptureOptions& options);

// Encodes RGBA rows as "png" or "jpeg" (pure: any thread; the encoders Capture uses).
std::vector<uint8_t> EncodeImage(const std::vector<uint8_t>& rgba, int width, int height, const std::string& format,
                                 int quality);

}  // namespace runboard::desktop
