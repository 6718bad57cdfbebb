//! The client's policy as a synchronous state machine: which chunk goes to which daemon, what is
//! resent when a daemon fails, when a daemon that has gone quiet has its chunks hedged onto
//! another, and when the run gives up. It knows chunks by number only and does no I/O; the
//! session feeds it what happens and carries out what it decides, with real time, and the tests
//! below drive it with a fake clock.
//!
//! - A chunk is *open* until its first answer; it is held by at most two lanes (its first, and
//!   one hedge), or waits in the queue. The queue goes out oldest first, since the printer waits
//!   on the oldest.
//! - A chunk goes to the live lane with the fewest chunks unanswered that has room (fewer than
//!   `window`) and is not slowed.
//! - A lane answers its chunks in the order it was given them. A lane that holds chunks and has
//!   answered none for `max(hedge_floor, hedge_factor x its usual time between answers)` is
//!   slowed: each chunk it holds that no other lane holds is given to another lane too, and it
//!   gets nothing new until it answers again. The first answer to a chunk wins; a later one is a
//!   duplicate, dropped.
//! - Lanes come in groups, one per daemon (several calls to one address); a hedge goes to
//!   another group, since a sibling lane shares the daemon's fate and its workers.
//! - Once the input is done and nothing waits in the queue, a lane with room hedges the oldest
//!   chunk held by one lane of another group, more than [`TAIL_FACTOR`] times slower than it
//!   (or of a pace not known yet), for longer than [`TAIL_FACTOR`] times the idle
//!   lane's usual time between answers (at least [`TAIL_FLOOR`]): a daemon that is slow, not
//!   only one that is silent, does not hold the run's end.
//! - A lane that fails gives back what it holds: chunks no other lane holds go back to the queue.
//! - A retired lane (its address left DNS, or is not a patience daemon) gets nothing new; it
//!   still answers what it holds, or fails and gives it back; it counts as up for nothing.
//! - With chunks in the queue and no lane up for `give_up_after` (at once if no lane has ever
//!   answered and nothing but a refused connection was met: a wrong address, a daemon not
//!   started; a proxy answering for daemons that are down is waited for), the run gives up.
//! - A chunk that was the oldest unanswered of a lane when it failed, [`STRIKES`] times (or
//!   twice per lane, if there are more lanes), is taken to be what makes calls fail (a proxy
//!   refusing its size, a daemon that cannot answer it): the run gives up on it, rather than
//!   resend it forever while every daemon comes back only to fail on it again.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

mod failures;
mod tail;

pub use tail::{TAIL_FACTOR, TAIL_FLOOR};

/// Failures of a lane while a chunk was its oldest unanswered, after which the chunk is taken to
/// be their cause: more than a rolling restart of a few daemons gives one chunk.
pub const STRIKES: u32 = 5;

/// A chunk's number, in input order.
pub type Seq = u64;
/// A lane's number, in the order lanes were added.
pub type LaneId = usize;
/// A group of lanes: the calls to one daemon.
pub type Group = usize;

/// The knobs of the policy.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Chunks one lane may hold unanswered.
    pub window: usize,
    /// With chunks waiting and no lane up for this long, give up.
    pub give_up_after: Duration,
    /// A lane is hedged after answering nothing for at least this long...
    pub hedge_floor: Duration,
    /// ...or this many times its usual time between answers, when that is longer.
    pub hedge_factor: u32,
}

/// How a lane failed, which decides what its failure counts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// Nothing answered at its address (no connection): no chunk is to blame, and a run in
    /// which nothing ever answered gives up at once.
    Unreached,
    /// Something answered about itself, not the requests (a proxy without upstreams): no chunk
    /// is to blame, and the run waits `give_up_after` for it.
    Proxy,
    /// A call that was open failed: its oldest unanswered chunk takes a strike.
    Call,
}

/// What the session should do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send chunk `seq` to `lane`; `hedge` when another lane holds it too.
    Send { lane: LaneId, seq: Seq, hedge: bool },
    /// `lane` has gone quiet: its chunks are being hedged (said once per episode).
    Slowed { lane: LaneId, holding: usize },
}

/// What to do with an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The chunk's first answer: hand it to the printer.
    First,
    /// The chunk was answered already (by the other lane that held it): drop this one.
    Duplicate,
}

#[derive(Debug, Default)]
struct LaneState {
    group: Group,
    up: bool,
    /// Takes nothing new, for good.
    retired: bool,
    /// Its last failure was a proxy's answer: a call that opens after it proves nothing (a proxy
    /// without upstreams opens every call), so it counts as up only once it answers.
    on_probation: bool,
    /// Chunks given to this lane and not answered by it, in the order it will answer them.
    holding: VecDeque<Seq>,
    /// Since when the lane has been holding chunks without answering one.
    quiet_since: Option<Instant>,
    /// Its usual time between answers while busy (an exponential moving average).
    interval: Option<Duration>,
    /// Hedged: gets nothing new until it answers again.
    slowed: bool,
    /// Its inbox refused a chunk (it is failing and will say so): nothing more until it does.
    blocked: bool,
    /// When it was last given a chunk (the dispatcher's count of chunks given), to break ties.
    last_given: u64,
}

/// An open chunk.
#[derive(Debug)]
struct Open {
    /// Lanes holding it (at most two).
    holders: u8,
    /// Since when it has been held by the lanes holding it.
    since: Option<Instant>,
}

#[derive(Debug)]
pub struct Dispatcher {
    policy: Policy,
    lanes: Vec<LaneState>,
    /// Open chunks: answered by no lane yet.
    open: BTreeMap<Seq, Open>,
    /// Open chunks no lane holds, oldest first.
    queue: VecDeque<Seq>,
    input_done: bool,
    /// When the last lane up failed, while none is up.
    none_up_since: Option<Instant>,
    /// Whether any lane has answered or come back.
    ever_up: bool,
    /// Whether something answered at some address, if only a proxy's error: worth waiting for.
    reached: bool,
    /// Chunks given so far, to every lane.
    given: u64,
    /// Open chunks that were the oldest unanswered of a failing lane, and how many times.
    strikes: BTreeMap<Seq, u32>,
}

impl Dispatcher {
    pub fn new(policy: Policy) -> Dispatcher {
        Dispatcher {
            policy,
            lanes: Vec::new(),
            open: BTreeMap::new(),
            queue: VecDeque::new(),
            input_done: false,
            none_up_since: None,
            ever_up: false,
            reached: false,
            given: 0,
            strikes: BTreeMap::new(),
        }
    }

    /// A new lane in a group of its own, taken to be up.
    pub fn add_lane(&mut self) -> LaneId {
        let group = self.lanes.len();
        self.add_lane_to(group)
    }

    /// A new lane in `group`, taken to be up: chunks may wait in its inbox while it connects.
    pub fn add_lane_to(&mut self, group: Group) -> LaneId {
        self.lanes.push(LaneState {
            group,
            up: true,
            ..LaneState::default()
        });
        self.none_up_since = None;
        self.lanes.len() - 1
    }

    /// `lane` takes nothing new, for good; it keeps what it holds until it answers it or fails.
    pub fn retire(&mut self, lane: LaneId, now: Instant) {
        if let Some(l) = self.lanes.get_mut(lane) {
            l.retired = true;
        }
        if !self.any_up() && self.none_up_since.is_none() {
            self.none_up_since = Some(now);
        }
    }

    /// Whether `lane` is hedged for going quiet.
    pub fn is_slowed(&self, lane: LaneId) -> bool {
        self.lanes.get(lane).is_some_and(|l| l.slowed)
    }

    /// Whether `lane` was retired.
    pub fn is_retired(&self, lane: LaneId) -> bool {
        self.lanes.get(lane).is_some_and(|l| l.retired)
    }

    /// Whether the session should take the next chunk of input: when a lane has room for it, or
    /// when no lane is up (so that the give-up clock runs with a chunk in hand). Either way at
    /// most one chunk waits in the queue.
    pub fn wants_input(&self) -> bool {
        !self.input_done && self.queue.is_empty() && (!self.any_up() || self.pick(None).is_some())
    }

    /// A new chunk of input.
    pub fn offer(&mut self, seq: Seq) {
        self.open.insert(
            seq,
            Open {
                holders: 0,
                since: None,
            },
        );
        self.enqueue(seq);
    }

    pub fn input_done(&mut self) {
        self.input_done = true;
    }

    /// Every chunk was offered and given to a lane: what the lanes hold is all that is left to
    /// answer (a failure or a hedge may still queue some again).
    pub fn all_given(&self) -> bool {
        self.input_done && self.queue.is_empty()
    }

    /// Every chunk was offered and answered.
    pub fn is_done(&self) -> bool {
        self.input_done && self.open.is_empty()
    }

    /// `lane` answered `seq` at `now`.
    pub fn answered(&mut self, lane: LaneId, seq: Seq, now: Instant) -> Delivery {
        self.ever_up = true;
        self.none_up_since = None;
        if let Some(l) = self.lanes.get_mut(lane) {
            l.on_probation = false;
            if let Some(at) = l.holding.iter().position(|&s| s == seq) {
                l.holding.remove(at);
            }
            if let Some(since) = l.quiet_since {
                let took = now.saturating_duration_since(since);
                l.interval = Some(match l.interval {
                    // Weighted towards the past, so one quick answer does not make a slow lane
                    // look fast (and hedge it needlessly later).
                    Some(old) => (old * 3 + took) / 4,
                    None => took,
                });
            }
            l.quiet_since = (!l.holding.is_empty()).then_some(now);
            l.slowed = false;
        }
        self.strikes.remove(&seq);
        match self.open.remove(&seq) {
            Some(_) => Delivery::First,
            None => Delivery::Duplicate,
        }
    }

    /// The next thing to do at `now`, if any; call until `None`.
    pub fn next(&mut self, now: Instant) -> Option<Action> {
        // A quiet lane first: its chunks are the ones the printer is likely waiting for.
        for id in 0..self.lanes.len() {
            let lane = &self.lanes[id];
            let overdue = lane.up
                && lane.quiet_since.is_some_and(|since| {
                    now.saturating_duration_since(since) >= self.hedge_after(id)
                });
            if !overdue {
                continue;
            }
            if !lane.slowed {
                let holding = lane.holding.len();
                self.lanes[id].slowed = true;
                return Some(Action::Slowed { lane: id, holding });
            }
            let alone = self.lanes[id]
                .holding
                .iter()
                .copied()
                .find(|seq| self.open.get(seq).is_some_and(|o| o.holders == 1));
            if let Some(seq) = alone
                && let Some(other) = self.pick(Some(self.lanes[id].group))
            {
                self.give(other, seq, now);
                return Some(Action::Send {
                    lane: other,
                    seq,
                    hedge: true,
                });
            }
        }
        if self.queue.is_empty() {
            return self.tail_hedge(now);
        }
        // A chunk given up on waits for the chunks before it (which the queue sends first), and
        // so does everything after it: the run ends there.
        if self.queue.front().copied() == self.struck_out().map(|(seq, _)| seq) {
            return None;
        }
        let lane = self.pick(None)?;
        let seq = self.queue.pop_front()?;
        self.give(lane, seq, now);
        Some(Action::Send {
            lane,
            seq,
            hedge: false,
        })
    }

    /// Whether the run should give up at `now`: chunks wait and no lane has been up for
    /// `give_up_after` (or at all, if none ever answered).
    pub fn gives_up(&self, now: Instant) -> bool {
        self.give_up_at().is_some_and(|at| now >= at)
    }

    /// Whether any lane has ever answered or come back.
    pub fn ever_up(&self) -> bool {
        self.ever_up
    }

    /// When something will be due without anything happening first (a hedge, giving up).
    pub fn deadline(&self) -> Option<Instant> {
        let hedges = self.lanes.iter().enumerate().filter_map(|(id, l)| {
            let since = l.quiet_since.filter(|_| l.up && !l.slowed)?;
            Some(since + self.hedge_after(id))
        });
        hedges
            .chain(self.give_up_at())
            .chain(self.tail_deadline())
            .min()
    }

    /// Chunks `lane` holds unanswered.
    pub fn holding(&self, lane: LaneId) -> usize {
        self.lanes.get(lane).map_or(0, |l| l.holding.len())
    }

    fn give_up_at(&self) -> Option<Instant> {
        let since = self.none_up_since.filter(|_| !self.queue.is_empty())?;
        Some(if self.ever_up || self.reached {
            since + self.policy.give_up_after
        } else {
            since
        })
    }

    fn hedge_after(&self, lane: LaneId) -> Duration {
        let usual = self.lanes.get(lane).and_then(|l| l.interval);
        let scaled = usual.map_or(Duration::ZERO, |i| i * self.policy.hedge_factor);
        scaled.max(self.policy.hedge_floor)
    }

    fn give(&mut self, lane: LaneId, seq: Seq, now: Instant) {
        if let Some(l) = self.lanes.get_mut(lane) {
            if l.holding.is_empty() {
                l.quiet_since = Some(now);
            }
            l.holding.push_back(seq);
            self.given += 1;
            l.last_given = self.given;
        }
        if let Some(open) = self.open.get_mut(&seq) {
            open.holders += 1;
            open.since.get_or_insert(now);
        }
    }

    /// The lane to give a chunk to: up, not retired, slowed or blocked, with room, fewest held;
    /// never one of group `except`. Among equals, the one given a chunk longest ago: daemons that keep up all take
    /// turns, and a daemon that joins takes work at once, rather than the first lane taking
    /// everything whenever every lane keeps up.
    fn pick(&self, except: Option<Group>) -> Option<LaneId> {
        self.lanes
            .iter()
            .enumerate()
            .filter(|&(_, l)| {
                Some(l.group) != except
                    && l.up
                    && !l.retired
                    && !l.slowed
                    && !l.blocked
                    && l.holding.len() < self.policy.window
            })
            .min_by_key(|(_, l)| (l.holding.len(), l.last_given))
            .map(|(id, _)| id)
    }

    fn any_up(&self) -> bool {
        self.lanes
            .iter()
            .any(|l| l.up && !l.retired && !l.on_probation)
    }

    /// Puts `seq` in the queue in order.
    fn enqueue(&mut self, seq: Seq) {
        let at = self.queue.partition_point(|&s| s < seq);
        self.queue.insert(at, seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            window: 2,
            give_up_after: Duration::from_secs(30),
            hedge_floor: Duration::from_secs(2),
            hedge_factor: 8,
        }
    }

    /// Runs every action due at `now`; the sends, in order.
    fn sends(d: &mut Dispatcher, now: Instant) -> Vec<(LaneId, Seq, bool)> {
        let mut out = Vec::new();
        while let Some(action) = d.next(now) {
            if let Action::Send { lane, seq, hedge } = action {
                out.push((lane, seq, hedge));
            }
        }
        out
    }

    fn feed(d: &mut Dispatcher, from: Seq, to: Seq) {
        for seq in from..to {
            assert!(d.wants_input(), "no room for chunk {seq}");
            d.offer(seq);
        }
    }

    #[test]
    fn chunks_go_to_the_lane_with_the_fewest_unanswered_up_to_the_window() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        for seq in 0..4 {
            assert!(d.wants_input());
            d.offer(seq);
            sends(&mut d, t);
        }
        assert_eq!((d.holding(a), d.holding(b)), (2, 2));
        assert!(!d.wants_input(), "both lanes are full");
        assert_eq!(d.answered(b, 1, t), Delivery::First);
        assert!(d.wants_input());
        d.offer(4);
        assert_eq!(sends(&mut d, t), [(b, 4, false)]);
    }

    /// The whole input is given out once it is done and no chunk waits for a lane; a failed
    /// lane's chunks waiting again undo that until they are given out.
    #[test]
    fn all_is_given_once_the_input_is_done_and_nothing_waits() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        for seq in 0..3 {
            d.offer(seq);
            sends(&mut d, t);
        }
        d.offer(3);
        assert!(!d.all_given(), "the input is not done");
        d.input_done();
        assert!(!d.all_given(), "a chunk waits for a lane");
        sends(&mut d, t);
        assert!(d.all_given());
        assert_eq!(d.failed(a, t, FailureKind::Call), 2);
        assert!(!d.all_given(), "a's chunks wait again");
        for seq in [1, 3] {
            assert_eq!(d.answered(b, seq, t), Delivery::First);
        }
        assert_eq!(sends(&mut d, t).len(), 2, "b takes a's chunks");
        assert!(d.all_given());
        assert!(!d.is_done());
    }

    /// Daemons that answer every chunk before the next arrives (every lane holds nothing each
    /// time) still take turns, and a lane added later takes the next chunk.
    #[test]
    fn lanes_that_keep_up_take_turns_and_a_new_lane_joins_at_once() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        let mut order = Vec::new();
        let answer = |d: &mut Dispatcher, seq: Seq, order: &mut Vec<LaneId>| {
            d.offer(seq);
            for (lane, seq, _) in sends(d, t) {
                order.push(lane);
                assert_eq!(d.answered(lane, seq, t), Delivery::First);
            }
        };
        for seq in 0..4 {
            answer(&mut d, seq, &mut order);
        }
        assert_eq!(order, [a, b, a, b]);
        let c = d.add_lane();
        answer(&mut d, 4, &mut order);
        assert_eq!(order[4], c, "the new lane takes the next chunk");
    }

    /// A chunk that every lane fails on, again and again, is given up on after [`STRIKES`]
    /// failures (twice per lane with more lanes); one answered after a few is forgotten.
    #[test]
    fn a_chunk_that_keeps_failing_lanes_is_given_up_on() {
        let t = Instant::now();
        let strike = |d: &mut Dispatcher| {
            let sent = sends(d, t);
            let &[(lane, seq, _)] = sent.as_slice() else {
                panic!("one send expected: {sent:?}");
            };
            d.failed(lane, t, FailureKind::Call);
            d.back(lane);
            seq
        };
        let mut d = Dispatcher::new(policy());
        d.add_lane();
        d.add_lane();
        feed(&mut d, 0, 1);
        for n in 1..STRIKES {
            assert_eq!(strike(&mut d), 0);
            assert_eq!(d.poisoned(), None, "after {n} failures");
        }
        strike(&mut d);
        assert_eq!(d.poisoned(), Some((0, STRIKES)));

        // Answered after a few failures: forgotten.
        let mut d = Dispatcher::new(policy());
        let a = d.add_lane();
        feed(&mut d, 0, 1);
        for _ in 1..STRIKES {
            strike(&mut d);
        }
        assert_eq!(sends(&mut d, t), [(a, 0, false)]);
        assert_eq!(d.answered(a, 0, t), Delivery::First);
        assert_eq!(d.poisoned(), None);

        // With four lanes, a chunk may fail each of them twice by bad luck.
        let mut d = Dispatcher::new(policy());
        for _ in 0..4 {
            d.add_lane();
        }
        feed(&mut d, 0, 1);
        for _ in 1..8 {
            strike(&mut d);
        }
        assert_eq!(d.poisoned(), None);
        strike(&mut d);
        assert_eq!(d.poisoned(), Some((0, 8)));
    }

    #[test]
    fn a_failed_lanes_chunks_are_resent_oldest_first() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        feed(&mut d, 0, 1);
        sends(&mut d, t);
        feed(&mut d, 1, 2);
        sends(&mut d, t);
        feed(&mut d, 2, 3);
        sends(&mut d, t);
        // a holds 0 and 2, b holds 1.
        assert_eq!(d.holding(a), 2);
        assert_eq!(d.failed(a, t, FailureKind::Call), 2);
        assert_eq!(sends(&mut d, t), [(b, 0, false)]);
        assert!(!d.wants_input(), "chunk 2 waits for room");
        assert_eq!(d.answered(b, 1, t), Delivery::First);
        assert_eq!(sends(&mut d, t), [(b, 2, false)]);
        assert!(!d.is_done());
        d.input_done();
        d.answered(b, 0, t);
        d.answered(b, 2, t);
        assert!(d.is_done());
    }

    #[test]
    fn a_lane_that_goes_quiet_is_hedged_and_the_first_answer_wins() {
        let t = Instant::now();
        let mut d = Dispatcher::new(Policy {
            window: 4,
            ..policy()
        });
        let (quiet, busy) = (d.add_lane(), d.add_lane());
        for seq in 0..2 {
            d.offer(seq);
            sends(&mut d, t);
        }
        // quiet holds 0, busy holds 1; busy answers quickly and keeps working.
        d.answered(busy, 1, t + Duration::from_millis(10));
        assert_eq!(d.deadline(), Some(t + Duration::from_secs(2)));
        assert!(sends(&mut d, t + Duration::from_millis(1_999)).is_empty());
        let later = t + Duration::from_secs(2);
        assert_eq!(
            d.next(later),
            Some(Action::Slowed {
                lane: quiet,
                holding: 1
            })
        );
        assert_eq!(sends(&mut d, later), [(busy, 0, true)]);
        // The slowed lane gets nothing new.
        d.offer(2);
        assert_eq!(sends(&mut d, later), [(busy, 2, false)]);
        assert_eq!(d.answered(busy, 0, later), Delivery::First);
        // The quiet lane answers at last: a duplicate, and it gets work again.
        assert_eq!(d.answered(quiet, 0, later), Delivery::Duplicate);
        d.offer(3);
        assert_eq!(sends(&mut d, later), [(quiet, 3, false)]);
    }

    #[test]
    fn a_lane_is_hedged_against_its_own_usual_pace() {
        let t = Instant::now();
        let mut d = Dispatcher::new(Policy {
            window: 8,
            ..policy()
        });
        let (slow, other) = (d.add_lane(), d.add_lane());
        // The slow lane answers every 1 s: its hedge comes after 8 s, not the 2 s floor.
        d.offer(0);
        sends(&mut d, t);
        d.offer(1);
        sends(&mut d, t);
        let at = t + Duration::from_secs(1);
        d.answered(slow, 0, at);
        d.answered(other, 1, at);
        d.offer(2);
        assert_eq!(sends(&mut d, at), [(slow, 2, false)]);
        assert_eq!(d.deadline(), Some(at + Duration::from_secs(8)));
        assert!(sends(&mut d, at + Duration::from_secs(7)).is_empty());
        let overdue = at + Duration::from_secs(8);
        assert!(matches!(d.next(overdue), Some(Action::Slowed { lane, .. }) if lane == slow));
        assert_eq!(sends(&mut d, overdue), [(other, 2, true)]);
    }

    #[test]
    fn a_chunk_held_twice_goes_back_to_the_queue_only_when_both_lanes_fail() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        d.offer(0);
        sends(&mut d, t);
        let later = t + Duration::from_secs(3);
        d.next(later);
        assert_eq!(sends(&mut d, later), [(b, 0, true)]);
        assert_eq!(d.failed(a, later, FailureKind::Call), 0, "b still holds it");
        assert_eq!(d.failed(b, later, FailureKind::Call), 1);
    }

    #[test]
    fn the_run_gives_up_after_no_lane_was_up_for_the_whole_wait() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let a = d.add_lane();
        d.offer(0);
        sends(&mut d, t);
        d.answered(a, 0, t);
        d.offer(1);
        sends(&mut d, t);
        d.failed(a, t, FailureKind::Call);
        assert!(!d.gives_up(t + Duration::from_secs(29)));
        assert_eq!(d.deadline(), Some(t + Duration::from_secs(30)));
        assert!(d.gives_up(t + Duration::from_secs(30)));
        // Back in time: the clock stops.
        d.back(a);
        assert!(!d.gives_up(t + Duration::from_secs(31)));
        assert_eq!(sends(&mut d, t + Duration::from_secs(31)), [(a, 1, false)]);
    }

    #[test]
    fn a_run_where_no_daemon_ever_answered_gives_up_at_once() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let a = d.add_lane();
        d.offer(0);
        sends(&mut d, t);
        d.failed(a, t, FailureKind::Call);
        assert!(d.gives_up(t));
    }

    #[test]
    fn without_chunks_waiting_the_run_never_gives_up() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let a = d.add_lane();
        d.failed(a, t, FailureKind::Call);
        assert!(!d.gives_up(t + Duration::from_secs(3_600)));
        // With no lane up, one chunk is taken so that the clock runs with it in hand.
        assert!(d.wants_input());
        d.offer(0);
        assert!(!d.wants_input());
        assert!(d.gives_up(t));
    }

    #[test]
    fn a_refused_chunk_goes_back_and_its_lane_waits_for_its_report() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        d.offer(0);
        assert_eq!(sends(&mut d, t), [(a, 0, false)]);
        d.refused(a, 0);
        assert_eq!(sends(&mut d, t), [(b, 0, false)]);
        d.offer(1);
        assert_eq!(sends(&mut d, t), [(b, 1, false)], "a is blocked");
    }

    /// Offers chunks `from..to` one by one, each sent as it comes; the sends.
    fn offered(d: &mut Dispatcher, from: Seq, to: Seq, now: Instant) -> Vec<(LaneId, Seq, bool)> {
        let mut out = Vec::new();
        for seq in from..to {
            assert!(d.wants_input(), "no room for chunk {seq}");
            d.offer(seq);
            out.extend(sends(d, now));
        }
        out
    }

    /// At the tail, a lane with room takes a copy of the oldest chunk held alone by a lane of
    /// another group, once held longer than the tail's wait; never one of its own group's.
    #[test]
    fn at_the_tail_an_idle_lane_of_another_group_hedges_what_a_slow_one_holds() {
        let t = Instant::now();
        let mut d = Dispatcher::new(Policy {
            window: 4,
            ..policy()
        });
        let slow = d.add_lane_to(0);
        let sibling = d.add_lane_to(0);
        let fast = d.add_lane_to(1);
        assert_eq!(
            offered(&mut d, 0, 3, t),
            [(slow, 0, false), (sibling, 1, false), (fast, 2, false)]
        );
        d.answered(fast, 2, t + Duration::from_millis(1));
        d.input_done();
        // Not yet: held for less than the floor.
        let early = t + TAIL_FLOOR / 2;
        assert!(sends(&mut d, early).is_empty());
        assert_eq!(d.deadline(), Some(t + TAIL_FLOOR));
        let due = t + TAIL_FLOOR;
        // The fast lane hedges both chunks of the other group, oldest first.
        assert_eq!(sends(&mut d, due), [(fast, 0, true), (fast, 1, true)]);
        assert_eq!(d.answered(fast, 0, due), Delivery::First);
        assert_eq!(d.answered(slow, 0, due), Delivery::Duplicate);
        // Between lanes of the same pace, nothing is hedged at the tail.
        let mut d = Dispatcher::new(Policy {
            window: 4,
            ..policy()
        });
        let (a, b) = (d.add_lane_to(0), d.add_lane_to(1));
        assert_eq!(
            offered(&mut d, 0, 4, t),
            [(a, 0, false), (b, 1, false), (a, 2, false), (b, 3, false)]
        );
        let step = Duration::from_millis(10);
        d.answered(a, 0, t + step);
        d.answered(b, 1, t + step);
        d.answered(b, 3, t + step * 2);
        d.input_done();
        assert_eq!(d.deadline(), Some(t + step + Duration::from_secs(2)));
        assert!(sends(&mut d, t + Duration::from_secs(1)).is_empty());
        // Before the input is done, nothing is hedged for being slow.
        let mut d = Dispatcher::new(policy());
        let (a, _b) = (d.add_lane_to(0), d.add_lane_to(1));
        assert_eq!(offered(&mut d, 0, 1, t), [(a, 0, false)]);
        assert!(sends(&mut d, t + Duration::from_secs(1)).is_empty());
    }

    /// A retired lane gets nothing new, answers what it holds, gives it back if it fails, and
    /// no longer counts as up.
    #[test]
    fn a_retired_lane_takes_nothing_new_and_counts_for_nothing() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        assert_eq!(offered(&mut d, 0, 2, t), [(a, 0, false), (b, 1, false)]);
        d.retire(b, t);
        assert_eq!(offered(&mut d, 2, 3, t), [(a, 2, false)]);
        assert_eq!(d.answered(b, 1, t), Delivery::First);
        d.answered(a, 0, t);
        assert_eq!(offered(&mut d, 3, 4, t), [(a, 3, false)]);
        // With the other lane down, no lane is up: the give-up clock runs.
        d.failed(a, t, FailureKind::Call);
        assert!(d.gives_up(t + Duration::from_secs(30)));
        // A retired lane that fails gives back what it held.
        let mut d = Dispatcher::new(policy());
        let (a, b) = (d.add_lane(), d.add_lane());
        offered(&mut d, 0, 2, t);
        d.retire(a, t);
        assert_eq!(d.failed(a, t, FailureKind::Call), 1);
        assert_eq!(sends(&mut d, t), [(b, 0, false)]);
    }

    /// A lane failed by a proxy's answer (something is there) makes a run that never had an
    /// answer wait `give_up_after`, not give up at once.
    #[test]
    fn a_proxys_answer_is_worth_waiting_for() {
        let t = Instant::now();
        let mut d = Dispatcher::new(policy());
        let a = d.add_lane();
        d.offer(0);
        sends(&mut d, t);
        d.failed(a, t, FailureKind::Proxy);
        assert!(!d.gives_up(t));
        assert!(!d.gives_up(t + Duration::from_secs(29)));
        assert!(d.gives_up(t + Duration::from_secs(30)));
    }
}
