#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mpix {
namespace {

const ConfigVar kVars[] = {
    {"MPIX_VERBOSE", "0",
     "0: silent; 1: print the configuration at MPI_Init on rank 0; 2: also per-rank details"},
    {"MPIX_INTERCEPT", "none",
     "none: only communicators with no-wildcard assertions use mpix's engine; all: every communicator does "
     "(full MPI semantics, wildcards included)"},
    {"MPIX_EAGER_LIMIT", "16384",
     "largest message (bytes) sent eagerly with its envelope; larger ones use rendezvous"},
    {"MPIX_LANDING_SLOTS", "16",
     "pre-posted landing receives per handled communicator (each MPIX_EAGER_LIMIT bytes)"},
    {"MPIX_UNEXPECTED_LIMIT", "67108864",
     "unexpected eager bytes held per communicator before new messages are left in the MPI library's queue "
     "(back-pressure; a waiting receive always pulls more)"},
};

template <class T>
bool parse_int(const char *s, long lo, long hi, T *out) {
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<T>(v);
  return true;
}

void append(char *buf, int len, const char *name, const char *value, const char *expect) {
  const size_t used = std::strlen(buf);
  if (static_cast<int>(used) + 1 >= len) return;
  std::snprintf(buf + used, static_cast<size_t>(len) - used, "%s=\"%s\" is invalid (expected %s)\n", name,
                value, expect);
}

}  // namespace

const ConfigVar *config_vars(int *n) {
  *n = static_cast<int>(sizeof(kVars) / sizeof(kVars[0]));
  return kVars;
}

Config config_from_env(char *errors, int errors_len) {
  Config c;
  if (errors_len > 0) errors[0] = '\0';
  if (const char *v = std::getenv("MPIX_VERBOSE")) {
    if (!parse_int(v, 0, 2, &c.verbose)) append(errors, errors_len, "MPIX_VERBOSE", v, "0, 1 or 2");
  }
  if (const char *v = std::getenv("MPIX_INTERCEPT")) {
    if (std::strcmp(v, "all") == 0) c.intercept_all = true;
    else if (std::strcmp(v, "none") != 0) append(errors, errors_len, "MPIX_INTERCEPT", v, "none or all");
  }
  if (const char *v = std::getenv("MPIX_EAGER_LIMIT")) {
    if (!parse_int(v, 0, 1L << 26, &c.eager_limit))
      append(errors, errors_len, "MPIX_EAGER_LIMIT", v, "0 .. 67108864");
  }
  if (const char *v = std::getenv("MPIX_LANDING_SLOTS")) {
    if (!parse_int(v, 1, 4096, &c.landing_slots)) append(errors, errors_len, "MPIX_LANDING_SLOTS", v, "1 .. 4096");
  }
  if (const char *v = std::getenv("MPIX_UNEXPECTED_LIMIT")) {
    if (!parse_int(v, 0, 1L << 40, &c.unexpected_limit))
      append(errors, errors_len, "MPIX_UNEXPECTED_LIMIT", v, "0 .. 2^40");
  }
  return c;
}

void config_print(std::FILE *out, const char *prefix) {
  for (const auto &v : kVars) {
    const char *cur = std::getenv(v.name);
    std::fprintf(out, "%s%-22s = %-8s (default %s) %s\n", prefix, v.name, cur ? cur : v.default_value,
                 v.default_value, v.help);
  }
}

}  // namespace mpix
