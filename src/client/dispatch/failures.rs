//! Lanes that fail (see the module doc of `dispatch.rs`): what they held goes back to the queue,
//! the chunk each was on takes a strike, and a chunk with too many strikes is given up on. Part
//! of the dispatcher, split out to keep one job per file.

use std::time::Instant;

use super::{Dispatcher, FailureKind, Group, LaneId, STRIKES, Seq};

impl Dispatcher {
    /// `lane` failed at `now`, as `how` says: what it held goes back to the queue unless another
    /// lane holds it. Returns how many chunks went back.
    pub fn failed(&mut self, lane: LaneId, now: Instant, how: FailureKind) -> usize {
        self.reached |= how == FailureKind::Proxy;
        let Some(l) = self.lanes.get_mut(lane) else {
            return 0;
        };
        l.on_probation = how == FailureKind::Proxy;
        l.up = false;
        l.slowed = false;
        l.blocked = false;
        l.quiet_since = None;
        let held: Vec<Seq> = l.holding.drain(..).collect();
        // The lane answers in order, so its oldest unanswered chunk is the one it was on (one its
        // hedge answered already is not open any more, and not to blame).
        if how == FailureKind::Call
            && let Some(&oldest) = held.iter().find(|seq| self.open.contains_key(seq))
        {
            *self.strikes.entry(oldest).or_default() += 1;
        }
        let mut back = 0;
        for seq in held {
            if self.let_go(seq) {
                back += 1;
            }
        }
        if !self.any_up() && self.none_up_since.is_none() {
            self.none_up_since = Some(now);
        }
        back
    }

    /// An open chunk that failed lanes too often to be their bad luck (see the module doc), and
    /// how many times.
    /// Only once every chunk before it is answered, so that the run's output reaches it: until
    /// then it is not sent again (see [`Dispatcher::next`]).
    pub fn poisoned(&self) -> Option<(Seq, u32)> {
        let (seq, n) = self.struck_out()?;
        let oldest = self.open.keys().next().copied();
        (oldest == Some(seq)).then_some((seq, n))
    }

    /// An open chunk with as many strikes as it takes to be given up on.
    pub(super) fn struck_out(&self) -> Option<(Seq, u32)> {
        let groups: std::collections::BTreeSet<Group> = self
            .lanes
            .iter()
            .filter(|l| !l.retired)
            .map(|l| l.group)
            .collect();
        let limit = STRIKES.max(2 * groups.len() as u32);
        self.strikes
            .iter()
            .find(|&(seq, &n)| n >= limit && self.open.contains_key(seq))
            .map(|(&seq, &n)| (seq, n))
    }

    /// `lane` is up again, with an empty inbox.
    /// Unless its last failure was a proxy's answer: then it takes chunks, but the run's clocks
    /// (giving up, and whether any daemon was ever up) go on until it answers one.
    pub fn back(&mut self, lane: LaneId) {
        let Some(l) = self.lanes.get_mut(lane) else {
            return;
        };
        l.up = true;
        l.blocked = false;
        if !l.on_probation {
            self.ever_up = true;
            self.none_up_since = None;
        }
    }

    /// The inbox of `lane` refused chunk `seq` (the lane is failing and will report it): the
    /// chunk is taken back, and the lane gets nothing more until it reports.
    pub fn refused(&mut self, lane: LaneId, seq: Seq) {
        if let Some(l) = self.lanes.get_mut(lane) {
            if let Some(at) = l.holding.iter().position(|&s| s == seq) {
                l.holding.remove(at);
            }
            l.blocked = true;
        }
        self.let_go(seq);
    }

    /// One lane lets go of `seq`: back to the queue if no other lane holds it (true then).
    fn let_go(&mut self, seq: Seq) -> bool {
        let Some(open) = self.open.get_mut(&seq) else {
            return false;
        };
        open.holders = open.holders.saturating_sub(1);
        if open.holders > 0 {
            return false;
        }
        open.since = None;
        self.enqueue(seq);
        true
    }
}
