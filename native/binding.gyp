{
  # One addon for everything native (sandbox now; desktop read/act/capture later) and one small
  # executable, the run jail, that the supervisor puts between itself and every worker.
  # Sources are picked per platform here and nowhere else.
  "targets": [
    {
      "target_name": "runboard_native",
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "src"],
      "sources": ["src/main.cc"],
      "conditions": [
        ["OS=='linux'", { "sources": ["src/linux/landlock.cc", "src/linux/sandbox_linux.cc", "src/linux/peer_linux.cc"] }]
      ]
    },
    {
      "target_name": "runboard-jail",
      "type": "executable",
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"],
      "include_dirs": ["src"],
      "conditions": [
        ["OS=='linux'", { "sources": ["src/linux/jail.cc", "src/linux/landlock.cc"] }]
      ]
    }
  ]
}
