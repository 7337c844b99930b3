/*
 * mpix device point-to-point: the queue protocol, header-only, compiled both
 * by nvcc for device code (user kernels include it through mpix_device.h, no
 * -rdc needed) and as plain C/C++ for the host tests (test/unit, test/mpi),
 * where host threads play the GPU threads. Not a public interface: names
 * start with mpixd_ and may change.
 *
 * Design (issues 6 and 7; papers/000 ch. 6.2-6.3, papers/001):
 *
 * Mailboxes in the receiver's memory (dCUDA, papers/001). Every rank owns
 * one device allocation, exported by CUDA IPC and mapped by every other rank
 * of the node. The sender writes straight into the receiver's memory; no
 * CPU is on the path.
 *
 * Matching by hash table, without locks or queues (papers/000 ch. 6.3.2.4
 * and the event tables of ch. 6.2: producer and consumer compute the same
 * key, so each finds the other's entry in O(1)). MPI orders messages per
 * (source, tag) only, so every message carries its number within its key:
 * the sender counts messages per (destination, tag), the receiver counts
 * receives per (source, tag), each with counters in its own memory (at
 * fixed places for tags below MPIXD_DIRECT_TAGS, in a hash table of keys
 * above: mpixd_counter). The n-th receive of a key is matched to the n-th
 * message of that key: message (tag, n) sits in the receiver's message
 * table for its source at a bucket hashed from (tag, n), and the receive
 * polls that bucket for it. Nobody else ever wants that entry, so taking it
 * needs no lock and no atomic; receives of different keys, and of one key,
 * proceed in parallel, in any order, and every pairing is MPI's.
 *
 * Message table (per source, in the receiver's memory): `buckets` buckets
 * of MPIXD_WAYS entries. A bucket's match keys (tag, n) are one 64-byte line
 * of 64-bit words, so one poll is a few vector loads; the entries beside
 * them hold the size and either the payload (up to MPIXD_INLINE bytes) or
 * where its chunks are in the payload ring. The sender claims a free way
 * with an atomic on its own occupancy word for that bucket (in its own
 * memory), writes the entry and then its match key (release, system
 * scope). The receiver, once done with the entry, clears the key and frees
 * the way with one fire-and-forget atomic AND on the sender's occupancy word
 * (release). A message may go to MPIXD_PROBE consecutive buckets from its
 * hashed one; when all are full the send waits (back-pressure), nothing is
 * overwritten.
 *
 * Lanes (tags below lane_tags, MPIX_DEVICE_LANE_TAGS): each (source, tag)
 * of a small tag has MPIXD_LANE cells of its own in the receiver's memory,
 * and message n of the key always goes to cell n mod MPIXD_LANE. The sender
 * claims nothing: the cell is its message's once the receiver has taken the
 * cell's previous message (n - MPIXD_LANE), which the receiver says by
 * writing the cell's next turn (n rounded down to MPIXD_LANE, plus
 * MPIXD_LANE) into the sender's memory. So a send costs one atomic (its
 * number), with the turn words loaded beside it, instead of two dependent
 * ones (number, then a way of the bucket the number hashes to). A cell's
 * keys only ever grow by MPIXD_LANE, so the key a receive looks for is
 * never a stale one: the receiver reads a tiny message's key and payload in
 * one 16-byte load and leaves the cell as it is (no exchange, no clear).
 * The price: at most MPIXD_LANE messages of one lane key are in flight
 * (later sends wait for receives), where the table holds thousands.
 *
 * Communicators that allow overtaking are matched in order too (MPI allows
 * it): a receive that took any message of its key could bind a staged
 * message whose chunks wait in the ring behind an earlier one of the same
 * key that only its next receive would consume.
 *
 * Payload rings (per (source, channel), channel = hash(tag)): messages above
 * MPIXD_INLINE bytes move in chunks of `slot_bytes` through a ring of
 * staging blocks in the receiver's memory. The sender claims tickets on a
 * counter in its own memory and writes chunk j into slot (ticket + j) mod
 * slots, publishing it with the chunk's sequence word; the receiver returns
 * credits by writing into the sender's memory how many tickets it has
 * released. Messages that fit the ring claim all their tickets at once, when
 * there is room; longer ones claim them up front and stream as credits come
 * back. Slots are released in ticket order: whoever marks a chunk consumed
 * tries the ring's release lock, and a thread that fails leaves the work to
 * the holder, which looks again after unlocking (a lock is only ever tried,
 * never waited for: see mpixd_try_lock).
 *
 * Medium messages (above MPIXD_INLINE up to mid_max, to peers with
 * cells): flagged lines in a medium ring, one hand-over each (mid.h).
 *
 * Progress guarantee: on the IPC path a device call only ever waits for the
 * peer's device threads (on the proxy path also for mpix's progress thread).
 * Kernels in different processes always progress relative to each other: no
 * co-residency is needed between sender and receiver kernels, as long as
 * each can start (ranks sharing one GPU must leave each other room on it:
 * waiting blocks keep their SM resources). Within one
 * process, a thread spinning in MPIX_Send/MPIX_Wait needs the threads that
 * will receive (or send) its message to be resident at the same time, as
 * for any spin wait. A request advances only while its owner tests or waits
 * on it (no background progress on the GPU). A staged message whose receive
 * is not yet posted holds its ring slots, so, as in MPI, it can delay later
 * staged messages of the same channel until its receive comes.
 */
#ifndef MPIX_DEVICE_PROTO_H
#define MPIX_DEVICE_PROTO_H

/* The protocol, one header per concept (as libfabric's fi_*.h under
 * fabric.h): */
#include "types.h"  /* status codes, constants, the handle and the request */
#include "layout.h" /* the mailbox: its records and where each region lies */
#include "keys.h"   /* hashing, match keys, per-key numbering */
#include "bytes.h"  /* payload copies */
#include "table.h"  /* the message table */
#include "lanes.h"  /* lanes, and the choice of a lane cell or the table */
#include "ring.h"   /* the payload rings */
#include "mid.h"    /* medium messages: flagged lines, one hand-over */
#include "pull.h"   /* pulled messages: the receiver copies from the sender's buffer */
#include "checks.h" /* argument checks */

#endif
