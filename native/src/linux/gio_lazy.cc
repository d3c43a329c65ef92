// GLib, GObject and GIO, opened at the first AT-SPI call instead of with the addon (lazy_lib.h): a
// process that only injects input (desktop-cli type) or encodes images never loads them and their
// dependencies (libmount, libblkid, libselinux, pcre2, libffi, …), the largest part of what loading
// the addon cost. The addon links none of them; it defines here each GLib function it calls (the
// list `nm -D --undefined-only runboard_native.node | grep ' g_'` must stay empty), each forwarding
// to the library's own, found in libgio's tree (dlsym on its handle: these definitions are not in
// that search, so nothing recurses). A missing libgio is a NO_ACCESSIBILITY_BUS error at that call.
// The variadic ones go through their va_list forms, as GLib's own do.
#include <gio/gio.h>

#include <cstdarg>
#include <cstdio>

#include "linux/lazy_lib.h"

namespace runboard::desktop::lazy {

const Lib& Gio() {
  // RTLD_DEEPBIND: the tree's own symbols (GLib's, for GIO and GObject; zlib's) are looked up in the
  // tree first, not in Node's executable first, whose large symbol table made each lookup slower
  // (-0.8 ms for desktop-cli list). Node interposes none of them: it exports its own zlib, which GIO
  // would otherwise bind to. (Sanitizer runtimes refuse RTLD_DEEPBIND.)
  static const Lib lib = Open("libgio-2.0.so.0", "libglib2.0-0", RTLD_DEEPBIND);
  return lib;
}

}  // namespace runboard::desktop::lazy

namespace {

namespace lazy = runboard::desktop::lazy;

template <typename F>
F Real(const char* name) {
  return lazy::Need(lazy::Sym<F>(lazy::Gio(), name), lazy::Gio(), name, runboard::desktop::kNoA11yBus);
}

}  // namespace

// The library's `fn`, looked up once.
#define REAL(fn)                                      \
  ([] {                                               \
    static const auto f = Real<decltype(&::fn)>(#fn); \
    return f;                                         \
  }())

extern "C" {

void g_clear_error(GError** err) { REAL(g_clear_error)(err); }
void g_free(gpointer mem) { REAL(g_free)(mem); }
gint64 g_get_monotonic_time() { return REAL(g_get_monotonic_time)(); }
void g_object_unref(gpointer object) { REAL(g_object_unref)(object); }

void g_printerr(const gchar* format, ...) {
  va_list ap;
  va_start(ap, format);
  gchar* s = REAL(g_strdup_vprintf)(format, ap);
  va_end(ap);
  std::fputs(s, stderr);
  REAL(g_free)(s);
}

guint g_dbus_connection_add_filter(GDBusConnection* connection, GDBusMessageFilterFunction filter_function,
                                   gpointer user_data, GDestroyNotify user_data_free_func) {
  return REAL(g_dbus_connection_add_filter)(connection, filter_function, user_data, user_data_free_func);
}
GVariant* g_dbus_connection_call_sync(GDBusConnection* connection, const gchar* bus_name, const gchar* object_path,
                                      const gchar* interface_name, const gchar* method_name, GVariant* parameters,
                                      const GVariantType* reply_type, GDBusCallFlags flags, gint timeout_msec,
                                      GCancellable* cancellable, GError** error) {
  return REAL(g_dbus_connection_call_sync)(connection, bus_name, object_path, interface_name, method_name, parameters,
                                           reply_type, flags, timeout_msec, cancellable, error);
}
gboolean g_dbus_connection_close_sync(GDBusConnection* connection, GCancellable* cancellable, GError** error) {
  return REAL(g_dbus_connection_close_sync)(connection, cancellable, error);
}
gboolean g_dbus_connection_is_closed(GDBusConnection* connection) {
  return REAL(g_dbus_connection_is_closed)(connection);
}
GDBusConnection* g_dbus_connection_new_for_address_sync(const gchar* address, GDBusConnectionFlags flags,
                                                        GDBusAuthObserver* observer, GCancellable* cancellable,
                                                        GError** error) {
  return REAL(g_dbus_connection_new_for_address_sync)(address, flags, observer, cancellable, error);
}
gboolean g_dbus_connection_send_message(GDBusConnection* connection, GDBusMessage* message, GDBusSendMessageFlags flags,
                                        volatile guint32* out_serial, GError** error) {
  return REAL(g_dbus_connection_send_message)(connection, message, flags, out_serial, error);
}
void g_dbus_connection_set_exit_on_close(GDBusConnection* connection, gboolean exit_on_close) {
  REAL(g_dbus_connection_set_exit_on_close)(connection, exit_on_close);
}
GVariant* g_dbus_message_get_body(GDBusMessage* message) { return REAL(g_dbus_message_get_body)(message); }
const gchar* g_dbus_message_get_interface(GDBusMessage* message) { return REAL(g_dbus_message_get_interface)(message); }
const gchar* g_dbus_message_get_member(GDBusMessage* message) { return REAL(g_dbus_message_get_member)(message); }
const gchar* g_dbus_message_get_path(GDBusMessage* message) { return REAL(g_dbus_message_get_path)(message); }
const gchar* g_dbus_message_get_sender(GDBusMessage* message) { return REAL(g_dbus_message_get_sender)(message); }
void g_dbus_connection_remove_filter(GDBusConnection* connection, guint filter_id) {
  REAL(g_dbus_connection_remove_filter)(connection, filter_id);
}
GDBusMessageType g_dbus_message_get_message_type(GDBusMessage* message) {
  return REAL(g_dbus_message_get_message_type)(message);
}
guint32 g_dbus_message_get_reply_serial(GDBusMessage* message) {
  return REAL(g_dbus_message_get_reply_serial)(message);
}
GDBusMessage* g_dbus_message_new_method_call(const gchar* name, const gchar* path, const gchar* interface_,
                                             const gchar* method) {
  return REAL(g_dbus_message_new_method_call)(name, path, interface_, method);
}
void g_dbus_message_set_body(GDBusMessage* message, GVariant* body) { REAL(g_dbus_message_set_body)(message, body); }
void g_dbus_message_set_flags(GDBusMessage* message, GDBusMessageFlags flags) {
  REAL(g_dbus_message_set_flags)(message, flags);
}
gboolean g_dbus_message_to_gerror(GDBusMessage* message, GError** error) {
  return REAL(g_dbus_message_to_gerror)(message, error);
}

GVariant* g_variant_new(const gchar* format_string, ...) {
  va_list ap;
  va_start(ap, format_string);
  GVariant* v = REAL(g_variant_new_va)(format_string, nullptr, &ap);
  va_end(ap);
  return v;
}
void g_variant_get(GVariant* value, const gchar* format_string, ...) {
  va_list ap;
  va_start(ap, format_string);
  REAL(g_variant_get_va)(value, format_string, nullptr, &ap);
  va_end(ap);
}
void g_variant_builder_add(GVariantBuilder* builder, const gchar* format_string, ...) {
  va_list ap;
  va_start(ap, format_string);
  GVariant* v = REAL(g_variant_new_va)(format_string, nullptr, &ap);
  va_end(ap);
  REAL(g_variant_builder_add_value)(builder, v);
}
// Unpacks `value` (a reference the caller owns, given up here) into the caller's arguments.
static void GetAndUnref(GVariant* value, const gchar* format_string, va_list* ap) {
  REAL(g_variant_get_va)(value, format_string, nullptr, ap);
  REAL(g_variant_unref)(value);
}
gboolean g_variant_iter_next(GVariantIter* iter, const gchar* format_string, ...) {
  GVariant* value = REAL(g_variant_iter_next_value)(iter);
  if (!value) return FALSE;
  va_list ap;
  va_start(ap, format_string);
  GetAndUnref(value, format_string, &ap);
  va_end(ap);
  return TRUE;
}
gboolean g_variant_lookup(GVariant* dictionary, const gchar* key, const gchar* format_string, ...) {
  REAL(g_variant_get_data)(dictionary);  // serialised: pointers taken by "&s" stay valid (as GLib's own does)
  GVariant* value = REAL(g_variant_lookup_value)(dictionary, key, nullptr);
  if (!value) return FALSE;
  // GLib's own looks the key up with the format's type: a value of another type is not found.
  if (!REAL(g_variant_check_format_string)(value, format_string, FALSE)) {
    REAL(g_variant_unref)(value);
    return FALSE;
  }
  va_list ap;
  va_start(ap, format_string);
  GetAndUnref(value, format_string, &ap);
  va_end(ap);
  return TRUE;
}

void g_variant_builder_init(GVariantBuilder* builder, const GVariantType* type) {
  REAL(g_variant_builder_init)(builder, type);
}
GVariant* g_variant_get_child_value(GVariant* value, gsize index_) {
  return REAL(g_variant_get_child_value)(value, index_);
}
gdouble g_variant_get_double(GVariant* value) { return REAL(g_variant_get_double)(value); }
const gchar* g_variant_get_string(GVariant* value, gsize* length) { return REAL(g_variant_get_string)(value, length); }
gboolean g_variant_is_of_type(GVariant* value, const GVariantType* type) {
  return REAL(g_variant_is_of_type)(value, type);
}
void g_variant_iter_free(GVariantIter* iter) { REAL(g_variant_iter_free)(iter); }
gsize g_variant_iter_n_children(GVariantIter* iter) { return REAL(g_variant_iter_n_children)(iter); }
GVariant* g_variant_new_strv(const gchar* const* strv, gssize length) { return REAL(g_variant_new_strv)(strv, length); }
GVariant* g_variant_ref(GVariant* value) { return REAL(g_variant_ref)(value); }
GVariant* g_variant_ref_sink(GVariant* value) { return REAL(g_variant_ref_sink)(value); }
const GVariantType* g_variant_type_checked_(const gchar* type_string) {
  return REAL(g_variant_type_checked_)(type_string);
}
void g_variant_unref(GVariant* value) { REAL(g_variant_unref)(value); }

}  // extern "C"
