// Every MPIX_* environment variable, declared once with its default and help
// text (one table, printed by MPIX_VERBOSE and by the mpix_info tool).
#ifndef MPIX_SRC_CONFIG_H
#define MPIX_SRC_CONFIG_H

#include <cstdio>

namespace mpix {

struct Config {
  int verbose = 0;                 // MPIX_VERBOSE
  bool intercept_all = false;      // MPIX_INTERCEPT
  int transport = 0;               // MPIX_TRANSPORT: 0 auto, 1 pmpi, 2 ucx
  long eager_limit = 16384;        // MPIX_EAGER_LIMIT
  int landing_slots = 16;          // MPIX_LANDING_SLOTS
  long unexpected_limit = 64L << 20;  // MPIX_UNEXPECTED_LIMIT
  int progress_thread = -1;        // MPIX_PROGRESS_THREAD: -1 auto, 0 no, 1 yes
  int stream_queue_depth = 1024;   // MPIX_STREAM_QUEUE_DEPTH
  bool gpu = true;                 // MPIX_GPU
  bool gpu_force_staging = false;  // MPIX_GPU_PATH
  long gpu_eager_limit = 8192;     // MPIX_GPU_EAGER_LIMIT
  long gpu_chunk = 4L << 20;       // MPIX_GPU_CHUNK
  int gpu_pipeline = 4;            // MPIX_GPU_PIPELINE
  long gpu_ipc_cache = 256;        // MPIX_GPU_IPC_CACHE
  long gpu_match_threshold = 131072;  // MPIX_GPU_MATCH_THRESHOLD
  // Device-callable send/recv (MPIX_Comm_device_handle); counts are powers
  // of two (others are rounded down).
  bool device_proxy = false;        // MPIX_DEVICE_PATH
  long device_table = 8192;         // MPIX_DEVICE_TABLE
  long device_keys = 65536;         // MPIX_DEVICE_KEYS
  long device_channels = 32;        // MPIX_DEVICE_CHANNELS
  long device_ring = 64;            // MPIX_DEVICE_RING
  long device_slot_bytes = 16384;   // MPIX_DEVICE_SLOT_BYTES
  long device_proxy_queue = 4096;   // MPIX_DEVICE_PROXY_QUEUE
  long device_proxy_inline = 256;   // MPIX_DEVICE_PROXY_INLINE
  bool device_proxy_hostmem = false;  // MPIX_DEVICE_PROXY_HOSTMEM
};

struct ConfigVar {
  const char *name;
  const char *default_value;
  const char *help;
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
