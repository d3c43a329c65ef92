// A read's elements as JSON text, made on the desktop thread: JavaScript takes the tree with one
// JSON.parse instead of an N-API object per element (and a copy of each in desktop.ts). On a 6,000-node
// page that was ~20 ms of the main thread after the read (docs/bench-desktop.md, session 18).
// Plain C++: no Node, no platform headers.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/desktop_types.h"

namespace runboard::desktop {

// Appends the elements as a JSON array of the facade's Element objects (native/src/desktop/types.ts):
// id, role, name, description, bounds, the state bits as booleans (focused, enabled, selected, visible,
// checked, editable, focusable), secret, actions, children, then value (left out for a secret element).
// The JSON is ASCII: every other character is a \u escape (JavaScript takes ASCII text as a one-byte
// string, a copy, where a 1.5 MB UTF-8 text took 15+ ms to decode). Text that is not valid UTF-8 has each
// bad byte replaced by U+FFFD, as N-API's strings did.
void AppendElementsJson(std::string& out, const std::vector<Element>& elements);

// Appends every element of the tree (pre-order, children included) as one JSON object keyed by id:
// {"<id>":{"p":<platform role>,"e":1 (editable only),"t":<name>,"b":[x,y,w,h]},...}, the bounds relative to
// `origin` (the window's top-left). desktop-cli's read context (native/src/cli/context.ts): what
// `click --id` finds the element by again, made here in one pass (a JavaScript pass over a 6,000-node
// page took 10-25 ms of a one-shot process that never warms up).
void AppendSignaturesJson(std::string& out, const std::vector<Element>& elements, int originX, int originY);

// The compact schema's tables, given by native/src/desktop/compact.ts (`compactTables`): platform role ->
// short role, lowercased platform action -> short action, and the short roles to keep (none: all).
struct CompactRules {
  std::unordered_map<std::string, std::string> roles, actions;
  std::unordered_set<std::string> keep;
};

// Appends the compact tree (a JSON array of CompactElement) that compact.ts `toCompact` makes of the same
// elements, byte for byte: the same rules, in the same order (tests/desktop/desktop.integration compares
// the two on a GTK window and a Chromium page). desktop-cli's reads take it instead of the elements: on a
// 6,000-node page that is ~20 ms less of a one-shot process (docs/bench-desktop.md, session 18).
void AppendCompactJson(std::string& out, const std::vector<Element>& elements, const CompactRules& rules);

// A JSON string literal of s (quotes included), appended to out.
void AppendJsonString(std::string& out, const std::string& s);

}  // namespace runboard::desktop
