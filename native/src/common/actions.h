// Actions capability: perform an element's accessibility action (press, activate, ...) directly.
#pragma once
#include "common/desktop_types.h"

namespace runboard::desktop {

// `elementId` is the Element::id of a ReadTree over the same target; `action` is an action name
// (or "" for the element's first action). Returns the action name performed.
std::string DoAction(const WindowQuery& target, int elementId, const std::string& action);

}  // namespace runboard::desktop
