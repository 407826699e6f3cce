// Settings: the VKDELEGATE_* switches (settings.def), parsed once into typed
// fields. Process settings come from the environment; graph settings come from
// the environment too, and a graph may override them (Graph(blob, overrides=...),
// or a scope of overrides on the loading thread: vkdelegate.runtime.overrides()).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "printable.h"

#include "conv_variants.h"    // VKD_CONV_GEMM_VARIANT_NAMES, ..., generated from glsl/conv_variants.py
#include "coopmm_variants.h"  // VKD_COOPMM_VARIANT_NAMES, generated from glsl/coopmm_variants.py

namespace vkd {

// An unknown setting or a value it does not accept; the message names both, in
// printable ASCII (printable.h): an environment value can hold any bytes.
class SettingsError : public std::invalid_argument {
 public:
  explicit SettingsError(const std::string& message) : std::invalid_argument(printable_ascii(message)) {}
};

enum class SettingScope { Process, Graph };

struct Settings {
#define VKD_FLAG(field, def, scope, meaning) bool field = def;
#define VKD_INT(field, def, lo, hi, scope, meaning) int64_t field = def;
#define VKD_AUTO_INT(field, lo, hi, scope, meaning) std::optional<int64_t> field;
#define VKD_CHOICE(field, values, scope, meaning) std::string field;  // "": the runtime chooses
#define VKD_TEXT(field, scope, meaning) std::string field;
#include "settings.def"
#undef VKD_FLAG
#undef VKD_INT
#undef VKD_AUTO_INT
#undef VKD_CHOICE
#undef VKD_TEXT
};

// One row of the table, for Python and the README.
struct SettingInfo {
  std::string name;     // VKDELEGATE_...
  std::string type;     // flag, int, auto int, choice, text
  std::string default_value;
  std::vector<std::string> values;  // a choice's accepted values
  int64_t min = 0, max = 0;         // an int's range
  SettingScope scope;
  std::string meaning;
};
const std::vector<SettingInfo>& settings_table();

// Settings from environment variables, and the first bad value of each scope
// ("" if none). `lookup` gives a variable's value or null; the process's own
// environment is parsed once, with std::getenv (process_settings, graph_defaults).
struct EnvironmentSettings {
  Settings settings;
  std::string process_error, graph_error;
};
EnvironmentSettings parse_environment(const std::function<const char*(const char*)>& lookup);

// The process settings, from the environment (parsed once, at the first call).
// Throws SettingsError if one of them has a value it does not accept.
const Settings& process_settings();

// The defaults a graph loaded now on this thread takes: the innermost scope of
// overrides (push_scoped_overrides), else the environment. Throws SettingsError
// if the environment gives a graph setting a value it does not accept.
const Settings& graph_defaults();

// `base` with graph settings overridden: names without the VKDELEGATE_ prefix
// (COOPMM_TILE), values as the environment would give them ("" or a missing
// name: the default). Throws SettingsError for an unknown name, a process
// setting, or a value the setting does not accept.
using SettingOverrides = std::map<std::string, std::string>;
Settings with_overrides(const Settings& base, const SettingOverrides& overrides);

// A scope of overrides on the calling thread: graphs loaded on it until the
// matching pop take graph_defaults() with these applied (nested scopes stack).
void push_scoped_overrides(const SettingOverrides& overrides);
void pop_scoped_overrides();

}  // namespace vkd
