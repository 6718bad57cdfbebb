//! What each daemon did in a run, counted by the session as it happens, for the summary a long
//! job ends with (`--progress log`, `-v`): who answered how much, and what was sent twice. Nothing
//! in it changes the answers.

use super::connect::Daemon;
use super::dispatch::LaneId;

/// A run's account of its daemons, handed over in [`super::Event::Done`] however the run ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Every daemon the run used, in the order it was added (one per lane: an address a name
    /// resolved to twice counts once per time it was found).
    pub daemons: Vec<Share>,
    /// Requests sent again because the daemon holding them failed (or its inbox refused them).
    pub resent: Sent,
    /// Requests also sent to a second daemon because the first had gone quiet.
    pub hedged: Sent,
    /// Answers dropped because another daemon had answered the same request first.
    pub duplicates: u64,
}

/// The requests a daemon answered first, and the items (deals or cases) in them: its share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    pub daemon: Daemon,
    pub requests: u64,
    pub items: u64,
}

/// Requests, and the items in them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub requests: u64,
    pub items: u64,
}

impl Sent {
    fn add(&mut self, items: usize) {
        self.requests += 1;
        self.items += items as u64;
    }
}

impl Tally {
    /// Items answered, by whichever daemon answered first.
    pub fn items(&self) -> u64 {
        self.daemons.iter().map(|d| d.items).sum()
    }

    pub(super) fn lane_added(&mut self, daemon: Daemon) -> LaneId {
        self.daemons.push(Share {
            daemon,
            requests: 0,
            items: 0,
        });
        self.daemons.len() - 1
    }

    pub(super) fn answered(&mut self, lane: LaneId, items: usize) {
        if let Some(share) = self.daemons.get_mut(lane) {
            share.requests += 1;
            share.items += items as u64;
        }
    }

    pub(super) fn sent_again(&mut self, hedge: bool, items: usize) {
        if hedge {
            self.hedged.add(items);
        } else {
            self.resent.add(items);
        }
    }
}
