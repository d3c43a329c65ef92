{
  # One addon for everything native (sandbox now; desktop read/act/capture later) and one small
  # executable, the run jail, that the supervisor puts between itself and every worker.
  # Sources are picked per platform here and nowhere else. GLib/GIO, libatspi, libXft, libpng and
  # libjpeg are headers only here: the addon opens each at its first use (src/linux/lazy_lib.h,
  # src/linux/gio_lazy.cc), so a process that loads the addon does not pay for them and their
  # dependencies (libmount, libdbus, libsystemd, fontconfig, freetype, …).
  "targets": [
    {
      "target_name": "runboard_native",
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "src"],
      "sources": ["src/main.cc", "src/desktop_bridge.cc", "src/watcher_bridge.cc", "src/recorder_bridge.cc", "src/common/element_json.cc"],
      "conditions": [
        ["OS=='linux'", {
          "sources": [
            "src/linux/landlock.cc", "src/linux/sandbox_linux.cc", "src/linux/peer_linux.cc", "src/linux/process_lock_linux.cc",
            "src/linux/x11_session.cc", "src/linux/atspi_bus.cc", "src/linux/atspi_tree.cc", "src/linux/atspi_walk.cc",
            "src/linux/reader_linux.cc", "src/linux/actions_linux.cc", "src/linux/inputter_linux.cc", "src/linux/keys_handled_linux.cc",
            "src/linux/window_manager_linux.cc", "src/linux/capture_linux.cc", "src/linux/naive_walk_linux.cc",
            "src/linux/monitors_linux.cc", "src/linux/watcher_linux.cc", "src/linux/recorder_linux.cc", "src/linux/recorder_sources_linux.cc", "src/linux/recorder_focus_linux.cc", "src/linux/recorder_damage_linux.cc",
            "src/linux/border_linux.cc", "src/linux/gio_lazy.cc", "src/linux/dbus_wire.cc", "src/linux/dbus_wire_budget.cc", "src/linux/atspi_events.cc",
            "src/linux/tree_cache.cc"
          ],
          "cflags_cc": ["<!@(pkg-config --cflags atspi-2 gio-2.0 libpng xft)"],
          "libraries": ["<!@(pkg-config --libs x11 xtst xext xfixes xi xrandr xcomposite xdamage)", "-ldl"]
        }]
      ]
    },
    {
      "target_name": "runboard-jail",
      "type": "executable",
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"],
      "include_dirs": ["src"],
      "conditions": [
        ["OS=='linux'", { "sources": ["src/linux/jail.cc", "src/linux/jail_child.cc", "src/linux/jail_common.cc", "src/linux/jail_options.cc", "src/linux/landlock.cc", "src/linux/live_grants.cc", "src/linux/mounts.cc", "src/linux/pids_limit.cc", "src/linux/seccomp_net.cc", "src/linux/seccomp_connect.cc", "src/linux/output_pump.cc"] }]
      ]
    }
  ]
}
