// The checking link (progress/check_link.h) over a fake link: it reads a
// payload handed over with a completion only when it forwards the send,
// keeps the order of every operation, runs completions after forwarding,
// leaves synchronous sends' completions to the link underneath, and counts
// what it holds (the liveness thread and MPI_Finalize's drain rely on it).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "progress/check_link.h"

namespace {

using mpix::progress::Arrival;
using mpix::progress::CheckLink;
using mpix::progress::kFlagSyncAck;
using mpix::progress::Link;
using mpix::progress::Pending;
using mpix::progress::SendMode;
using mpix::progress::WireHeader;

// What the link underneath saw, in order: the bytes as they were when it
// was called (a real link may read them then, or copy them).
struct Call {
  std::string op;
  int tag = 0;
  std::string bytes;
  bool with_done = false;
};

class FakeLink final : public Link {
 public:
  std::vector<Call> *calls;
  int fail_eager = 0;  // error code for every eager send, if nonzero
  // Whether a send with a completion stays pending (the fake never
  // completes it), as a tied or synchronous one does; else it is sent at once.
  bool keep_pending = false;
  explicit FakeLink(std::vector<Call> *c) : calls(c) {}
  int send_eager(int, const WireHeader &h, const void *payload, std::size_t n, Pending *done, bool *pending) override {
    calls->push_back({"eager", h.tag, std::string(static_cast<const char *>(payload), n), done != nullptr});
    *pending = done != nullptr && keep_pending && fail_eager == 0;
    return fail_eager;
  }
  int send_rendezvous(int, const WireHeader &h, const void *, int, MPI_Datatype, SendMode, Pending *done,
                      bool *pending) override {
    calls->push_back({"rendezvous", h.tag, "", done != nullptr});
    *pending = true;
    return MPI_SUCCESS;
  }
  int pull(const Arrival &a, void *, int, MPI_Datatype, Pending *) override {
    calls->push_back({"pull", a.h.tag, "", true});
    return MPI_SUCCESS;
  }
  void discard(const Arrival &a) override { calls->push_back({"discard", a.h.tag, "", false}); }
  void matched(const Arrival &a) override { calls->push_back({"matched", a.h.tag, "", false}); }
  void consumed(int, std::size_t) override {}
  void want_more() override { calls->push_back({"want_more", 0, "", false}); }
  bool eager_sync() const override { return true; }
  int poll() override { return 0; }
};

struct Done final : Pending {
  int runs = 0;
  int error = -1;
  void on_complete(const MPI_Status &st) override {
    ++runs;
    error = st.MPI_ERROR;
  }
};

WireHeader header(int tag, std::uint32_t flags = 0) {
  WireHeader h{};
  h.tag = tag;
  h.kind = mpix::progress::kEager;
  h.flags = flags;
  return h;
}

struct Fixture : ::testing::Test {
  std::vector<Call> calls;
  FakeLink *fake = nullptr;
  std::unique_ptr<CheckLink> link;
  void SetUp() override {
    auto f = std::make_unique<FakeLink>(&calls);
    fake = f.get();
    link = std::make_unique<CheckLink>(std::move(f));
  }
};

using CheckLinkTest = Fixture;

TEST_F(CheckLinkTest, PayloadWithCompletionIsReadOnlyWhenForwarded) {
  char buf[8] = "before";
  Done done;
  bool pending = false;
  ASSERT_EQ(link->send_eager(1, header(5), buf, 6, &done, &pending), MPI_SUCCESS);
  EXPECT_TRUE(pending);
  EXPECT_TRUE(calls.empty());
  EXPECT_EQ(CheckLink::held_everywhere(), 1u);
  std::memcpy(buf, "after!", 6);  // what a caller must not do before completion
  link->poll();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].bytes, "after!");  // the held send read the buffer now
  EXPECT_TRUE(calls[0].with_done);      // with its completion, which ran at once
  EXPECT_EQ(done.runs, 1);
  EXPECT_EQ(done.error, MPI_SUCCESS);
  EXPECT_EQ(CheckLink::held_everywhere(), 0u);
}

// The bug of issue 24 in miniature: one scratch buffer behind two sends
// that carry completions. Through the checking link both arrive with the
// second one's bytes, every time.
TEST_F(CheckLinkTest, SharedScratchBehindCompletionsIsCaught) {
  char scratch[4];
  Done d1, d2;
  bool pending = false;
  std::memcpy(scratch, "AAAA", 4);
  link->send_eager(0, header(1), scratch, 4, &d1, &pending);
  std::memcpy(scratch, "BBBB", 4);
  link->send_eager(0, header(2), scratch, 4, &d2, &pending);
  link->poll();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].bytes, "BBBB");
  EXPECT_EQ(calls[1].bytes, "BBBB");
}

TEST_F(CheckLinkTest, ReusableSendsGoAtOnceBehindHeldOnes) {
  char a[2] = "a", b[2] = "b";
  Done d;
  bool pending = true;
  link->send_eager(0, header(1), a, 1, &d, &pending);
  link->send_eager(0, header(2), b, 1, nullptr, &pending);
  EXPECT_FALSE(pending);
  std::memcpy(b, "x", 1);  // allowed: no completion was asked for
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tag, 1);  // the held one first: order kept
  EXPECT_EQ(calls[1].tag, 2);
  EXPECT_EQ(calls[1].bytes, "b");
  EXPECT_EQ(d.runs, 0);  // forwarded, completed at the next poll
  link->poll();
  EXPECT_EQ(d.runs, 1);
}

TEST_F(CheckLinkTest, EveryOtherOperationForwardsFirst) {
  char p[1] = {'p'};
  Done d[5];
  bool pending = false;
  Arrival a{};
  a.h.tag = 9;
  link->send_eager(0, header(1), p, 1, &d[0], &pending);
  link->send_rendezvous(0, header(2), p, 1, MPI_BYTE, SendMode::kStandard, &d[1], &pending);
  link->send_eager(0, header(3), p, 1, &d[2], &pending);
  link->pull(a, p, 1, MPI_BYTE, &d[3]);
  link->send_eager(0, header(4), p, 1, &d[4], &pending);
  link->matched(a);
  link->send_eager(0, header(5), p, 1, &d[0], &pending);
  link->discard(a);
  link->send_eager(0, header(6), p, 1, &d[0], &pending);
  link->want_more();
  const std::vector<std::string> ops = {"eager",   "rendezvous", "eager", "pull",    "eager",
                                        "matched", "eager",      "discard", "eager", "want_more"};
  ASSERT_EQ(calls.size(), ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(calls[i].op, ops[i]) << i;
  link->poll();
  EXPECT_EQ(CheckLink::held_everywhere(), 0u);
}

TEST_F(CheckLinkTest, PendingSendsCompleteBelow) {
  char p[3] = "ss";
  Done d, e;
  bool pending = false;
  fake->keep_pending = true;  // a synchronous send, or one tied to a busy wire
  link->send_eager(0, header(7, kFlagSyncAck), p, 2, &d, &pending);
  link->send_eager(0, header(8), p, 2, &e, &pending);
  EXPECT_TRUE(pending);
  link->poll();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[0].with_done);  // the link underneath runs them
  EXPECT_TRUE(calls[1].with_done);
  EXPECT_EQ(d.runs + e.runs, 0);
  EXPECT_EQ(CheckLink::held_everywhere(), 0u);
}

TEST_F(CheckLinkTest, ErrorsReachTheCompletion) {
  char p[1] = {'e'};
  Done d;
  bool pending = false;
  fake->fail_eager = MPI_ERR_OTHER;
  link->send_eager(0, header(1), p, 1, &d, &pending);
  link->poll();
  EXPECT_EQ(d.runs, 1);
  EXPECT_EQ(d.error, MPI_ERR_OTHER);
}

TEST_F(CheckLinkTest, ThousandsHeldKeepTheirOrder) {
  constexpr int kSends = 5000;
  std::vector<std::string> payloads(kSends);
  std::vector<Done> done(kSends);
  bool pending = false;
  for (int i = 0; i < kSends; ++i) {
    payloads[static_cast<std::size_t>(i)] = "m" + std::to_string(i);
    const std::string &s = payloads[static_cast<std::size_t>(i)];
    link->send_eager(0, header(i), s.data(), s.size(), &done[static_cast<std::size_t>(i)], &pending);
  }
  EXPECT_EQ(CheckLink::held_everywhere(), static_cast<std::size_t>(kSends));
  link->poll();
  ASSERT_EQ(calls.size(), static_cast<std::size_t>(kSends));
  for (int i = 0; i < kSends; ++i) {
    EXPECT_EQ(calls[static_cast<std::size_t>(i)].tag, i);
    EXPECT_EQ(calls[static_cast<std::size_t>(i)].bytes, payloads[static_cast<std::size_t>(i)]);
    EXPECT_EQ(done[static_cast<std::size_t>(i)].runs, 1);
  }
  EXPECT_EQ(CheckLink::held_everywhere(), 0u);
}

TEST_F(CheckLinkTest, DestroyedLinkForwardsWhatItHeld) {
  char p[2] = "z";
  Done d;
  bool pending = false;
  link->send_eager(0, header(1), p, 1, &d, &pending);
  link.reset();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(CheckLink::held_everywhere(), 0u);
}

}  // namespace
