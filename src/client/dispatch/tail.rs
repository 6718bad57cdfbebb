//! The run's tail (see the module doc of `dispatch.rs`): once the input is done, a lane with room
//! takes a copy of a chunk that a slower daemon holds, so that a distant or slow daemon's last
//! chunks do not hold the run's end.

use std::time::{Duration, Instant};

use super::{Action, Dispatcher, LaneId, Seq};

/// At the run's tail, a chunk is hedged from a lane whose usual time between answers is more than
/// this many times the idle lane's (or not known yet), once held this many times the idle lane's
/// usual time: the idle lane would most likely have answered it twice over. What it costs is a
/// few chunks solved twice at the very end, and what it saves is the wait for a distant or slow
/// daemon's last chunks.
pub const TAIL_FACTOR: u32 = 2;
/// The shortest time a chunk is held before the run's tail hedges it.
pub const TAIL_FLOOR: Duration = Duration::from_millis(50);

impl Dispatcher {
    /// The run's tail (see the module doc): a lane with room takes a copy of the oldest chunk
    /// held alone, by another group, for longer than that lane would take.
    pub(super) fn tail_hedge(&mut self, now: Instant) -> Option<Action> {
        let (seq, idle, _) = self.tail_due().find(|&(_, _, due)| due <= now)?;
        self.give(idle, seq, now);
        Some(Action::Send {
            lane: idle,
            seq,
            hedge: true,
        })
    }

    /// At the run's tail, each chunk held alone that a lane of another group could take, that
    /// lane, and when the chunk is due for it; oldest chunk first.
    fn tail_due(&self) -> impl Iterator<Item = (Seq, LaneId, Instant)> + '_ {
        let tail = self.input_done && self.queue.is_empty();
        self.open
            .iter()
            .filter(move |_| tail)
            .filter_map(|(&seq, open)| {
                let (1, Some(since)) = (open.holders, open.since) else {
                    return None;
                };
                let holder = self.lanes.iter().find(|l| l.holding.contains(&seq))?;
                let idle = self.pick(Some(holder.group))?;
                // Only from a lane slower than the idle one: between lanes that keep the same
                // pace, a copy would only be solved twice.
                let paces = (
                    holder.interval,
                    self.lanes.get(idle).and_then(|l| l.interval),
                );
                if let (Some(held), Some(fast)) = paces
                    && held <= fast * TAIL_FACTOR
                {
                    return None;
                }
                Some((seq, idle, since + self.tail_after(idle)))
            })
    }

    /// How long a chunk is held before `idle` takes a copy at the run's tail.
    fn tail_after(&self, idle: LaneId) -> Duration {
        let usual = self.lanes.get(idle).and_then(|l| l.interval);
        let scaled = usual.map_or(Duration::ZERO, |i| i * TAIL_FACTOR);
        scaled.max(TAIL_FLOOR)
    }

    /// When the first chunk becomes due for a tail hedge.
    pub(super) fn tail_deadline(&self) -> Option<Instant> {
        self.tail_due().map(|(_, _, due)| due).min()
    }
}
