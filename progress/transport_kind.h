// Which transport carries handled communicators' messages: the one
// encoding of MPIX_TRANSPORT from the setting's row (src/config.cc) to the
// transport's start (transport.h). Apart so that the settings need no more
// of progress/ than this.
#ifndef MPIX_PROGRESS_TRANSPORT_KIND_H
#define MPIX_PROGRESS_TRANSPORT_KIND_H

namespace mpix::progress {

enum class TransportKind { kAuto, kPmpi, kUcx, kOfi };

}  // namespace mpix::progress

#endif
