//! Which daemons take part in a run: each added as a group of lanes (one per call), those found
//! under a name as it is resolved again, and those let go (their address left the name, or is
//! not a patience daemon). Part of the session, split out to keep one job per file.

use std::sync::Arc;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tracing::Instrument as _;

use super::{DaemonHandle, LaneHandle, Session};
use crate::client::Event;
use crate::client::connect::Daemon;
use crate::client::discovery::Found;
use crate::client::dispatch::{FailureKind, Group, LaneId};
use crate::client::game::Protocol;
use crate::client::lane::{self, Report};

impl<G: Protocol> Session<G> {
    /// A daemon: its group of lanes, each with a call of its own.
    pub(super) fn add_daemon(&mut self, daemon: Daemon, again: Option<Arc<Notify>>) {
        let group = self.daemons.len();
        // The session's groups and the tally's shares are numbered alike.
        self.tally.lane_added(daemon.clone());
        let mut lanes = Vec::new();
        for _ in 0..self.config.streams.max(1) {
            lanes.push(self.add_lane(&daemon, group));
        }
        self.daemons.push(DaemonHandle {
            daemon,
            lanes,
            again,
            failure: None,
            retired: false,
            down: None,
        });
    }

    pub(super) fn add_lane(&mut self, daemon: &Daemon, group: Group) -> LaneId {
        let id = self.dispatcher.add_lane_to(group);
        let window = self.config.lane_window();
        let (inbox_tx, inbox) = mpsc::channel(window);
        let retire = self.retire.child_token();
        let lane = match self.config.connector.endpoint(daemon) {
            Ok(endpoint) => lane::Lane::<G> {
                id,
                endpoint,
                bearer: self.config.bearer.clone(),
                window,
                stream_max_bytes: self.config.stream_max_bytes,
                asked: self.config.asked,
                reports: self.reports.clone(),
                cancel: self.cancel.child_token(),
                retire: retire.clone(),
                all_given: self.all_given.child_token(),
            },
            Err(e) => {
                // Addresses were checked when the targets were parsed, and the certificates when
                // they were read; what is left (TLS set-up) says why through its sources.
                let _ = self.reports.send(Report::Failed {
                    lane: id,
                    reason: crate::client::status::causes(&e),
                    how: FailureKind::Call,
                });
                self.lanes.push(LaneHandle {
                    group,
                    inbox: None,
                    retire,
                    returned: false,
                    answered: false,
                });
                return id;
            }
        };
        // Under the run's span: each call's span is a child of it.
        tokio::spawn(lane.run(inbox).in_current_span());
        self.lanes.push(LaneHandle {
            group,
            inbox: Some(inbox_tx),
            retire,
            returned: false,
            answered: false,
        });
        id
    }

    /// Retires every lane of `group`: nothing new goes to them; what they hold they answer, or
    /// give back when they fail. Whether it was not retired before.
    pub(super) fn retire(&mut self, group: Group) -> bool {
        let now = Instant::now().into_std();
        let Some(d) = self.daemons.get_mut(group) else {
            return false;
        };
        if std::mem::replace(&mut d.retired, true) {
            return false;
        }
        for &lane in &d.lanes {
            self.dispatcher.retire(lane, now);
            if let Some(l) = self.lanes.get_mut(lane) {
                l.inbox = None;
                l.retire.cancel();
            }
        }
        true
    }

    pub(super) fn found(&mut self, found: Found) {
        match found {
            Found::Daemon(daemon) => {
                let again =
                    self.daemons
                        .iter()
                        .find_map(|d| match (&d.daemon, &daemon) {
                            (
                                Daemon::Resolved { name: a, .. },
                                Daemon::Resolved { name: b, .. },
                            ) if a == b => d.again.clone(),
                            _ => None,
                        });
                let _ = self.events.send(Event::Found {
                    daemon: daemon.clone(),
                });
                self.add_daemon(daemon, again);
            }
            Found::Gone(daemon) => {
                let groups: Vec<Group> = (0..self.daemons.len())
                    .filter(|&g| self.daemons[g].daemon == daemon && !self.daemons[g].retired)
                    .collect();
                for group in groups {
                    let holding = self.daemons[group]
                        .lanes
                        .iter()
                        .map(|&lane| self.dispatcher.holding(lane))
                        .sum();
                    self.retire(group);
                    let _ = self.events.send(Event::Left {
                        daemon: daemon.clone(),
                        holding,
                    });
                }
            }
            Found::Failed { name, error } => {
                let _ = self.events.send(Event::ResolveFailed { name, error });
            }
        }
    }

    /// Daemons other than `group` with a lane up and not retired.
    pub(super) fn daemons_up(&self, group: Group) -> usize {
        self.daemons
            .iter()
            .enumerate()
            .filter(|&(g, d)| g != group && !d.retired)
            .map(|(_, d)| d)
            .filter(|d| d.lanes.iter().any(|&l| self.lanes[l].inbox.is_some()))
            .count()
    }

    pub(super) fn daemon(&self, lane: LaneId) -> Daemon {
        self.lanes
            .get(lane)
            .and_then(|l| self.daemons.get(l.group))
            .map_or_else(|| Daemon::Url("?".into()), |d| d.daemon.clone())
    }
}
