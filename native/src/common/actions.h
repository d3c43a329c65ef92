// Actions capability: perform an element's accessibility action (press, activate, ...) directly.
#pragma once
#include "common/desktop_types.h"

namespace runboard::desktop {

// `elementId` is the Element::id of a ReadTree over the same target; `action` is an action name
// (or "" for the element's first action). Returns the action name performed.
std::string DoAction(const WindowQuery& target, int elementId, const std::string& action);

// Sets an element's text (editable text) or, for a number, its value (sliders, spin buttons) through
// the accessibility API, without input. Returns "text" or "value": what was set.
std::string SetValue(const WindowQuery& target, int elementId, const std::string& value);

}  // namespace runboard::desktop
