//! The run's end: once everything is answered, the lanes' inboxes close and the session waits a
//! little for what the daemons still have to say. Part of the session, split out to keep one job
//! per file.

use std::collections::HashSet;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Session;
use crate::client::Event;
use crate::client::dispatch::LaneId;
use crate::client::game::Protocol;
use crate::client::lane::Report;

impl<G: Protocol> Session<G> {
    /// Closes every lane's inbox, which ends its stream, and waits for the reports that still
    /// matter.
    pub(super) async fn end(&mut self, mut reports: mpsc::UnboundedReceiver<Report<G>>) {
        // Done: closing the inboxes ends each lane's stream. A lane that has answered is well: it
        // is waited for only as long as its daemon takes to send its calls' statuses
        // (`close_grace` at most), so that the daemon counts them as completed rather than as
        // cancelled by a client that went away, without a distant or stuck daemon holding the
        // run's end. One that has not answered (say, one that could not connect before the
        // others did all the work) is reported if it fails now, for a little while.
        self.retire.cancel();
        let mut unproven: HashSet<LaneId> = HashSet::new();
        let mut closing: HashSet<LaneId> = HashSet::new();
        for (id, lane) in self.lanes.iter_mut().enumerate() {
            if lane.inbox.take().is_some() {
                match lane.answered {
                    true => closing.insert(id),
                    false => unproven.insert(id),
                };
            }
        }
        let now = Instant::now();
        let late = self.config.late_failures;
        let grace = self.config.close_grace.min(late);
        let deadline = now + late;
        let mut closed = now + grace;
        let mut told = HashSet::new();
        loop {
            let until = match (unproven.is_empty(), closing.is_empty()) {
                (true, true) => break,
                (true, false) => closed,
                (false, true) => deadline,
                (false, false) => deadline.max(closed),
            };
            let report = tokio::select! {
                report = reports.recv() => report,
                () = tokio::time::sleep_until(until) => None,
            };
            let Some(report) = report else { break };
            let lane = match report {
                Report::Failed { lane, reason, .. }
                | Report::Foreign { lane, reason }
                | Report::Rejected { lane, reason } => {
                    // Said once per daemon: not again for one whose failure was said during the
                    // run (another of its calls failed then) and that has not been back since.
                    if unproven.contains(&lane)
                        && let Some(group) = self.lanes.get(lane).map(|l| l.group)
                        && self.daemons.get(group).is_none_or(|d| d.down.is_none())
                        && told.insert(group)
                    {
                        let _ = self.events.send(Event::Failed {
                            daemon: self.daemon(lane),
                            reason,
                            resent: 0,
                            others: 0,
                        });
                    }
                    closing.remove(&lane);
                    lane
                }
                Report::Ended { lane } => {
                    closing.remove(&lane);
                    lane
                }
                // Proven now: its call's status is still to come, a grace from now.
                Report::Answered { lane, .. } => {
                    if unproven.remove(&lane) {
                        closing.insert(lane);
                        closed = closed.max(Instant::now() + grace);
                    }
                    lane
                }
                Report::Back { lane, .. } => lane,
            };
            unproven.remove(&lane);
        }
    }
}
