#!/usr/bin/env bash
# Checks that native/'s C++ follows .clang-format (Debian's clang-format, scripts/apt-packages.txt).
# `--fix` rewrites the files instead of checking them.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang-format >/dev/null; then
  echo "clang-format is missing: run bash scripts/setup.sh (it installs scripts/apt-packages.txt)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files 'native/*.cc' 'native/*.h')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
elif ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "native/ C++ is not formatted: run bash scripts/check-cpp-format.sh --fix" >&2
  exit 1
fi
