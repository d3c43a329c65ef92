#!/usr/bin/python3
# The baseline of the heavy-tree benchmark: a plain pyatspi walk of one window's whole tree, reading
# what desktop-cli read reports (role, name, description, states, extents, children) with pyatspi's
# usual one call per attribute per node. Usage: pyatspi_walk.py <window title substring>; prints the
# number of nodes walked.
import sys

import pyatspi

title = sys.argv[1]
desktop = pyatspi.Registry.getDesktop(0)
frame = None
for app in desktop:
    if app is None:
        continue
    for win in app:
        if win is not None and title in (win.name or ""):
            frame = win
            break
    if frame:
        break
if frame is None:
    sys.exit(f"no window titled {title!r}")

count = 0


def walk(node):
    global count
    count += 1
    node.getRoleName()
    node.name
    node.description
    node.getState()
    try:
        node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    except NotImplementedError:
        pass
    for child in node:
        if child is not None:
            walk(child)


sys.setrecursionlimit(100000)
walk(frame)
print(count)
