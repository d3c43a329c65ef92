// Actions on Linux: AT-SPI Action.DoAction on the element, found by its id in a fresh tree.
#include "common/actions.h"

#include <cstdlib>
#include "linux/atspi_tree.h"

namespace runboard::desktop {

std::string DoAction(const WindowQuery& target, int elementId, const std::string& action) {
  auto t = atspi::LoadWindowTree(target, true);  // whole: ids as a read gives them
  if (elementId < 0 || elementId >= static_cast<int>(t.byId.size()))
    throw DesktopError(kElementNotFound,
                       "no element " + std::to_string(elementId) + " in window \"" + t.window.title + "\"");
  const atspi::Node& n = t.nodes[t.byId[elementId]];
  auto& bus = atspi::Bus::Get();
  std::vector<std::string> names = atspi::ActionNames(bus, t.peer, {n.path})[0];
  std::string err;
  int index = -1;
  for (size_t k = 0; k < names.size(); k++)
    if (action.empty() || names[k] == action) {
      index = static_cast<int>(k);
      break;
    }
  if (index < 0) {
    std::string list;
    for (auto& s : names) list += (list.empty() ? "" : ", ") + s;
    throw DesktopError(kActionFailed, "element " + std::to_string(elementId) + " has no action \"" + action +
                                          "\" (it has: " + (list.empty() ? "none" : list) + ")");
  }
  GVariant* r = bus.CallOne(t.peer, {n.path, "org.a11y.atspi.Action", "DoAction", g_variant_new("(i)", index)}, &err);
  if (!r) throw DesktopError(kActionFailed, "the action failed: " + err);
  gboolean ok = FALSE;
  g_variant_get(r, "(b)", &ok);
  g_variant_unref(r);
  if (!ok) throw DesktopError(kActionFailed, "the app refused action \"" + names[index] + "\"");
  return names[index];
}

std::string SetValue(const WindowQuery& target, int elementId, const std::string& value) {
  auto t = atspi::LoadWindowTree(target, true);  // whole: ids as a read gives them
  if (elementId < 0 || elementId >= static_cast<int>(t.byId.size()))
    throw DesktopError(kElementNotFound,
                       "no element " + std::to_string(elementId) + " in window \"" + t.window.title + "\"");
  const atspi::Node& n = t.nodes[t.byId[elementId]];
  auto& bus = atspi::Bus::Get();
  std::string err;
  // Text first (entries, text areas): EditableText.SetTextContents replaces the whole text.
  GVariant* r = bus.CallOne(
      t.peer, {n.path, "org.a11y.atspi.EditableText", "SetTextContents", g_variant_new("(s)", value.c_str())}, &err);
  if (r) {
    gboolean ok = FALSE;
    g_variant_get(r, "(b)", &ok);
    g_variant_unref(r);
    if (ok) return "text";
    throw DesktopError(kActionFailed, "the app refused to set the text of element " + std::to_string(elementId) +
                                          " (it may be read-only)");
  }
  // Then a number (sliders, spin buttons): the Value interface's CurrentValue property.
  char* end = nullptr;
  double number = std::strtod(value.c_str(), &end);
  if (value.empty() || !end || *end != '\0')
    throw DesktopError(kActionFailed, "element " + std::to_string(elementId) + " has no editable text, and \"" + value +
                                          "\" is not a number for a value (" + err + ")");
  std::string err2;
  r = bus.CallOne(t.peer,
                  {n.path, "org.freedesktop.DBus.Properties", "Set",
                   g_variant_new("(ssv)", "org.a11y.atspi.Value", "CurrentValue", g_variant_new("d", number))},
                  &err2);
  if (!r)
    throw DesktopError(kActionFailed,
                       "element " + std::to_string(elementId) + " takes neither text nor a value: " + err2);
  g_variant_unref(r);
  return "value";
}

}  // namespace runboard::desktop
