// The benchmark's baseline: libatspi's own walk, one blocking call per attribute per node, which is
// what a straightforward reader does. ReadTree must beat it; bench/ measures both in one run.
#include <atspi/atspi.h>

#include <functional>

#include "common/reader.h"
#include "linux/atspi_tree.h"
#include "linux/lazy_lib.h"

namespace runboard::desktop {

// A libatspi function (loaded at the walk's first use, lazy_lib.h); a missing libatspi is reported.
#define A(fn) lazy::Need(RB_LAZY(lazy::Atspi, fn), lazy::Atspi(), #fn, kNoA11yBus)

int NaiveWalkForBench(const WindowQuery& target) {
  auto t = atspi::LoadWindowTree(target, false);  // only to find the app and the window's name
  static bool inited = false;
  if (!inited) {
    A(atspi_init)();
    inited = true;
  }
  AtspiAccessible* desktop = A(atspi_get_desktop)(0);
  AtspiAccessible* window = nullptr;
  int apps = A(atspi_accessible_get_child_count)(desktop, nullptr);
  for (int i = 0; i < apps && !window; i++) {
    AtspiAccessible* app = A(atspi_accessible_get_child_at_index)(desktop, i, nullptr);
    if (!app) continue;
    if (static_cast<int>(A(atspi_accessible_get_process_id)(app, nullptr)) == t.app.pid) {
      A(atspi_accessible_clear_cache)(app);  // cold, like a fresh reader
      int n = A(atspi_accessible_get_child_count)(app, nullptr);
      for (int k = 0; k < n && !window; k++) {
        AtspiAccessible* w = A(atspi_accessible_get_child_at_index)(app, k, nullptr);
        gchar* name = w ? A(atspi_accessible_get_name)(w, nullptr) : nullptr;
        if (name && t.nodes[t.root].name == name) window = w;
        else if (w) g_object_unref(w);
        g_free(name);
      }
    }
    g_object_unref(app);
  }
  g_object_unref(desktop);
  if (!window) throw DesktopError(kNoA11yTree, "libatspi does not see the window");
  int count = 0;
  std::function<void(AtspiAccessible*)> walk = [&](AtspiAccessible* a) {
    count++;
    g_free(A(atspi_accessible_get_role_name)(a, nullptr));
    g_free(A(atspi_accessible_get_name)(a, nullptr));
    g_free(A(atspi_accessible_get_description)(a, nullptr));
    if (AtspiStateSet* st = A(atspi_accessible_get_state_set)(a)) g_object_unref(st);
    if (AtspiComponent* c = A(atspi_accessible_get_component_iface)(a)) {
      if (AtspiRect* r = A(atspi_component_get_extents)(c, ATSPI_COORD_TYPE_SCREEN, nullptr)) g_free(r);
      g_object_unref(c);
    }
    if (AtspiText* tx = A(atspi_accessible_get_text_iface)(a)) {
      g_free(A(atspi_text_get_text)(tx, 0, -1, nullptr));
      g_object_unref(tx);
    }
    if (AtspiValue* v = A(atspi_accessible_get_value_iface)(a)) {
      A(atspi_value_get_current_value)(v, nullptr);
      g_object_unref(v);
    }
    if (AtspiAction* ac = A(atspi_accessible_get_action_iface)(a)) {
      int n = A(atspi_action_get_n_actions)(ac, nullptr);
      for (int i = 0; i < n; i++) g_free(A(atspi_action_get_action_name)(ac, i, nullptr));
      g_object_unref(ac);
    }
    int n = A(atspi_accessible_get_child_count)(a, nullptr);
    for (int i = 0; i < n; i++) {
      AtspiAccessible* c = A(atspi_accessible_get_child_at_index)(a, i, nullptr);
      if (!c) continue;
      walk(c);
      g_object_unref(c);
    }
  };
  walk(window);
  g_object_unref(window);
  return count;
}

}  // namespace runboard::desktop
