// Every MPIX_* environment variable, declared once with its default and help
// text (one table, printed by MPIX_VERBOSE and by the mpix_info tool).
#ifndef MPIX_SRC_CONFIG_H
#define MPIX_SRC_CONFIG_H

#include <cstdio>

#include "progress/transport_kind.h"

namespace mpix {

// The settings in force. No defaults here: config_from_env fills every field
// from the environment or from the table's default (src/config.cc), the one
// place a default is written.
struct Config {
  int verbose;                // MPIX_VERBOSE
  bool intercept_all;         // MPIX_INTERCEPT
  progress::TransportKind transport;  // MPIX_TRANSPORT
  const char *ofi_provider;   // MPIX_OFI_PROVIDER (the environment's string or the table's default)
  long eager_limit;           // MPIX_EAGER_LIMIT
  int landing_slots;          // MPIX_LANDING_SLOTS
  long unexpected_limit;      // MPIX_UNEXPECTED_LIMIT
  int progress_thread;        // MPIX_PROGRESS_THREAD: -1 auto, 0 no, 1 yes
  int stream_queue_depth;     // MPIX_STREAM_QUEUE_DEPTH
  bool stream_host_path;      // MPIX_STREAM_PATH
  long stream_wide_blocks;    // MPIX_STREAM_WIDE_BLOCKS
  long stream_pull_min;       // MPIX_STREAM_PULL_MIN
  bool stream_pull_nonblocking;  // MPIX_STREAM_PULL_NONBLOCKING
  bool gpu;                   // MPIX_GPU
  bool gpu_host_ranges;       // MPIX_GPU_HOST_RANGES
  bool gpu_force_staging;     // MPIX_GPU_PATH
  long gpu_eager_limit;       // MPIX_GPU_EAGER_LIMIT
  long gpu_chunk;             // MPIX_GPU_CHUNK
  int gpu_pipeline;           // MPIX_GPU_PIPELINE
  long gpu_pinned_slots;        // MPIX_GPU_PINNED_SLOTS
  long gpu_ipc_cache;         // MPIX_GPU_IPC_CACHE
  bool gpu_kernel_copy;       // MPIX_GPU_KERNEL_COPY
  long gpu_kernel_copy_max;   // MPIX_GPU_KERNEL_COPY_MAX
  long gpu_kernel_copy_device_max;  // MPIX_GPU_KERNEL_COPY_DEVICE_MAX
  long gpu_kernel_copy_idle_us;  // MPIX_GPU_KERNEL_COPY_IDLE_US
  long gpu_node_eager_limit;  // MPIX_GPU_NODE_EAGER_LIMIT
  long gpu_buffer_after_us;   // MPIX_GPU_BUFFER_AFTER_US
  long gpu_match_threshold;   // MPIX_GPU_MATCH_THRESHOLD
  long region_batch_min;      // MPIX_REGION_BATCH_MIN
  // Device-callable send/recv (MPIX_Comm_device_handle); counts are powers
  // of two (others are rounded down).
  bool device_proxy;          // MPIX_DEVICE_PATH
  long device_table;          // MPIX_DEVICE_TABLE
  long device_keys;           // MPIX_DEVICE_KEYS
  long device_lane_tags;      // MPIX_DEVICE_LANE_TAGS (any count)
  long device_channels;       // MPIX_DEVICE_CHANNELS
  long device_ring;           // MPIX_DEVICE_RING
  long device_slot_bytes;     // MPIX_DEVICE_SLOT_BYTES
  long device_mid_max;        // MPIX_DEVICE_MID_MAX
  long device_mid_ring;       // MPIX_DEVICE_MID_RING
  long device_proxy_queue;    // MPIX_DEVICE_PROXY_QUEUE
  long device_proxy_inline;   // MPIX_DEVICE_PROXY_INLINE
  bool device_far_cells;      // MPIX_DEVICE_FAR_CELLS
  bool device_proxy_hostmem;  // MPIX_DEVICE_PROXY_HOSTMEM
  bool link_check;            // MPIX_LINK_CHECK: off or defer
  bool single_copy;           // MPIX_SINGLE_COPY: auto (on where it works) or off
  long single_copy_min;       // MPIX_SINGLE_COPY_MIN
  long single_copy_split;     // MPIX_SINGLE_COPY_SPLIT
  bool shm_ring;              // MPIX_SHM_RING: on or off
  long shm_ring_bytes;        // MPIX_SHM_RING_BYTES
  long shm_ring_slot_bytes;   // MPIX_SHM_RING_SLOT_BYTES
  long lock_spins;            // MPIX_LOCK_SPINS
  bool lock_bias;             // MPIX_LOCK_BIAS: on or off
  long lanes;                 // MPIX_LANES
  long lane_tag_shift;        // MPIX_LANE_TAG_SHIFT
  long lane_eager_limit;      // MPIX_LANE_EAGER_LIMIT
};

// A setting's value in force, as MPI_T control variables show it: a number,
// or (settings spelled as words) the word that names the behaviour chosen,
// so that an alias ("1" for "on") reads as what it selects.
struct ConfigValue {
  bool is_word;
  long number;
  const char *word;
};

// One row per setting (src/config.cc): everything about it in one place.
struct ConfigVar {
  const char *name;
  const char *default_value;
  const char *help;
  const char *expect;  // what a valid value looks like (range, words)
  // Reads a value into its field: false (the field untouched or partly
  // set) if it is not valid.
  bool (*parse)(Config &c, const char *value);
  // The value in force, as tools read it (src/mpi/mpit.cc).
  ConfigValue (*value)(const Config &c);
};

// The table of variables; count in *n.
const ConfigVar *config_vars(int *n);

// Reads the environment into a Config. Malformed values keep the default and
// are reported in *errors (a message per line), empty when all parsed.
Config config_from_env(char *errors, int errors_len);

// One line per variable: name=value (default, help).
void config_print(std::FILE *out, const char *prefix);

}  // namespace mpix

#endif
