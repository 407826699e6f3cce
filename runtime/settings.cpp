#include "settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace vkd {

namespace {

constexpr const char* kPrefix = "VKDELEGATE_";
constexpr size_t kPrefixLength = 11;

std::string upper(const char* field) {
  std::string s(field);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_values(const char* values) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = values; *p; ++p) {
    if (*p == '|') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  out.push_back(cur);
  return out;
}

std::string joined(const std::vector<std::string>& values) {
  std::string s;
  for (const std::string& v : values) s += (s.empty() ? "" : ", ") + v;
  return s;
}

[[noreturn]] void bad_value(const std::string& name, const std::string& value, const std::string& expected) {
  throw SettingsError("VKDELEGATE_" + name + "=" + value + ": expected " + expected);
}

// Parsers: `value` is non-empty (empty means the default, handled by the caller).
bool parse_flag(const std::string& name, const std::string& value) {
  const std::string v = lower(value);
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  bad_value(name, value, "0 or 1");
}

int64_t parse_int(const std::string& name, const std::string& value, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != 0 || errno != 0 || v < lo || v > hi) {
    bad_value(name, value, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
}

std::string parse_choice(const std::string& name, const std::string& value, const char* values) {
  const std::vector<std::string> accepted = split_values(values);
  for (const std::string& a : accepted) {
    if (value == a) return value;
  }
  bad_value(name, value, "one of " + joined(accepted));
}

// Sets one setting from text; false if `name` is not in the table or its scope
// is not `scope` (or either, when `scope` is null).
bool set_one(Settings& s, const std::string& name, const std::string& value, const SettingScope* scope,
             SettingScope& found_scope) {
#define VKD_CASE(field, sc, parse_expr)                                   \
  if (name == upper(#field)) {                                            \
    found_scope = SettingScope::sc;                                       \
    if (scope != nullptr && *scope != SettingScope::sc) return false;     \
    if (value.empty()) {                                                  \
      s.field = Settings{}.field;                                         \
    } else {                                                              \
      parse_expr;                                                         \
    }                                                                     \
    return true;                                                          \
  }
#define VKD_FLAG(field, def, sc, meaning) VKD_CASE(field, sc, s.field = parse_flag(name, value))
#define VKD_INT(field, def, lo, hi, sc, meaning) VKD_CASE(field, sc, s.field = parse_int(name, value, lo, hi))
#define VKD_AUTO_INT(field, lo, hi, sc, meaning) VKD_CASE(field, sc, s.field = parse_int(name, value, lo, hi))
#define VKD_CHOICE(field, values, sc, meaning) VKD_CASE(field, sc, s.field = parse_choice(name, value, values))
#define VKD_TEXT(field, sc, meaning) VKD_CASE(field, sc, s.field = value)
#include "settings.def"
#undef VKD_FLAG
#undef VKD_INT
#undef VKD_AUTO_INT
#undef VKD_CHOICE
#undef VKD_TEXT
#undef VKD_CASE
  return false;
}

const EnvironmentSettings& environment() {
  static const EnvironmentSettings env = parse_environment([](const char* name) { return std::getenv(name); });
  return env;
}

thread_local std::vector<Settings> t_scopes;

}  // namespace

const std::vector<SettingInfo>& settings_table() {
  static const std::vector<SettingInfo> table = [] {
    std::vector<SettingInfo> t;
#define VKD_ROW(field, type, def, values, lo, hi, sc, meaning) \
  t.push_back({kPrefix + upper(#field), type, def, values, lo, hi, SettingScope::sc, meaning});
#define VKD_FLAG(field, def, sc, meaning) VKD_ROW(field, "flag", (def) ? "1" : "0", {}, 0, 1, sc, meaning)
#define VKD_INT(field, def, lo, hi, sc, meaning) VKD_ROW(field, "int", std::to_string(def), {}, lo, hi, sc, meaning)
#define VKD_AUTO_INT(field, lo, hi, sc, meaning) VKD_ROW(field, "int", "", {}, lo, hi, sc, meaning)
#define VKD_CHOICE(field, values, sc, meaning) VKD_ROW(field, "choice", "", split_values(values), 0, 0, sc, meaning)
#define VKD_TEXT(field, sc, meaning) VKD_ROW(field, "text", "", {}, 0, 0, sc, meaning)
#include "settings.def"
#undef VKD_FLAG
#undef VKD_INT
#undef VKD_AUTO_INT
#undef VKD_CHOICE
#undef VKD_TEXT
#undef VKD_ROW
    return t;
  }();
  return table;
}

EnvironmentSettings parse_environment(const std::function<const char*(const char*)>& lookup) {
  EnvironmentSettings e;
  for (const SettingInfo& info : settings_table()) {
    const char* v = lookup(info.name.c_str());
    if (v == nullptr || *v == 0) continue;
    SettingScope scope;
    try {
      set_one(e.settings, info.name.substr(kPrefixLength), v, nullptr, scope);
    } catch (const SettingsError& err) {
      std::string& first = info.scope == SettingScope::Process ? e.process_error : e.graph_error;
      if (first.empty()) first = std::string("environment: ") + err.what();
    }
  }
  return e;
}

const Settings& process_settings() {
  const EnvironmentSettings& e = environment();
  if (!e.process_error.empty()) throw SettingsError(e.process_error);
  return e.settings;
}

const Settings& graph_defaults() {
  if (!t_scopes.empty()) return t_scopes.back();
  const EnvironmentSettings& e = environment();
  if (!e.graph_error.empty()) throw SettingsError(e.graph_error);
  return e.settings;
}

Settings with_overrides(const Settings& base, const SettingOverrides& overrides) {
  Settings s = base;
  const SettingScope graph = SettingScope::Graph;
  for (const auto& entry : overrides) {
    // Not a structured binding: a lambda below captures name (C++17; clang before 16).
    const std::string& name = entry.first;
    const auto& value = entry.second;
    SettingScope found = SettingScope::Graph;
    if (set_one(s, name, value, &graph, found)) continue;
    std::string names;
    for (const SettingInfo& info : settings_table()) {
      if (info.scope == SettingScope::Graph) names += (names.empty() ? "" : ", ") + info.name.substr(kPrefixLength);
    }
    const bool known = std::any_of(settings_table().begin(), settings_table().end(),
                                   [&](const SettingInfo& i) { return i.name == "VKDELEGATE_" + name; });
    if (known) {
      throw SettingsError("VKDELEGATE_" + name +
                          " is a process setting, read from the environment when the device is opened; "
                          "a graph can override only " + names);
    }
    throw SettingsError("unknown setting '" + name + "'; a graph can override " + names);
  }
  return s;
}

void push_scoped_overrides(const SettingOverrides& overrides) {
  t_scopes.push_back(with_overrides(graph_defaults(), overrides));
}

void pop_scoped_overrides() {
  if (t_scopes.empty()) throw std::logic_error("pop_scoped_overrides without a scope");
  t_scopes.pop_back();
}

}  // namespace vkd
