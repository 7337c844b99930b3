// The progress thread: one per process, started when the first work that
// needs it appears (GPU streams), parked on a condition variable while none
// of its pollers has anything outstanding, so an idle process burns no core.
//
// It calls into MPI concurrently with the application: whoever attaches a
// poller must have made sure the MPI library runs at MPI_THREAD_MULTIPLE.
#ifndef MPIX_PROGRESS_THREAD_H
#define MPIX_PROGRESS_THREAD_H

namespace mpix::progress {

// A source of work the thread drives. Both calls come from the progress
// thread only, never concurrently with each other.
class Poller {
 public:
  virtual ~Poller() = default;
  // One pass over the work; returns how many things moved (0: nothing did).
  virtual int poll() = 0;
  // True when nothing is outstanding: the thread may park until woken.
  virtual bool idle() = 0;
};

// Registers p (not owned; it stays valid until thread_detach) and starts the
// thread if it is not running. Returns false if the thread cannot start.
bool thread_attach(Poller *p);
// Unregisters p; returns after any pass that was using it has ended.
void thread_detach(Poller *p);
// New work: unparks the thread and restarts its fast polling.
void thread_wake();
// Joins the thread (MPI_Finalize); pollers stay registered but unpolled.
void thread_stop();

}  // namespace mpix::progress

#endif
