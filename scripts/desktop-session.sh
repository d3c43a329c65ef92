#!/usr/bin/env bash
# A headless test desktop: Xvfb + its own session D-Bus + the AT-SPI bus + openbox (EWMH), torn down
# together. See shared/DESKTOP-NOTES.md for why each piece is started this way.
#
#   scripts/desktop-session.sh run -- CMD [ARGS...]   start a desktop, run CMD inside it, tear it down
#   scripts/desktop-session.sh start ENVFILE          start a desktop, write its environment to ENVFILE
#                                                      (KEY=VALUE lines, READY=1 last), stay in the
#                                                      foreground until SIGTERM/SIGINT, then tear down
# DESKTOP_SIZE=WxHxD sets the screen (default 1280x800x24).
# DESKTOP_MONITORS=WxH,WxH[,...] gives the desktop several monitors side by side, left to right (RandR
#   outputs, as on a machine with several screens). Xvfb has a single output, so this runs Xorg with the
#   dummy video driver instead (packages xserver-xorg-core, xserver-xorg-video-dummy, x11-xserver-utils).
set -euo pipefail

mode=${1:-}
case "$mode" in
  run) shift; [ "${1:-}" = "--" ] && shift; [ $# -gt 0 ] || { echo "usage: $0 run -- CMD [ARGS...]" >&2; exit 2; } ;;
  start) envfile=${2:?usage: $0 start ENVFILE} ;;
  *) echo "usage: $0 run -- CMD [ARGS...] | $0 start ENVFILE" >&2; exit 2 ;;
esac

for tool in Xvfb dbus-daemon openbox; do
  command -v "$tool" >/dev/null || { echo "desktop-session: $tool is missing; install scripts/apt-packages.txt (scripts/setup.sh does)" >&2; exit 3; }
done
launcher=/usr/libexec/at-spi-bus-launcher
[ -x "$launcher" ] || { echo "desktop-session: $launcher is missing; install at-spi2-core" >&2; exit 3; }

tmp=$(mktemp -d /tmp/runboard-desktop.XXXXXX)
pids=()
cleanup() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do wait "${pids[i]}" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

wait_for() { # wait_for SECONDS COMMAND... : poll until COMMAND succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.02
  done
}

# held N: display N is taken: a live server's lock, or a socket with no lock. The lock of a server that
# died (killed) does not hold it: an X server starting there removes that lock and the stale socket
# (as tests/helpers/xvfb.ts displayHeld; every crash used to waste a number for good).
held() {
  local lock="/tmp/.X$1-lock" pid
  if [ -e "$lock" ]; then
    pid=$(tr -dc 0-9 <"$lock" 2>/dev/null)
    [ -z "$pid" ] || [ -d "/proc/$pid" ] # no pid yet: being written
    return
  fi
  [ -e "/tmp/.X11-unix/X$1" ]
}

# start_x SECONDS LOG CMD...: starts the X server CMD on a display number of its own and exports DISPLAY
# once the server says it listens (-displayfd, given the number). The number is picked here (500-699,
# not held), not by the server (-displayfd alone): that takes the lowest free number, which servers
# starting at the same moment (tests run side by side) take too, and a display it reported was seen
# refused for seconds.
start_x() {
  local secs=$1 log=$2; shift 2
  local tries n pid deadline
  n=$((500 + RANDOM % 200))
  for ((tries = 0; tries < 40; tries++, n = 500 + (n - 499) % 200)); do
    held "$n" && continue
    # Ready when the server says so: given its number, -displayfd writes it once the sockets listen
    # (a new socket can get a dead server's inode number back, so "a socket with another inode" could
    # wait for ever: session 18).
    : >"$tmp/displayfd"
    "$@" ":$n" -displayfd 3 3>"$tmp/displayfd" >"$log" 2>&1 &
    pid=$!
    deadline=$((SECONDS + secs))
    while kill -0 "$pid" 2>/dev/null; do
      if [ -s "$tmp/displayfd" ]; then
        pids+=("$pid")
        export DISPLAY=":$n"
        return 0
      fi
      [ $SECONDS -lt $deadline ] || { kill -9 "$pid" 2>/dev/null; break; }
      sleep 0.02
    done
    wait "$pid" 2>/dev/null || true # taken meanwhile (or too slow): the next number
  done
  echo "desktop-session: the X server did not start: $(tail -5 "$log")" >&2
  exit 4
}

# 1. The X server.
if [ -z "${DESKTOP_MONITORS:-}" ]; then
  start_x 10 "$tmp/xvfb.log" Xvfb -screen 0 "${DESKTOP_SIZE:-1280x800x24}" -nolisten tcp -noreset
else
  for tool in Xorg xrandr gtf; do
    command -v "$tool" >/dev/null || { echo "desktop-session: $tool is missing (DESKTOP_MONITORS needs xserver-xorg-core, xserver-xorg-video-dummy, x11-xserver-utils)" >&2; exit 3; }
  done
  cat >"$tmp/xorg.conf" <<'CONF'
Section "Device"
  Identifier "dummy"
  Driver "dummy"
  VideoRam 256000
EndSection
Section "Monitor"
  Identifier "monitor"
  HorizSync 5.0-1000.0
  VertRefresh 5.0-200.0
EndSection
Section "Screen"
  Identifier "screen"
  Device "dummy"
  Monitor "monitor"
  DefaultDepth 24
  SubSection "Display"
    Depth 24
    Virtual 8192 4096
  EndSubSection
EndSection
Section "ServerFlags"
  Option "AutoAddDevices" "false"
EndSection
CONF
  start_x 15 "$tmp/xorg.out" Xorg -config "$tmp/xorg.conf" -logfile "$tmp/xorg.log" -nolisten tcp -noreset
  # One dummy output per monitor, each with a mode of its size, placed left to right.
  i=0; prev=
  IFS=, read -ra sizes <<<"$DESKTOP_MONITORS"
  for size in "${sizes[@]}"; do
    w=${size%x*}; h=${size#*x}
    read -ra line < <(gtf "$w" "$h" 60 | grep Modeline)
    modename="rb-${w}x${h}"
    xrandr --newmode "$modename" "${line[@]:2}" 2>/dev/null || true # already there for a second monitor of that size
    xrandr --addmode "DUMMY$i" "$modename"
    xrandr --output "DUMMY$i" --mode "$modename" ${prev:+--right-of "$prev"} $([ $i = 0 ] && echo --primary)
    prev="DUMMY$i"; i=$((i + 1))
  done
fi

# 2. A session bus at a known socket, exported to everything after it (else libdbus autolaunches a
#    second bus, which starts a second AT-SPI bus: the "two buses" trap).
dbus-daemon --session --nofork --nopidfile --address="unix:path=$tmp/bus" 2>"$tmp/dbus.log" &
pids+=($!)
export DBUS_SESSION_BUS_ADDRESS="unix:path=$tmp/bus"
wait_for 10 test -S "$tmp/bus" || { echo "desktop-session: dbus-daemon did not start" >&2; exit 4; }
unset NO_AT_BRIDGE AT_SPI_BUS_ADDRESS

# 3. The AT-SPI bus, now rather than on first use; it publishes its address on the root window.
"$launcher" --launch-immediately 2>"$tmp/atspi.log" &
pids+=($!)
wait_for 10 dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress ||
  { echo "desktop-session: the AT-SPI bus did not start" >&2; exit 4; }

# 4. A window manager with EWMH (_NET_ACTIVE_WINDOW, _NET_CLIENT_LIST, _NET_FRAME_EXTENTS).
openbox --sm-disable 2>"$tmp/openbox.log" &
pids+=($!)
if command -v xprop >/dev/null; then
  wait_for 10 sh -c 'xprop -root _NET_SUPPORTING_WM_CHECK | grep -q "window id"' ||
    { echo "desktop-session: openbox did not start" >&2; exit 4; }
else
  sleep 0.3
fi

if [ "$mode" = run ]; then
  set +e
  "$@"
  rc=$?
  exit $rc
fi

printf 'DISPLAY=%s\nDBUS_SESSION_BUS_ADDRESS=%s\nREADY=1\n' "$DISPLAY" "$DBUS_SESSION_BUS_ADDRESS" >"$envfile.tmp"
mv "$envfile.tmp" "$envfile"
while :; do sleep 3600 & wait $! || true; done
