#include "hints.h"

#include <cctype>
#include <cstring>
#include <initializer_list>
#include <strings.h>

namespace mpix::p2p {
namespace {

constexpr const char *kNoAnySource = "mpi_assert_no_any_source";
constexpr const char *kNoAnyTag = "mpi_assert_no_any_tag";
constexpr const char *kAllowOvertaking = "mpi_assert_allow_overtaking";

bool info_true(MPI_Info info, const char *key) {
  char value[MPI_MAX_INFO_VAL + 1] = "";
  int flag = 0;
  if (PMPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag) != MPI_SUCCESS || !flag) return false;
  // MPI booleans: "true"/"false", compared without regard to case or blanks.
  const char *s = value;
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (strncasecmp(s, "true", 4) != 0) return false;
  s += 4;
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  return *s == '\0';
}

}  // namespace

Hints hints_from_info(MPI_Info info) {
  Hints h;
  if (info == MPI_INFO_NULL) return h;
  h.no_any_source = info_true(info, kNoAnySource);
  h.no_any_tag = info_true(info, kNoAnyTag);
  h.allow_overtaking = info_true(info, kAllowOvertaking);
  return h;
}

void hints_to_info(const Hints &h, MPI_Info info) {
  if (h.no_any_source) PMPI_Info_set(info, kNoAnySource, "true");
  if (h.no_any_tag) PMPI_Info_set(info, kNoAnyTag, "true");
  if (h.allow_overtaking) PMPI_Info_set(info, kAllowOvertaking, "true");
}

LibraryInfo::LibraryInfo(MPI_Info info, bool strip) : info_(info) {
  if (!strip || info == MPI_INFO_NULL) return;
  bool any = false;
  for (const char *key : {kNoAnySource, kNoAnyTag, kAllowOvertaking}) {
    int len = 0, flag = 0;
    any = any || (PMPI_Info_get_valuelen(info, key, &len, &flag) == MPI_SUCCESS && flag);
  }
  if (!any || PMPI_Info_dup(info, &info_) != MPI_SUCCESS) {
    info_ = info;  // nothing to strip (or no copy: the caller's, as before)
    return;
  }
  owned_ = true;
  for (const char *key : {kNoAnySource, kNoAnyTag, kAllowOvertaking}) {
    int len = 0, flag = 0;
    if (PMPI_Info_get_valuelen(info_, key, &len, &flag) == MPI_SUCCESS && flag) PMPI_Info_delete(info_, key);
  }
}

LibraryInfo::~LibraryInfo() {
  if (owned_) PMPI_Info_free(&info_);
}

}  // namespace mpix::p2p
