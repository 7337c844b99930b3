// MPI_T: mpix's settings (control variables) and measurements (performance
// variables) beside the MPI library's own, so that a tool that enumerates
// MPI_T sees both without knowing mpix.
//
// Indices: the MPI library's variables keep theirs; mpix's follow them
// (index = the library's count + i, recomputed at each call, since the
// library may register variables late). Calls that name the library's
// indices or handles go to PMPI untouched.
//
// Erroneous arguments (a negative index, a null handle) are answered here,
// the same on every MPI: MPICH returns MPI_T's errors for them, while Open
// MPI 4.1 indexes its table at -1 or follows the null pointer and crashes.
//
// Handles: the library's are pointers to its own objects. mpix's are
// addresses inside a block reserved here, so any value in that block is
// recognised as mpix's, live or stale, and a stale one gets
// MPI_T_ERR_INVALID_HANDLE instead of reaching the library as a pointer it
// would follow. Sessions are the library's; mpix only notes which exist,
// to tie its handles to them.
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "mpit_vars.h"
#include "progress/immortal.h"
#include "src/config.h"
#include "src/runtime_state.h"
#include "src/visibility.h"

namespace mpix::mpit {
namespace {

// MPI_CHAR control variables (settings spelled as words): room for the
// longest word and its terminator; handle_alloc returns it as the count.
constexpr int kWordChars = 32;  // MPIX_OFI_PROVIDER's names: up to 31
constexpr std::size_t kMaxHandles = 4096;

char g_handle_space[kMaxHandles];

enum class Kind : unsigned char { kFree, kCvar, kPvar };

struct Slot {
  Kind kind = Kind::kFree;
  int var = 0;  // into config_vars() or pvars()
  MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
  std::uint64_t base = 0;  // counters: the value at allocation or last reset
};

// MPI_T may be called from any thread, before MPI_Init and after
// MPI_Finalize: the table has its own lock, never held while the engine's
// is taken (sample_now() runs outside it).
struct Table {
  std::mutex mu;
  std::vector<Slot> slots;
  std::size_t next = 0;
  std::vector<MPI_T_pvar_session> sessions;

  // Next fit: a freed slot is reused as late as possible, so that a stale
  // handle rarely names a live one.
  long alloc(const Slot &s) {
    if (slots.size() < kMaxHandles) {
      slots.push_back(s);
      return static_cast<long>(slots.size() - 1);
    }
    for (std::size_t k = 0; k < kMaxHandles; ++k) {
      const std::size_t i = (next + k) % kMaxHandles;
      if (slots[i].kind != Kind::kFree) continue;
      slots[i] = s;
      next = i + 1;
      return static_cast<long>(i);
    }
    return -1;
  }
  bool session_known(MPI_T_pvar_session s) const {
    for (MPI_T_pvar_session k : sessions)
      if (k == s) return true;
    return false;
  }
};

Table &table() {
  static Immortal<Table> t;
  return t.get();
}

// Whether h lies in mpix's block; its slot in *slot.
bool ours(const void *h, std::size_t *slot) {
  const auto p = reinterpret_cast<std::uintptr_t>(h);
  const auto lo = reinterpret_cast<std::uintptr_t>(g_handle_space);
  if (p < lo || p >= lo + kMaxHandles) return false;
  *slot = p - lo;
  return true;
}

template <class Handle>
Handle handle_of(long slot) {
  return reinterpret_cast<Handle>(g_handle_space + slot);
}

// The slot of a live handle of that kind (and session), or nullptr. Under mu.
Slot *live(Table &t, std::size_t i, Kind kind, MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL) {
  if (i >= t.slots.size() || t.slots[i].kind != kind) return nullptr;
  if (kind == Kind::kPvar && t.slots[i].session != session) return nullptr;
  return &t.slots[i];
}

// MPI_T's string convention, as the MPI library applies it: a null buffer
// or zero length asks for the length needed (terminator included).
void copy_string(char *dst, int *len, const char *src) {
  if (len == nullptr) return;
  if (dst == nullptr || *len <= 0) {
    *len = static_cast<int>(std::strlen(src)) + 1;
    return;
  }
  std::strncpy(dst, src, static_cast<std::size_t>(*len) - 1);
  dst[*len - 1] = '\0';
  *len = static_cast<int>(std::strlen(dst)) + 1;
}

const ConfigVar *cvar(int i) {
  int n = 0;
  const ConfigVar *v = config_vars(&n);
  return i >= 0 && i < n ? &v[i] : nullptr;
}

const Pvar *pvar(int i) {
  int n = 0;
  const Pvar *v = pvars(&n);
  return i >= 0 && i < n ? &v[i] : nullptr;
}

// What runs: the settings MPI_Init read, else (before it, or after
// MPI_Finalize) what it would read now.
ConfigValue value_in_force(const ConfigVar &v) {
  if (runtime_active()) return v.value(runtime().config);
  char ignored[8];
  return v.value(config_from_env(ignored, sizeof ignored));
}

std::uint64_t current(const Pvar &p) { return sample_now().*p.field; }

// Counters count from the handle's allocation or last reset; levels and
// high-water marks are the process's own.
std::uint64_t value_of(const Pvar &p, std::uint64_t now, const Slot &s) {
  return p.var_class == MPI_T_PVAR_CLASS_COUNTER ? now - s.base : now;
}

}  // namespace
}  // namespace mpix::mpit

using mpix::mpit::Kind;
using mpix::mpit::Slot;
using mpix::mpit::table;

// ---- control variables ----

MPIX_INTERCEPT int MPI_T_cvar_get_num(int *num_cvar) {
  const int rc = PMPI_T_cvar_get_num(num_cvar);
  if (rc != MPI_SUCCESS) return rc;
  int n = 0;
  mpix::config_vars(&n);
  *num_cvar += n;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                                       MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                                       int *bind, int *scope) {
  if (cvar_index < 0) return MPI_T_ERR_INVALID_INDEX;
  int base = 0;
  const int rc = PMPI_T_cvar_get_num(&base);
  if (rc != MPI_SUCCESS) return rc;
  if (cvar_index < base)
    return PMPI_T_cvar_get_info(cvar_index, name, name_len, verbosity, datatype, enumtype, desc, desc_len, bind,
                                scope);
  const mpix::ConfigVar *v = mpix::mpit::cvar(cvar_index - base);
  if (v == nullptr) return MPI_T_ERR_INVALID_INDEX;
  mpix::mpit::copy_string(name, name_len, v->name);
  mpix::mpit::copy_string(desc, desc_len, v->help);
  // Every setting is documented for users (README, mpix_info -c).
  if (verbosity != nullptr) *verbosity = MPI_T_VERBOSITY_USER_BASIC;
  if (datatype != nullptr)
    *datatype = mpix::mpit::value_in_force(*v).is_word ? MPI_CHAR : MPI_UNSIGNED_LONG_LONG;
  if (enumtype != nullptr) *enumtype = MPI_T_ENUM_NULL;
  if (bind != nullptr) *bind = MPI_T_BIND_NO_OBJECT;
  // Read at MPI_Init from the environment; nothing changes them later.
  if (scope != nullptr) *scope = MPI_T_SCOPE_READONLY;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_cvar_get_index(const char *name, int *cvar_index) {
  int base = 0;
  const int rc = PMPI_T_cvar_get_num(&base);
  if (rc != MPI_SUCCESS) return rc;
  int n = 0;
  const mpix::ConfigVar *v = mpix::config_vars(&n);
  for (int i = 0; name != nullptr && cvar_index != nullptr && i < n; ++i)
    if (std::strcmp(name, v[i].name) == 0) {
      *cvar_index = base + i;
      return MPI_SUCCESS;
    }
  return PMPI_T_cvar_get_index(name, cvar_index);
}

MPIX_INTERCEPT int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                                           int *count) {
  if (cvar_index < 0) return MPI_T_ERR_INVALID_INDEX;
  int base = 0;
  const int rc = PMPI_T_cvar_get_num(&base);
  if (rc != MPI_SUCCESS) return rc;
  if (cvar_index < base) return PMPI_T_cvar_handle_alloc(cvar_index, obj_handle, handle, count);
  const mpix::ConfigVar *v = mpix::mpit::cvar(cvar_index - base);
  if (v == nullptr) return MPI_T_ERR_INVALID_INDEX;
  if (handle == nullptr || count == nullptr) return MPI_T_ERR_INVALID;
  const bool word = mpix::mpit::value_in_force(*v).is_word;
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Slot s;
  s.kind = Kind::kCvar;
  s.var = cvar_index - base;
  const long slot = t.alloc(s);
  if (slot < 0) return MPI_T_ERR_OUT_OF_HANDLES;
  *handle = mpix::mpit::handle_of<MPI_T_cvar_handle>(slot);
  *count = word ? mpix::mpit::kWordChars : 1;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle) {
  if (handle != nullptr && *handle == MPI_T_CVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (handle == nullptr || !mpix::mpit::ours(*handle, &i)) return PMPI_T_cvar_handle_free(handle);
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Slot *s = mpix::mpit::live(t, i, Kind::kCvar);
  if (s == nullptr) return MPI_T_ERR_INVALID_HANDLE;
  *s = Slot{};
  *handle = MPI_T_CVAR_HANDLE_NULL;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf) {
  if (handle == MPI_T_CVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (!mpix::mpit::ours(handle, &i)) return PMPI_T_cvar_read(handle, buf);
  int var = 0;
  {
    auto &t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    const Slot *s = mpix::mpit::live(t, i, Kind::kCvar);
    if (s == nullptr) return MPI_T_ERR_INVALID_HANDLE;
    var = s->var;
  }
  if (buf == nullptr) return MPI_T_ERR_INVALID;
  const mpix::ConfigValue v = mpix::mpit::value_in_force(*mpix::mpit::cvar(var));
  if (v.is_word) {
    int len = mpix::mpit::kWordChars;
    mpix::mpit::copy_string(static_cast<char *>(buf), &len, v.word);
  } else {
    const auto n = static_cast<unsigned long long>(v.number);
    std::memcpy(buf, &n, sizeof n);
  }
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf) {
  if (handle == MPI_T_CVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (!mpix::mpit::ours(handle, &i)) return PMPI_T_cvar_write(handle, buf);
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (mpix::mpit::live(t, i, Kind::kCvar) == nullptr) return MPI_T_ERR_INVALID_HANDLE;
  // The engine, transports and pools were built from these at MPI_Init.
  return MPI_T_ERR_CVAR_SET_NEVER;
}

// ---- performance variables ----

MPIX_INTERCEPT int MPI_T_pvar_get_num(int *num_pvar) {
  const int rc = PMPI_T_pvar_get_num(num_pvar);
  if (rc != MPI_SUCCESS) return rc;
  int n = 0;
  mpix::mpit::pvars(&n);
  *num_pvar += n;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                                       MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                                       int *bind, int *readonly, int *continuous, int *atomic) {
  if (pvar_index < 0) return MPI_T_ERR_INVALID_INDEX;
  int base = 0;
  const int rc = PMPI_T_pvar_get_num(&base);
  if (rc != MPI_SUCCESS) return rc;
  if (pvar_index < base)
    return PMPI_T_pvar_get_info(pvar_index, name, name_len, verbosity, var_class, datatype, enumtype, desc,
                                desc_len, bind, readonly, continuous, atomic);
  const mpix::mpit::Pvar *p = mpix::mpit::pvar(pvar_index - base);
  if (p == nullptr) return MPI_T_ERR_INVALID_INDEX;
  mpix::mpit::copy_string(name, name_len, p->name);
  mpix::mpit::copy_string(desc, desc_len, p->desc);
  if (verbosity != nullptr) *verbosity = MPI_T_VERBOSITY_USER_BASIC;
  if (var_class != nullptr) *var_class = p->var_class;
  if (datatype != nullptr) *datatype = MPI_UNSIGNED_LONG_LONG;
  if (enumtype != nullptr) *enumtype = MPI_T_ENUM_NULL;
  if (bind != nullptr) *bind = MPI_T_BIND_NO_OBJECT;
  // A counter handle can be reset (it counts from there); a level or a
  // high-water mark is the process's own and cannot.
  if (readonly != nullptr) *readonly = p->var_class == MPI_T_PVAR_CLASS_COUNTER ? 0 : 1;
  // Always counting: no start/stop.
  if (continuous != nullptr) *continuous = 1;
  if (atomic != nullptr) *atomic = 0;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index) {
  int base = 0;
  const int rc = PMPI_T_pvar_get_num(&base);
  if (rc != MPI_SUCCESS) return rc;
  int n = 0;
  const mpix::mpit::Pvar *p = mpix::mpit::pvars(&n);
  for (int i = 0; name != nullptr && pvar_index != nullptr && i < n; ++i)
    if (p[i].var_class == var_class && std::strcmp(name, p[i].name) == 0) {
      *pvar_index = base + i;
      return MPI_SUCCESS;
    }
  return PMPI_T_pvar_get_index(name, var_class, pvar_index);
}

MPIX_INTERCEPT int MPI_T_pvar_session_create(MPI_T_pvar_session *session) {
  const int rc = PMPI_T_pvar_session_create(session);
  if (rc != MPI_SUCCESS) return rc;
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.sessions.push_back(*session);
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_pvar_session_free(MPI_T_pvar_session *session) {
  if (session != nullptr) {
    auto &t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    // The session's handles go with it, as the library's do.
    for (Slot &s : t.slots)
      if (s.kind == Kind::kPvar && s.session == *session) s = Slot{};
    for (auto it = t.sessions.begin(); it != t.sessions.end(); ++it)
      if (*it == *session) {
        t.sessions.erase(it);
        break;
      }
  }
  return PMPI_T_pvar_session_free(session);
}

MPIX_INTERCEPT int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                                           MPI_T_pvar_handle *handle, int *count) {
  if (pvar_index < 0) return MPI_T_ERR_INVALID_INDEX;
  int base = 0;
  const int rc = PMPI_T_pvar_get_num(&base);
  if (rc != MPI_SUCCESS) return rc;
  if (pvar_index < base) return PMPI_T_pvar_handle_alloc(session, pvar_index, obj_handle, handle, count);
  const mpix::mpit::Pvar *p = mpix::mpit::pvar(pvar_index - base);
  if (p == nullptr) return MPI_T_ERR_INVALID_INDEX;
  if (handle == nullptr || count == nullptr) return MPI_T_ERR_INVALID;
  const std::uint64_t now = mpix::mpit::current(*p);
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!t.session_known(session)) return MPI_T_ERR_INVALID_SESSION;
  Slot s;
  s.kind = Kind::kPvar;
  s.var = pvar_index - base;
  s.session = session;
  s.base = now;
  const long slot = t.alloc(s);
  if (slot < 0) return MPI_T_ERR_OUT_OF_HANDLES;
  *handle = mpix::mpit::handle_of<MPI_T_pvar_handle>(slot);
  *count = 1;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle) {
  if (handle != nullptr && *handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (handle == nullptr || !mpix::mpit::ours(*handle, &i)) return PMPI_T_pvar_handle_free(session, handle);
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Slot *s = mpix::mpit::live(t, i, Kind::kPvar, session);
  if (s == nullptr) return MPI_T_ERR_INVALID_HANDLE;
  *s = Slot{};
  *handle = MPI_T_PVAR_HANDLE_NULL;
  return MPI_SUCCESS;
}

namespace {

// Start and stop: mpix's variables are continuous. With
// MPI_T_PVAR_ALL_HANDLES the library handles its own (continuous ones are
// skipped by definition).
int refuse_startstop(MPI_T_pvar_session session, MPI_T_pvar_handle handle, int (*pmpi)(MPI_T_pvar_session,
                                                                                        MPI_T_pvar_handle)) {
  if (handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (!mpix::mpit::ours(handle, &i)) return pmpi(session, handle);
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (mpix::mpit::live(t, i, Kind::kPvar, session) == nullptr) return MPI_T_ERR_INVALID_HANDLE;
  return MPI_T_ERR_PVAR_NO_STARTSTOP;
}

// Read (and, for readreset, restart the count) of one of mpix's handles.
int read_ours(MPI_T_pvar_session session, std::size_t i, void *buf, bool reset) {
  auto &t = table();
  int var = 0;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    const Slot *s = mpix::mpit::live(t, i, Kind::kPvar, session);
    if (s == nullptr) return MPI_T_ERR_INVALID_HANDLE;
    var = s->var;
  }
  const mpix::mpit::Pvar &p = *mpix::mpit::pvar(var);
  if (reset && p.var_class != MPI_T_PVAR_CLASS_COUNTER) return MPI_T_ERR_PVAR_NO_WRITE;
  if (buf == nullptr && !reset) return MPI_T_ERR_INVALID;
  const std::uint64_t now = mpix::mpit::current(p);
  std::lock_guard<std::mutex> lock(t.mu);
  Slot *s = mpix::mpit::live(t, i, Kind::kPvar, session);
  if (s == nullptr) return MPI_T_ERR_INVALID_HANDLE;  // freed meanwhile by another thread
  const unsigned long long v = mpix::mpit::value_of(p, now, *s);
  if (buf != nullptr) std::memcpy(buf, &v, sizeof v);
  if (reset) s->base = now;
  return MPI_SUCCESS;
}

}  // namespace

MPIX_INTERCEPT int MPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
  return refuse_startstop(session, handle, PMPI_T_pvar_start);
}

MPIX_INTERCEPT int MPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
  return refuse_startstop(session, handle, PMPI_T_pvar_stop);
}

MPIX_INTERCEPT int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf) {
  if (handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (!mpix::mpit::ours(handle, &i)) return PMPI_T_pvar_read(session, handle, buf);
  return read_ours(session, i, buf, false);
}

MPIX_INTERCEPT int MPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf) {
  if (handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (!mpix::mpit::ours(handle, &i)) return PMPI_T_pvar_readreset(session, handle, buf);
  return read_ours(session, i, buf, true);
}

MPIX_INTERCEPT int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
  if (handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (mpix::mpit::ours(handle, &i)) return read_ours(session, i, nullptr, true);
  if (handle == MPI_T_PVAR_ALL_HANDLES) {
    // Ours in the session too; read-only ones are skipped, as MPI says.
    auto &t = table();
    std::unique_lock<std::mutex> lock(t.mu);
    const bool any = [&] {
      for (const Slot &s : t.slots)
        if (s.kind == Kind::kPvar && s.session == session) return true;
      return false;
    }();
    lock.unlock();
    if (any) {
      const mpix::mpit::Sample now = mpix::mpit::sample_now();
      lock.lock();
      for (Slot &s : t.slots) {
        if (s.kind != Kind::kPvar || s.session != session) continue;
        const mpix::mpit::Pvar &p = *mpix::mpit::pvar(s.var);
        if (p.var_class == MPI_T_PVAR_CLASS_COUNTER) s.base = now.*p.field;
      }
    }
  }
  return PMPI_T_pvar_reset(session, handle);
}

MPIX_INTERCEPT int MPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf) {
  if (handle == MPI_T_PVAR_HANDLE_NULL) return MPI_T_ERR_INVALID_HANDLE;
  std::size_t i = 0;
  if (!mpix::mpit::ours(handle, &i)) return PMPI_T_pvar_write(session, handle, buf);
  auto &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (mpix::mpit::live(t, i, Kind::kPvar, session) == nullptr) return MPI_T_ERR_INVALID_HANDLE;
  return MPI_T_ERR_PVAR_NO_WRITE;
}

// The last MPI_T_finalize ends every handle and session (the library's
// too): mpix's go with them.
MPIX_INTERCEPT int MPI_T_finalize(void) {
  const int rc = PMPI_T_finalize();
  if (rc != MPI_SUCCESS) return rc;
  int n = 0;
  if (PMPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED) {
    auto &t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    t.slots.clear();
    t.slots.shrink_to_fit();
    t.sessions.clear();
    t.sessions.shrink_to_fit();
    t.next = 0;
  }
  return MPI_SUCCESS;
}
