#include "common/element_json.h"

#include <cstdint>
#include <cstdio>

namespace runboard::desktop {

namespace {

// The code point of the valid UTF-8 sequence at p (n bytes left) and its length, or a length of 0 when
// it is not one.
size_t Utf8Decode(const unsigned char* p, size_t n, uint32_t& cp) {
  unsigned char c = p[0];
  size_t len;
  uint32_t min;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (n < len) return 0;
  cp = c & (0x7F >> len);
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void AppendEscape(std::string& out, uint32_t unit) {
  static const char kHex[] = "0123456789abcdef";
  char e[6] = {'\\', 'u', kHex[(unit >> 12) & 15], kHex[(unit >> 8) & 15], kHex[(unit >> 4) & 15], kHex[unit & 15]};
  out.append(e, 6);
}

void AppendBool(std::string& out, const char* key, bool v) {
  out += key;
  out += v ? "true" : "false";
}

void AppendElement(std::string& out, const Element& e) {
  char num[96];
  snprintf(num, sizeof num, "{\"id\":%d,\"role\":", e.id);
  out += num;
  AppendJsonString(out, e.role);
  out += ",\"name\":";
  AppendJsonString(out, e.name);
  out += ",\"description\":";
  AppendJsonString(out, e.description);
  snprintf(num, sizeof num, ",\"bounds\":[%d,%d,%d,%d]", e.bounds.x, e.bounds.y, e.bounds.w, e.bounds.h);
  out += num;
  AppendBool(out, ",\"focused\":", e.states & kFocused);
  AppendBool(out, ",\"enabled\":", e.states & kEnabled);
  AppendBool(out, ",\"selected\":", e.states & kSelected);
  AppendBool(out, ",\"visible\":", e.states & kVisible);
  AppendBool(out, ",\"checked\":", e.states & kChecked);
  AppendBool(out, ",\"editable\":", e.states & kEditable);
  AppendBool(out, ",\"focusable\":", e.states & kFocusable);
  AppendBool(out, ",\"secret\":", e.secret);
  out += ",\"actions\":[";
  for (size_t i = 0; i < e.actions.size(); i++) {
    if (i > 0) out += ',';
    AppendJsonString(out, e.actions[i]);
  }
  out += "],\"children\":";
  AppendElementsJson(out, e.children);
  if (!e.secret) {
    out += ",\"value\":";
    AppendJsonString(out, e.value);
  }
  out += '}';
}

void AppendSignatures(std::string& out, const std::vector<Element>& elements, int ox, int oy, bool& first) {
  char num[96];
  for (const auto& e : elements) {
    if (!first) out += ',';
    first = false;
    snprintf(num, sizeof num, "\"%d\":{\"p\":", e.id);
    out += num;
    AppendJsonString(out, e.role);
    if (e.states & kEditable) out += ",\"e\":1";
    out += ",\"t\":";
    AppendJsonString(out, e.name);
    snprintf(num, sizeof num, ",\"b\":[%d,%d,%d,%d]}", e.bounds.x - ox, e.bounds.y - oy, e.bounds.w, e.bounds.h);
    out += num;
    AppendSignatures(out, e.children, ox, oy, first);
  }
}

// compact.ts shortRole: 'text' is an input when editable, a text otherwise; then the table; else 'other'.
const std::string& ShortRole(const Element& e, const CompactRules& rules) {
  static const std::string kInput = "input", kTxt = "txt", kOther = "other";
  if (e.role == "text") return (e.states & kEditable) ? kInput : kTxt;
  auto it = rules.roles.find(e.role);
  return it == rules.roles.end() ? kOther : it->second;
}

// compact.ts toCompact, writing each element into `out` (a JSON array's items; `first` says whether a comma
// goes before the next). An element whose role is not kept gives its children in its place.
void AppendCompact(std::string& out, bool& first, const std::vector<Element>& elements, const CompactRules& rules,
                   const std::string* parentTitle) {
  char num[96];
  for (const auto& el : elements) {
    const std::string& r = ShortRole(el, rules);
    const bool shown = rules.keep.empty() || rules.keep.count(r) > 0;
    if (!shown) {
      AppendCompact(out, first, el.children, rules, nullptr);
      continue;
    }
    // the short actions, each once, in the order of the first platform action that gives it
    std::vector<const std::string*> actions;
    for (const auto& a : el.actions) {
      std::string lower = a;
      for (auto& ch : lower)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
      auto it = rules.actions.find(lower);
      if (it == rules.actions.end()) continue;
      bool seen = false;
      for (auto* s : actions) seen = seen || *s == it->second;
      if (!seen) actions.push_back(&it->second);
    }
    // a text leaf that only repeats its parent's title carries nothing an agent can use
    if (parentTitle && el.children.empty() && (r == "static" || r == "txt") && el.name == *parentTitle &&
        actions.empty())
      continue;
    if (!first) out += ',';
    first = false;
    snprintf(num, sizeof num, "{\"i\":%d,\"r\":", el.id);
    out += num;
    AppendJsonString(out, r);
    if (!el.name.empty()) {
      out += ",\"t\":";
      AppendJsonString(out, el.name);
    }
    if (!el.secret && !el.value.empty()) {
      out += ",\"v\":";
      AppendJsonString(out, el.value);
    }
    if (!el.description.empty()) {
      out += ",\"d\":";
      AppendJsonString(out, el.description);
    }
    snprintf(num, sizeof num, ",\"b\":[%d,%d,%d,%d]", el.bounds.x, el.bounds.y, el.bounds.w, el.bounds.h);
    out += num;
    if (el.states & kFocused) out += ",\"f\":true";
    if (!(el.states & kEnabled)) out += ",\"e\":false";
    if (el.states & kSelected) out += ",\"s\":true";
    // the children, written in place: taken back when none of them gives anything
    const size_t mark = out.size();
    out += ",\"c\":[";
    bool noKids = true;
    AppendCompact(out, noKids, el.children, rules, el.name.empty() ? nullptr : &el.name);
    if (noKids) out.resize(mark);
    else out += ']';
    if (!actions.empty()) {
      out += ",\"a\":[";
      for (size_t i = 0; i < actions.size(); i++) {
        if (i > 0) out += ',';
        AppendJsonString(out, *actions[i]);
      }
      out += ']';
    }
    if (el.secret) out += ",\"secret\":true";
    out += '}';
  }
}

}  // namespace

void AppendCompactJson(std::string& out, const std::vector<Element>& elements, const CompactRules& rules) {
  bool first = true;
  out += '[';
  AppendCompact(out, first, elements, rules, nullptr);
  out += ']';
}

void AppendSignaturesJson(std::string& out, const std::vector<Element>& elements, int originX, int originY) {
  bool first = true;
  out += '{';
  AppendSignatures(out, elements, originX, originY, first);
  out += '}';
}

void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  size_t run = 0;  // the start of the bytes that go out as they are
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      i++;
      continue;
    }
    out.append(s, run, i - run);
    if (c >= 0x80) {
      uint32_t cp = 0;
      size_t len = Utf8Decode(p + i, n - i, cp);
      if (len == 0) {
        AppendEscape(out, 0xFFFD);  // a bad byte
        i++;
      } else if (cp < 0x10000) {
        AppendEscape(out, cp);
        i += len;
      } else {
        AppendEscape(out, 0xD800 + ((cp - 0x10000) >> 10));
        AppendEscape(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
        i += len;
      }
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      i++;
    } else {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          AppendEscape(out, c);
      }
      i++;
    }
    run = i;
  }
  out.append(s, run, n - run);
  out += '"';
}

void AppendElementsJson(std::string& out, const std::vector<Element>& elements) {
  out += '[';
  for (size_t i = 0; i < elements.size(); i++) {
    if (i > 0) out += ',';
    AppendElement(out, elements[i]);
  }
  out += ']';
}

}  // namespace runboard::desktop
