// One test per matching rule of mpix::match::Matcher.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "match/matcher.h"

namespace mpix::match {
namespace {

constexpr Key kA{1, 10};
constexpr Key kB{1, 11};
constexpr Key kC{2, 10};

const Mode kAllModes[] = {Mode::kOrdered, Mode::kOrderedWildcard, Mode::kUnordered};
const Mode kOrderedModes[] = {Mode::kOrdered, Mode::kOrderedWildcard};

std::string mode_label(const testing::TestParamInfo<Mode>& info) {
  switch (info.param) {
    case Mode::kOrdered: return "Ordered";
    case Mode::kOrderedWildcard: return "OrderedWildcard";
    case Mode::kUnordered: return "Unordered";
  }
  return "Unknown";
}

class AnyMode : public testing::TestWithParam<Mode> {};
class OrderedMode : public testing::TestWithParam<Mode> {};

TEST_P(AnyMode, PostThenArriveMatches) {
  Matcher m(GetParam());
  const PostResult p = m.post(kA, 100);
  ASSERT_EQ(p.status, Status::kQueued);
  const ArriveResult a = m.arrive(kA, 200);
  ASSERT_EQ(a.status, Status::kMatched);
  EXPECT_EQ(a.partner, 100u);
  EXPECT_EQ(m.stats().posted_depth, 0u);
  EXPECT_EQ(m.stats().unexpected_depth, 0u);
}

TEST_P(AnyMode, ArriveThenPostMatches) {
  Matcher m(GetParam());
  ASSERT_EQ(m.arrive(kA, 200).status, Status::kQueued);
  const PostResult p = m.post(kA, 100);
  ASSERT_EQ(p.status, Status::kMatched);
  EXPECT_EQ(p.partner, 200u);
}

// arrive_with makes the message's cookie only when the message is queued
// (the engine builds no record of a message a posted receive takes at once),
// and the queued cookie is the one it made.
TEST_P(AnyMode, ArriveWithMakesTheCookieOnlyWhenQueued) {
  Matcher m(GetParam());
  int made = 0;
  const auto make = [&made] {
    ++made;
    return Cookie{200};
  };
  ASSERT_EQ(m.post(kA, 100).status, Status::kQueued);
  const ArriveResult matched = m.arrive_with(kA, make);
  ASSERT_EQ(matched.status, Status::kMatched);
  EXPECT_EQ(matched.partner, 100u);
  EXPECT_EQ(made, 0);
  ASSERT_EQ(m.arrive_with(kA, make).status, Status::kQueued);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(m.stats().unexpected_depth, 1u);
  const PostResult p = m.post(kA, 101);
  ASSERT_EQ(p.status, Status::kMatched);
  EXPECT_EQ(p.partner, 200u);
  EXPECT_EQ(made, 1);
}

// post_with makes the receive's cookie only when the receive is queued (the
// engine's blocking receive of a message already here makes no request), and
// counts as a post, matched or not.
TEST_P(AnyMode, PostWithMakesTheCookieOnlyWhenQueued) {
  Matcher m(GetParam());
  int made = 0;
  const auto make = [&made] {
    ++made;
    return Cookie{100};
  };
  ASSERT_EQ(m.arrive(kA, 200).status, Status::kQueued);
  const PostResult matched = m.post_with(kA, make);
  ASSERT_EQ(matched.status, Status::kMatched);
  EXPECT_EQ(matched.partner, 200u);
  EXPECT_EQ(made, 0);
  ASSERT_EQ(m.post_with(kA, make).status, Status::kQueued);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(m.stats().posted_depth, 1u);
  EXPECT_EQ(m.stats().posts, 2u);
  EXPECT_EQ(m.stats().matches, 1u);
  const ArriveResult a = m.arrive(kA, 201);
  ASSERT_EQ(a.status, Status::kMatched);
  EXPECT_EQ(a.partner, 100u);
}

// key_busy tells a batch caller which keys must go through the queues.
TEST_P(AnyMode, KeyBusyWhileAnythingOfTheKeyIsQueued) {
  Matcher m(GetParam());
  EXPECT_FALSE(m.key_busy(kA));
  ASSERT_EQ(m.post(kA, 100).status, Status::kQueued);
  EXPECT_TRUE(m.key_busy(kA));
  EXPECT_FALSE(m.key_busy(kB));
  ASSERT_EQ(m.arrive(kA, 200).status, Status::kMatched);
  EXPECT_FALSE(m.key_busy(kA));
  ASSERT_EQ(m.arrive(kC, 300).status, Status::kQueued);
  EXPECT_TRUE(m.key_busy(kC));
  EXPECT_FALSE(m.key_busy(kA));
}

TEST(KeyBusy, AnyQueuedWildcardReceiveMakesEveryKeyBusy) {
  Matcher m(Mode::kOrderedWildcard);
  ASSERT_EQ(m.post(Key{kAnySource, 10}, 100).status, Status::kQueued);
  EXPECT_TRUE(m.key_busy(kA));
  EXPECT_TRUE(m.key_busy(kB));  // conservative: another tag
  ASSERT_EQ(m.arrive(kA, 200).status, Status::kMatched);
  EXPECT_FALSE(m.key_busy(kB));
}

TEST_P(AnyMode, DifferentKeysDoNotMatch) {
  Matcher m(GetParam());
  ASSERT_FALSE(m.post(kA, 1).matched());
  EXPECT_FALSE(m.arrive(kB, 2).matched());  // same source, other tag
  EXPECT_FALSE(m.arrive(kC, 3).matched());  // same tag, other source
  EXPECT_FALSE(m.post({10, 1}, 4).matched());  // fields swapped
  EXPECT_EQ(m.stats().posted_depth, 2u);
  EXPECT_EQ(m.stats().unexpected_depth, 2u);
}

TEST_P(AnyMode, ManyEntriesOfOneKeyAllMatchOnce) {
  Matcher m(GetParam());
  for (Cookie c = 0; c < 1000; ++c) ASSERT_FALSE(m.arrive(kA, c).matched());
  std::vector<bool> seen(1000, false);
  for (Cookie c = 0; c < 1000; ++c) {
    const PostResult p = m.post(kA, 5000 + c);
    ASSERT_TRUE(p.matched());
    ASSERT_LT(p.partner, 1000u);
    EXPECT_FALSE(seen[p.partner]) << "message matched twice";
    seen[p.partner] = true;
  }
  EXPECT_FALSE(m.post(kA, 9999).matched());
}

TEST_P(AnyMode, DuplicateCookiesAreDistinctEntries) {
  // The engine never interprets cookies: equal cookies are still two entries.
  Matcher m(GetParam());
  EXPECT_FALSE(m.post(kA, 7).matched());
  EXPECT_FALSE(m.post(kA, 7).matched());
  EXPECT_EQ(m.stats().posted_depth, 2u);
  EXPECT_EQ(m.arrive(kA, 1).partner, 7u);
  EXPECT_EQ(m.arrive(kA, 2).partner, 7u);
  EXPECT_FALSE(m.arrive(kA, 3).matched());
}

TEST_P(AnyMode, ExtremeTagsAndSources) {
  Matcher m(GetParam());
  const Key zero{0, 0};
  const Key huge_tag{0, INT32_MAX};
  const Key huge_source{INT32_MAX, 0};
  const Key huge_both{INT32_MAX, INT32_MAX};
  EXPECT_FALSE(m.arrive(zero, 1).matched());
  EXPECT_FALSE(m.arrive(huge_tag, 2).matched());
  EXPECT_FALSE(m.arrive(huge_source, 3).matched());
  EXPECT_FALSE(m.arrive(huge_both, 4).matched());
  EXPECT_EQ(m.post(huge_both, 10).partner, 4u);
  EXPECT_EQ(m.post(huge_source, 11).partner, 3u);
  EXPECT_EQ(m.post(huge_tag, 12).partner, 2u);
  EXPECT_EQ(m.post(zero, 13).partner, 1u);
  EXPECT_EQ(m.stats().unexpected_depth, 0u);
}

TEST_P(AnyMode, InvalidKeysAreRejectedWithoutEffect) {
  Matcher m(GetParam());
  // Messages never carry wildcards; MPI_PROC_NULL (often -1 or -2) must be
  // filtered by the caller and is rejected here.
  EXPECT_EQ(m.arrive({kAnySource, 1}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.arrive({1, kAnyTag}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.arrive({-2, 1}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.post({-2, 1}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.post({1, -5}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.post({INT32_MIN, 1}, 1).status, Status::kInvalidKey);
  EXPECT_FALSE(m.probe({-2, 1}).found);
  EXPECT_FALSE(m.take({1, -2}).found);
  const Stats s = m.stats();
  EXPECT_EQ(s.posted_depth + s.unexpected_depth, 0u);
}

TEST_P(AnyMode, ProbeDoesNotRemove) {
  Matcher m(GetParam());
  EXPECT_FALSE(m.probe(kA).found);
  ASSERT_FALSE(m.post(kB, 50).matched());
  EXPECT_FALSE(m.probe(kB).found) << "probe must not see posted receives";
  ASSERT_FALSE(m.arrive(kA, 1).matched());
  for (int i = 0; i < 3; ++i) {
    const ProbeResult p = m.probe(kA);
    ASSERT_TRUE(p.found);
    EXPECT_EQ(p.cookie, 1u);
  }
  EXPECT_EQ(m.stats().unexpected_depth, 1u);
  EXPECT_EQ(m.post(kA, 9).partner, 1u);
  EXPECT_FALSE(m.probe(kA).found);
}

TEST_P(AnyMode, TakeRemovesWithoutPosting) {
  Matcher m(GetParam());
  EXPECT_FALSE(m.take(kA).found);
  ASSERT_FALSE(m.arrive(kA, 1).matched());
  ASSERT_FALSE(m.arrive(kA, 2).matched());
  const ProbeResult t = m.take(kA);
  ASSERT_TRUE(t.found);
  EXPECT_EQ(m.stats().unexpected_depth, 1u);
  EXPECT_EQ(m.stats().posted_depth, 0u);
  const PostResult p = m.post(kA, 9);
  ASSERT_TRUE(p.matched());
  EXPECT_NE(p.partner, t.cookie);
  EXPECT_EQ(m.stats().takes, 1u);
}

TEST_P(AnyMode, CancelRemovesOnlyThatReceive) {
  Matcher m(GetParam());
  const PostResult r1 = m.post(kA, 1);
  const PostResult r2 = m.post(kA, 2);
  const PostResult r3 = m.post(kA, 3);
  EXPECT_TRUE(m.cancel(r2.handle));
  EXPECT_FALSE(m.cancel(r2.handle)) << "second cancel of the same receive";
  EXPECT_EQ(m.stats().posted_depth, 2u);
  const ArriveResult a1 = m.arrive(kA, 10);
  const ArriveResult a2 = m.arrive(kA, 11);
  ASSERT_TRUE(a1.matched() && a2.matched());
  EXPECT_NE(a1.partner, 2u);
  EXPECT_NE(a2.partner, 2u);
  EXPECT_FALSE(m.cancel(r1.handle)) << "matched receives cannot be cancelled";
  EXPECT_FALSE(m.cancel(r3.handle));
  EXPECT_FALSE(m.cancel(RecvHandle{})) << "null handle";
  EXPECT_FALSE(m.arrive(kA, 12).matched());
  EXPECT_EQ(m.stats().cancels, 1u);
}

TEST_P(AnyMode, StaleHandleFailsAfterSlotReuse) {
  Matcher m(GetParam());
  const PostResult old = m.post(kA, 1);
  ASSERT_TRUE(m.arrive(kA, 2).matched());
  // The freed slot is reused by the next entry; the old handle must not
  // cancel the new receive.
  const PostResult fresh = m.post(kA, 3);
  EXPECT_EQ(fresh.handle.slot, old.handle.slot);
  EXPECT_FALSE(m.cancel(old.handle));
  EXPECT_EQ(m.stats().posted_depth, 1u);
  EXPECT_TRUE(m.cancel(fresh.handle));
}

TEST_P(AnyMode, CancelOfHandleIntoTrimmedMemoryFails) {
  Matcher m(GetParam());
  std::vector<RecvHandle> handles;
  for (int i = 0; i < 5000; ++i) handles.push_back(m.post({0, i}, i).handle);
  for (const RecvHandle& h : handles) ASSERT_TRUE(m.cancel(h));
  m.trim();
  for (const RecvHandle& h : handles) EXPECT_FALSE(m.cancel(h));
}

TEST_P(AnyMode, StatsCountOperations) {
  Matcher m(GetParam());
  m.post(kA, 1);
  m.post(kA, 2);
  m.arrive(kB, 3);
  m.arrive(kA, 4);
  m.probe(kB);
  const Stats s = m.stats();
  EXPECT_EQ(s.posts, 2u);
  EXPECT_EQ(s.arrivals, 2u);
  EXPECT_EQ(s.matches, 1u);
  EXPECT_EQ(s.probes, 1u);
  EXPECT_EQ(s.posted_depth, 1u);
  EXPECT_EQ(s.unexpected_depth, 1u);
  EXPECT_EQ(s.max_posted_depth, 2u);
  EXPECT_EQ(s.max_unexpected_depth, 1u);
  EXPECT_GT(s.bytes, 0u);
}

TEST_P(AnyMode, DrainReturnsEverythingInQueueOrder) {
  Matcher m(GetParam());
  const PostResult r = m.post(kA, 1);
  m.post(kC, 2);
  m.post(kA, 3);
  m.arrive(kB, 10);
  m.arrive({5, 5}, 11);
  m.arrive(kB, 12);
  EXPECT_EQ(m.posted_entries().size(), 3u);
  const Drained d = m.drain();
  ASSERT_EQ(d.posted.size(), 3u);
  EXPECT_EQ(d.posted[0].cookie, 1u);
  EXPECT_EQ(d.posted[1].cookie, 2u);
  EXPECT_EQ(d.posted[2].cookie, 3u);
  EXPECT_EQ(d.posted[1].key, kC);
  ASSERT_EQ(d.unexpected.size(), 3u);
  EXPECT_EQ(d.unexpected[0].cookie, 10u);
  EXPECT_EQ(d.unexpected[1].cookie, 11u);
  EXPECT_EQ(d.unexpected[2].cookie, 12u);
  EXPECT_EQ(m.stats().posted_depth + m.stats().unexpected_depth, 0u);
  EXPECT_FALSE(m.cancel(r.handle));
  EXPECT_FALSE(m.arrive(kA, 20).matched());
}

TEST_P(AnyMode, BatchOnlyInUnorderedMode) {
  Matcher m(GetParam());
  const Entry one{kA, 1};
  BatchPair pairs[2];
  std::uint32_t qa[1];
  QueuedReceive qr[1];
  const MatcherBatchCounts c = m.match_batch(&one, 1, &one, 1, {pairs, qa, qr});
  EXPECT_EQ(c.status, GetParam() == Mode::kUnordered ? Status::kMatched : Status::kWrongMode);
}

INSTANTIATE_TEST_SUITE_P(Modes, AnyMode, testing::ValuesIn(kAllModes), mode_label);

// ---- Non-overtaking (ordered modes) ----

TEST_P(OrderedMode, ArrivalsMatchInArrivalOrderPerKey) {
  Matcher m(GetParam());
  for (Cookie c = 1; c <= 5; ++c) m.arrive(kA, c);
  m.arrive(kB, 100);  // another key in between changes nothing
  for (Cookie c = 1; c <= 5; ++c) EXPECT_EQ(m.post(kA, 50 + c).partner, c);
  EXPECT_EQ(m.post(kB, 60).partner, 100u);
}

TEST_P(OrderedMode, ReceivesMatchInPostOrderPerKey) {
  Matcher m(GetParam());
  for (Cookie c = 1; c <= 5; ++c) m.post(kA, c);
  for (Cookie c = 1; c <= 5; ++c) EXPECT_EQ(m.arrive(kA, 50 + c).partner, c);
}

TEST_P(OrderedMode, CancelInTheMiddleKeepsOrder) {
  Matcher m(GetParam());
  std::vector<PostResult> r;
  for (Cookie c = 0; c < 6; ++c) r.push_back(m.post(kA, c));
  EXPECT_TRUE(m.cancel(r[0].handle));  // head
  EXPECT_TRUE(m.cancel(r[3].handle));  // middle
  EXPECT_TRUE(m.cancel(r[5].handle));  // tail
  for (Cookie want : {1u, 2u, 4u}) EXPECT_EQ(m.arrive(kA, 99).partner, want);
  EXPECT_FALSE(m.arrive(kA, 99).matched());
}

TEST_P(OrderedMode, TakeAndProbeSeeTheOldest) {
  Matcher m(GetParam());
  m.arrive(kA, 1);
  m.arrive(kA, 2);
  EXPECT_EQ(m.probe(kA).cookie, 1u);
  EXPECT_EQ(m.take(kA).cookie, 1u);
  EXPECT_EQ(m.probe(kA).cookie, 2u);
}

INSTANTIATE_TEST_SUITE_P(Modes, OrderedMode, testing::ValuesIn(kOrderedModes), mode_label);

// ---- Aux words (the exact modes) ----

// Each message's aux word comes back with it, whether it headed its key
// when queued or became the head later (copied from beside its node), and
// through every way out: post, probe, take, drain.
TEST(AuxWords, TravelWithTheirMessageThroughEveryWayOut) {
  for (Mode mode : {Mode::kOrdered, Mode::kUnordered}) {
    Matcher m(mode);
    ASSERT_TRUE(m.keeps_aux());
    for (Cookie c = 1; c <= 6; ++c) {
      ASSERT_EQ(m.arrive_with(kA, [c] { return c; }, 1000 + c).status, Status::kQueued);
      ASSERT_EQ(m.arrive_with(kB, [c] { return 10 + c; }, 2000 + c).status, Status::kQueued);
    }
    const PostResult p = m.post(kA, 99);
    EXPECT_EQ(p.partner, 1u);
    EXPECT_EQ(p.partner_aux, 1001u);
    EXPECT_EQ(m.probe(kA).aux, 1002u);
    const ProbeResult t = m.take(kA);
    EXPECT_EQ(t.cookie, 2u);
    EXPECT_EQ(t.aux, 1002u);
    EXPECT_EQ(m.post(kA, 98).partner_aux, 1003u);
    EXPECT_EQ(m.post(kB, 97).partner_aux, 2001u);
    // A receive queued on an emptied key, then matched by a message with a
    // word: the receive's side has none.
    for (int i = 0; i < 3; ++i) m.post(kA, 90);
    ASSERT_EQ(m.post(kA, 96).status, Status::kQueued);
    const Drained d = m.drain();
    ASSERT_EQ(d.unexpected.size(), 5u);
    for (const Entry& e : d.unexpected) EXPECT_EQ(e.aux, 2000 + (e.cookie - 10)) << "cookie " << e.cookie;
    for (const Entry& e : d.posted) EXPECT_EQ(e.aux, 0u);
  }
}

// Thousands of keys, each with a few messages, across pool chunks that are
// freed and opened again: every word stays with its message.
TEST(AuxWords, SurviveManyKeysAndChunkReuse) {
  Matcher m(Mode::kOrdered);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3000; ++i)
      for (int j = 0; j < 3; ++j) {
        const Cookie c = static_cast<Cookie>(round * 100000 + i * 3 + j + 1);
        m.arrive_with(Key{i % 7, i}, [c] { return c; }, c * 31);
      }
    for (int i = 2999; i >= 0; --i)
      for (int j = 0; j < 3; ++j) {
        const PostResult p = m.post(Key{i % 7, i}, 5);
        ASSERT_TRUE(p.matched());
        ASSERT_EQ(p.partner, static_cast<Cookie>(round * 100000 + i * 3 + j + 1));
        ASSERT_EQ(p.partner_aux, p.partner * 31);
      }
    m.trim();
  }
}

// The wildcard mode's buckets hold sequence numbers, not aux words: a
// message with one is refused, and nothing is queued.
TEST(AuxWords, WildcardModeRefusesThem) {
  Matcher m(Mode::kOrderedWildcard);
  EXPECT_FALSE(m.keeps_aux());
  int made = 0;
  EXPECT_EQ(m.arrive_with(kA, [&made] { ++made; return Cookie{1}; }, 5).status, Status::kWrongMode);
  EXPECT_EQ(made, 0);
  EXPECT_EQ(m.stats().unexpected_depth, 0u);
  EXPECT_EQ(m.arrive_with(kA, [] { return Cookie{2}; }, 0).status, Status::kQueued);
  EXPECT_EQ(m.post(kA, 3).partner_aux, 0u);
}

// ---- Wildcards ----

TEST(NoWildcardModes, RejectWildcards) {
  for (Mode mode : {Mode::kOrdered, Mode::kUnordered}) {
    Matcher m(mode);
    EXPECT_EQ(m.post({kAnySource, 1}, 1).status, Status::kInvalidKey);
    EXPECT_EQ(m.post({1, kAnyTag}, 1).status, Status::kInvalidKey);
    EXPECT_EQ(m.post({kAnySource, kAnyTag}, 1).status, Status::kInvalidKey);
    m.arrive(kA, 5);
    EXPECT_FALSE(m.probe({kAnySource, kA.tag}).found);
    EXPECT_FALSE(m.take({kA.source, kAnyTag}).found);
    EXPECT_EQ(m.stats().posted_depth, 0u);
    EXPECT_EQ(m.stats().unexpected_depth, 1u);
  }
}

class Wildcard : public testing::Test {
 protected:
  Matcher m{Mode::kOrderedWildcard};
};

TEST_F(Wildcard, EarlierWildcardReceiveBeatsLaterExactOne) {
  m.post({kAnySource, 10}, 1);
  m.post({1, 10}, 2);
  EXPECT_EQ(m.arrive({1, 10}, 100).partner, 1u);
  EXPECT_EQ(m.arrive({1, 10}, 101).partner, 2u);
}

TEST_F(Wildcard, EarlierExactReceiveBeatsLaterWildcard) {
  m.post({1, 10}, 1);
  m.post({kAnySource, kAnyTag}, 2);
  EXPECT_EQ(m.arrive({1, 10}, 100).partner, 1u);
  EXPECT_EQ(m.arrive({1, 10}, 101).partner, 2u);
}

TEST_F(Wildcard, AllFourKindsCompeteByPostOrder) {
  m.post({1, kAnyTag}, 1);
  m.post({kAnySource, kAnyTag}, 2);
  m.post({kAnySource, 10}, 3);
  m.post({1, 10}, 4);
  for (Cookie want = 1; want <= 4; ++want) EXPECT_EQ(m.arrive({1, 10}, 99).partner, want);
  EXPECT_FALSE(m.arrive({1, 10}, 99).matched());
}

TEST_F(Wildcard, WildcardReceivesOnlyTakeEligibleMessages) {
  m.post({kAnySource, 10}, 1);
  m.post({2, kAnyTag}, 2);
  EXPECT_FALSE(m.arrive({1, 11}, 100).matched());  // neither accepts it
  EXPECT_EQ(m.arrive({2, 11}, 101).partner, 2u);
  EXPECT_EQ(m.arrive({3, 10}, 102).partner, 1u);
  EXPECT_EQ(m.stats().unexpected_depth, 1u);
}

TEST_F(Wildcard, WildcardPostTakesEarliestEligibleArrival) {
  m.arrive({1, 5}, 100);
  m.arrive({2, 5}, 101);
  m.arrive({1, 6}, 102);
  m.arrive({2, 6}, 103);
  EXPECT_EQ(m.post({kAnySource, 6}, 1).partner, 102u);
  EXPECT_EQ(m.post({2, kAnyTag}, 2).partner, 101u);
  EXPECT_EQ(m.post({kAnySource, kAnyTag}, 3).partner, 100u);
  EXPECT_EQ(m.post({1, 6}, 4).status, Status::kQueued);
  EXPECT_EQ(m.post({2, 6}, 5).partner, 103u);
}

TEST_F(Wildcard, ProbeAndTakeWithWildcards) {
  m.arrive({1, 5}, 100);
  m.arrive({2, 6}, 101);
  EXPECT_EQ(m.probe({kAnySource, 6}).cookie, 101u);
  EXPECT_EQ(m.probe({1, kAnyTag}).cookie, 100u);
  EXPECT_EQ(m.probe({kAnySource, kAnyTag}).cookie, 100u);
  EXPECT_FALSE(m.probe({3, kAnyTag}).found);
  EXPECT_EQ(m.take({kAnySource, kAnyTag}).cookie, 100u);
  EXPECT_EQ(m.probe({kAnySource, kAnyTag}).cookie, 101u);
  EXPECT_FALSE(m.probe({1, kAnyTag}).found);
  EXPECT_EQ(m.stats().unexpected_depth, 1u);
}

TEST_F(Wildcard, CancelledWildcardNoLongerCompetes) {
  const PostResult any = m.post({kAnySource, kAnyTag}, 1);
  m.post({1, 10}, 2);
  EXPECT_TRUE(m.cancel(any.handle));
  EXPECT_EQ(m.arrive({1, 10}, 100).partner, 2u);
  EXPECT_FALSE(m.arrive({1, 11}, 101).matched());
}

TEST_F(Wildcard, WildcardsWithExtremeValues) {
  m.arrive({INT32_MAX, INT32_MAX}, 100);
  m.arrive({0, 0}, 101);
  EXPECT_EQ(m.post({kAnySource, INT32_MAX}, 1).partner, 100u);
  EXPECT_EQ(m.post({0, kAnyTag}, 2).partner, 101u);
  m.post({INT32_MAX, kAnyTag}, 3);
  EXPECT_FALSE(m.arrive({0, INT32_MAX}, 102).matched());
  EXPECT_EQ(m.arrive({INT32_MAX, 0}, 103).partner, 3u);
}

TEST_F(Wildcard, DrainListsEachMessageOnce) {
  m.arrive({1, 5}, 100);
  m.arrive({2, 5}, 101);
  m.post({3, kAnyTag}, 1);
  const Drained d = m.drain();
  ASSERT_EQ(d.unexpected.size(), 2u);  // the wildcard indexes are not listed
  EXPECT_EQ(d.unexpected[0].cookie, 100u);
  EXPECT_EQ(d.unexpected[1].cookie, 101u);
  ASSERT_EQ(d.posted.size(), 1u);
  EXPECT_EQ(d.posted[0].key, (Key{3, kAnyTag}));
}

}  // namespace
}  // namespace mpix::match
