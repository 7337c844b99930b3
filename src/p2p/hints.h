// The MPI-4 info assertions mpix acts on, read from and written to MPI_Info.
#ifndef MPIX_SRC_P2P_HINTS_H
#define MPIX_SRC_P2P_HINTS_H

#include <mpi.h>

namespace mpix::p2p {

struct Hints {
  bool no_any_source = false;    // mpi_assert_no_any_source
  bool no_any_tag = false;       // mpi_assert_no_any_tag
  bool allow_overtaking = false; // mpi_assert_allow_overtaking

  bool any() const { return no_any_source || no_any_tag || allow_overtaking; }
  bool no_wildcards() const { return no_any_source && no_any_tag; }
  unsigned bits() const { return (no_any_source ? 1u : 0u) | (no_any_tag ? 2u : 0u) | (allow_overtaking ? 4u : 0u); }
  static Hints from_bits(unsigned b) { return {(b & 1u) != 0, (b & 2u) != 0, (b & 4u) != 0}; }
  Hints merged(const Hints &o) const {
    return {no_any_source || o.no_any_source, no_any_tag || o.no_any_tag, allow_overtaking || o.allow_overtaking};
  }
};

// Assertions set to "true" in info (MPI_INFO_NULL: none).
Hints hints_from_info(MPI_Info info);

// Adds the assertions in force to info as "true".
void hints_to_info(const Hints &h, MPI_Info info);

// The info a constructor hands to the MPI library for a communicator whose
// point-to-point traffic mpix carries: the caller's without the assertions
// above (a copy, freed with this object). The library never matches on
// such a communicator, mpix enforces the assertions itself and
// MPI_Comm_get_info still reports them (mpix adds its own), while Open MPI
// 4.1 applies mpi_assert_no_any_source to its own collectives there too:
// its linear MPI_Barrier posts MPI_ANY_SOURCE receives and hangs. strip
// false: the caller's info as it is.
class LibraryInfo {
 public:
  LibraryInfo(MPI_Info info, bool strip);
  ~LibraryInfo();
  LibraryInfo(const LibraryInfo &) = delete;
  LibraryInfo &operator=(const LibraryInfo &) = delete;
  MPI_Info get() const { return info_; }

 private:
  MPI_Info info_;
  bool owned_ = false;
};

}  // namespace mpix::p2p

#endif
