// Which libfabric provider the transport opens (progress/ofi/ofi_provider.h),
// from lists as fi_getinfo returns them here and on clusters.
#include <gtest/gtest.h>

#include "progress/ofi/ofi_provider.h"

namespace {

using mpix::progress::ofi::choose_provider;

// This machine's list (libfabric 1.17, Debian), in fi_getinfo's order.
const std::vector<std::string> kHere = {"tcp;ofi_rxm", "tcp;ofi_rxm", "net", "net;ofi_rxm",
                                        "udp;ofi_rxd", "shm",         "sockets"};

TEST(OfiProvider, OneNodeTakesShm) { EXPECT_EQ(choose_provider(kHere, "auto", true), 5); }

TEST(OfiProvider, SeveralNodesTakeTheFirstNetworkProvider) {
  EXPECT_EQ(choose_provider(kHere, "auto", false), 0);
  // Development providers only where nothing else is offered; never shm.
  EXPECT_EQ(choose_provider({"shm", "sockets", "udp;ofi_rxd"}, "auto", false), 1);
  EXPECT_EQ(choose_provider({"net", "tcp;ofi_rxm"}, "auto", false), 1);
  EXPECT_EQ(choose_provider({"shm"}, "auto", false), -1);
  // A cluster's list: its fabric first.
  EXPECT_EQ(choose_provider({"verbs;ofi_rxm", "tcp;ofi_rxm", "shm"}, "auto", false), 0);
  EXPECT_EQ(choose_provider({"cxi", "tcp;ofi_rxm", "shm"}, "auto", true), 2);
}

TEST(OfiProvider, OneNodeWithoutShmTakesTheNetwork) {
  // FI_PROVIDER=tcp leaves libfabric offering only that.
  EXPECT_EQ(choose_provider({"tcp;ofi_rxm", "tcp;ofi_rxm"}, "auto", true), 0);
}

TEST(OfiProvider, ANamedProviderIsTakenExactlyOrByItsCore) {
  EXPECT_EQ(choose_provider(kHere, "shm", false), 5);  // asked for: even across nodes
  EXPECT_EQ(choose_provider(kHere, "tcp", true), 0);
  EXPECT_EQ(choose_provider(kHere, "tcp;ofi_rxm", true), 0);
  EXPECT_EQ(choose_provider(kHere, "net;ofi_rxm", true), 3);
  EXPECT_EQ(choose_provider(kHere, "net", true), 2);
  EXPECT_EQ(choose_provider(kHere, "sockets", true), 6);
  EXPECT_EQ(choose_provider(kHere, "verbs", true), -1);
  EXPECT_EQ(choose_provider(kHere, "tcp;ofi_rxd", true), -1);
  EXPECT_EQ(choose_provider({}, "auto", true), -1);
}

}  // namespace
