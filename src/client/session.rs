//! The async loop of a run: it takes submissions as the dispatcher has room, carries out what the
//! dispatcher decides (chunks to lanes, hedges), feeds it what the lanes report, adds lanes as
//! names resolve to new addresses and retires those of addresses that left or are not daemons,
//! and hands each chunk's first answer to its submitter.
//!
//! Each daemon gets `streams` lanes (a group): several calls at once, each with its own HTTP/2
//! flow-control window, so a distant daemon is not capped at one window per round trip, and a
//! proxy in front of several daemons can spread them. What happens to a daemon is told once for
//! its group, not once per lane.
//!
//! Every chunk's request stays here until it is answered, so a lane that fails, or is hedged,
//! needs to hand nothing back: the dispatcher knows what it held, and the requests are resent
//! from here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::connect::{Daemon, Target};
use super::discovery::Watch;
use super::dispatch::{Action, Delivery, Dispatcher, FailureKind, Group, LaneId, Policy, Seq};
use super::game::Protocol;
use super::lane::{LaneChunk, Report};
use super::tally::Tally;
use super::{ClientConfig, ClientError, Event, HEDGE_FACTOR, sleep_until_some};
use crate::exchange::Chunk;

mod ending;
mod membership;

/// A lane as the session sees it.
struct LaneHandle<G: Protocol> {
    group: Group,
    /// Where its chunks go; `None` while it is down, once retired, and once the input is done.
    inbox: Option<mpsc::Sender<LaneChunk<G::Request>>>,
    /// Cancelled to retire it: a lane that fails then stays down.
    retire: CancellationToken,
    /// Came back after failing, and has not answered since.
    returned: bool,
    /// Has answered a chunk: its daemon was well.
    answered: bool,
}

/// A daemon: the group of lanes that call it.
struct DaemonHandle {
    daemon: Daemon,
    lanes: Vec<LaneId>,
    /// Its name's watcher, told to resolve again when the daemon fails.
    again: Option<Arc<Notify>>,
    /// Why it last failed, for the run's error if no daemon ever answers.
    failure: Option<String>,
    /// Retired: its address left DNS, or is not a patience daemon.
    retired: bool,
    /// Said to have failed (how, the last time), and not yet said to be back. It is back when a
    /// lane opens a call again; after a proxy's answer, only once a lane answers again, since a
    /// proxy without upstreams opens calls and then fails them.
    down: Option<FailureKind>,
}

struct Session<G: Protocol> {
    config: ClientConfig,
    dispatcher: Dispatcher,
    lanes: Vec<LaneHandle<G>>,
    /// Indexed by [`Group`], as the tally's shares are.
    daemons: Vec<DaemonHandle>,
    chunks: HashMap<Seq, Chunk<G>>,
    /// Open chunks sent at least once, to tell a resend from a first send.
    sent: HashSet<Seq>,
    /// What each daemon answered, and what was sent twice.
    tally: Tally,
    reports: mpsc::UnboundedSender<Report<G>>,
    events: mpsc::UnboundedSender<Event>,
    cancel: CancellationToken,
    /// Cancelled once every chunk is answered: failed lanes stop trying to come back.
    retire: CancellationToken,
    /// Cancelled once every chunk has been given to a lane ([`Lane::all_given`](super::lane::Lane)).
    all_given: CancellationToken,
    /// What happened to the daemons while none has ever answered: told as soon as one does. If
    /// none ever does, the run's error says what each failed with, once, instead of a warning
    /// per daemon that its work "waits for a daemon to be back" just before the run gives up.
    held: Vec<Event>,
    /// Why a lane last failed, for the error if a chunk is given up on.
    last_failure: Option<String>,
}

/// Answers every submission, in order, until `submissions` closes and all are answered; or stops
/// the run (`ClientError`). Submissions are taken only as fast as the daemons have room, which is
/// the submitter's backpressure. What happens to the daemons goes to `events`, and last of all,
/// however the run ends, [`Event::Done`] with what each daemon answered.
pub async fn run<G: Protocol>(
    config: ClientConfig,
    submissions: mpsc::Receiver<Chunk<G>>,
    events: mpsc::UnboundedSender<Event>,
) -> Result<(), ClientError> {
    let cancel = CancellationToken::new();
    // However the run ends, lanes and watchers stop.
    let _stop = cancel.clone().drop_guard();
    let (reports_tx, reports) = mpsc::unbounded_channel();
    let policy = Policy {
        window: config.lane_window(),
        give_up_after: config.give_up_after,
        hedge_floor: config.hedge_floor,
        hedge_factor: HEDGE_FACTOR,
    };
    let mut session = Session {
        dispatcher: Dispatcher::new(policy),
        lanes: Vec::new(),
        daemons: Vec::new(),
        chunks: HashMap::new(),
        sent: HashSet::new(),
        tally: Tally::default(),
        reports: reports_tx,
        events,
        cancel: cancel.clone(),
        retire: cancel.child_token(),
        all_given: cancel.child_token(),
        held: Vec::new(),
        last_failure: None,
        config,
    };
    let ended = session.drive(submissions, reports).await;
    let tally = std::mem::take(&mut session.tally);
    // The run's span (the caller's, current here) says what was sent twice.
    let span = tracing::Span::current();
    for (key, sent) in [
        ("patience.client.resent_requests", tally.resent),
        ("patience.client.hedged_requests", tally.hedged),
    ] {
        span.set_attribute(key, i64::try_from(sent.requests).unwrap_or(i64::MAX));
    }
    span.set_attribute(
        "patience.client.items",
        i64::try_from(tally.items()).unwrap_or(i64::MAX),
    );
    let _ = session.events.send(Event::Done(tally));
    ended
}

impl<G: Protocol> Session<G> {
    /// The run itself: the daemons found, the submissions answered, the late failures reported.
    async fn drive(
        &mut self,
        mut submissions: mpsc::Receiver<Chunk<G>>,
        mut reports: mpsc::UnboundedReceiver<Report<G>>,
    ) -> Result<(), ClientError> {
        let (found_tx, mut found) = mpsc::unbounded_channel();
        let mut unresolved: Vec<(String, String)> = Vec::new();
        for target in self.config.targets.clone() {
            match target {
                Target::Url(url) => self.add_daemon(Daemon::Url(url), None),
                Target::Dns { name, port, tls } => {
                    let shown = format!("dns:///{name}:{port}");
                    let watch = Watch {
                        name,
                        port,
                        tls,
                        resolver: self.config.resolver.clone(),
                        every: self.config.dns_refresh,
                        again: Arc::new(Notify::new()),
                        found: found_tx.clone(),
                        cancel: self.cancel.child_token(),
                    };
                    let known = match watch.first().await {
                        Ok(daemons) => daemons,
                        Err(error) => {
                            unresolved.push((shown, error));
                            Vec::new()
                        }
                    };
                    for daemon in &known {
                        self.add_daemon(daemon.clone(), Some(watch.again.clone()));
                    }
                    tokio::spawn(watch.run(known));
                }
            }
        }
        if self.daemons.is_empty() {
            let why: Vec<String> = unresolved
                .iter()
                .map(|(t, e)| format!("{t}: {e}"))
                .collect();
            return Err(ClientError::NoDaemon(why.join("; ")));
        }
        for (name, error) in unresolved {
            let _ = self.events.send(Event::ResolveFailed { name, error });
        }

        let mut next_seq: Seq = 0;
        loop {
            self.act();
            // Also here: a retired daemon lowers the strikes a chunk may take, with no report.
            self.check_poisoned()?;
            let now = Instant::now();
            if self.dispatcher.gives_up(now.into_std()) {
                return Err(self.gave_up());
            }
            if self.dispatcher.is_done() {
                self.tell_held();
                break;
            }
            if self.dispatcher.all_given() && !self.all_given.is_cancelled() {
                self.all_given.cancel();
            }
            let deadline = self.dispatcher.deadline().map(Instant::from_std);
            let take = self.dispatcher.wants_input();
            tokio::select! {
                biased;
                Some(report) = reports.recv() => self.report(report)?,
                Some(found) = found.recv() => self.found(found),
                () = sleep_until_some(deadline) => {}
                submission = submissions.recv(), if take => match submission {
                    Some(submission) => {
                        self.chunks.insert(next_seq, submission);
                        self.dispatcher.offer(next_seq);
                        next_seq += 1;
                    }
                    None => self.dispatcher.input_done(),
                },
            }
        }
        self.end(reports).await;
        Ok(())
    }

    /// Carries out everything the dispatcher has decided.
    fn act(&mut self) {
        let now = Instant::now().into_std();
        while let Some(action) = self.dispatcher.next(now) {
            match action {
                Action::Send { lane, seq, hedge } => {
                    let sent = match (self.lanes.get(lane), self.chunks.get(&seq)) {
                        (
                            Some(LaneHandle {
                                inbox: Some(inbox), ..
                            }),
                            Some(chunk),
                        ) => inbox
                            .try_send((seq, chunk.request.clone()))
                            .is_ok()
                            .then(|| G::items(&chunk.request)),
                        _ => None,
                    };
                    match sent {
                        None => self.dispatcher.refused(lane, seq),
                        Some(items) => {
                            if !self.sent.insert(seq) || hedge {
                                self.tally.sent_again(hedge, items);
                            }
                        }
                    }
                }
                Action::Slowed { lane, .. } => {
                    // The first of its group to go quiet speaks for the daemon, with what the
                    // whole group holds.
                    let group: Vec<LaneId> = self
                        .lanes
                        .get(lane)
                        .and_then(|l| self.daemons.get(l.group))
                        .map_or_else(Vec::new, |d| d.lanes.clone());
                    let first = group
                        .iter()
                        .all(|&l| l == lane || !self.dispatcher.is_slowed(l));
                    if first {
                        let holding = group.iter().map(|&l| self.dispatcher.holding(l)).sum();
                        let daemon = self.daemon(lane);
                        let others = self.lanes.get(lane).map_or(0, |l| self.daemons_up(l.group));
                        self.tell(Event::Slowed {
                            daemon,
                            holding,
                            others,
                        });
                    }
                }
            }
        }
    }

    fn report(&mut self, report: Report<G>) -> Result<(), ClientError> {
        let now = Instant::now().into_std();
        match report {
            Report::Answered { lane, seq, answers } => {
                // A daemon is back when a lane that came back answers: not when a call that was
                // open before it failed does (a draining daemon answers those, and refuses more).
                let (group, returned) = self.lanes.get_mut(lane).map_or((usize::MAX, false), |l| {
                    l.answered = true;
                    (l.group, std::mem::replace(&mut l.returned, false))
                });
                if returned
                    && let Some(d) = self.daemons.get_mut(group)
                    && d.down.take().is_some()
                {
                    let daemon = d.daemon.clone();
                    self.tell(Event::Back { daemon });
                }
                match self.dispatcher.answered(lane, seq, now) {
                    Delivery::First => {
                        if let Some(chunk) = self.chunks.remove(&seq) {
                            self.sent.remove(&seq);
                            self.tally.answered(group, G::items(&chunk.request));
                            // The submitter may be gone (its reader closed the output): nothing
                            // to do.
                            let _ = chunk.reply.send(answers);
                        }
                    }
                    Delivery::Duplicate => self.tally.duplicates += 1,
                }
                self.tell_held();
                self.check_poisoned()?;
            }
            Report::Failed { lane, reason, how } => {
                let resent = self.dispatcher.failed(lane, now, how);
                self.last_failure = Some(reason.clone());
                self.check_poisoned()?;
                let group = match self.lanes.get_mut(lane) {
                    Some(l) => {
                        l.inbox = None;
                        l.group
                    }
                    None => return Ok(()),
                };
                let others = self.daemons_up(group);
                if let Some(d) = self.daemons.get_mut(group) {
                    d.failure = Some(reason.clone());
                    if let Some(again) = &d.again {
                        again.notify_one();
                    }
                    // The first of its group to fail speaks for the daemon.
                    if !d.retired && d.down.replace(how).is_none() {
                        let daemon = d.daemon.clone();
                        self.tell(Event::Failed {
                            daemon,
                            reason,
                            resent,
                            others,
                        });
                    }
                }
            }
            Report::Foreign { lane, reason } => {
                // Another service at the address is not the chunks' fault: no strike.
                self.dispatcher.failed(lane, now, FailureKind::Unreached);
                if let Some(l) = self.lanes.get_mut(lane) {
                    l.inbox = None;
                }
                let group = self.lanes.get(lane).map_or(usize::MAX, |l| l.group);
                if let Some(d) = self.daemons.get_mut(group) {
                    d.failure = Some(reason.clone());
                }
                if self.retire(group) {
                    let daemon = self.daemon(lane);
                    self.tell(Event::Retired { daemon, reason });
                }
            }
            Report::Rejected { lane, reason } => {
                let daemon = self.daemon(lane);
                return Err(ClientError::Rejected { daemon, reason });
            }
            // A lane ends well only once the input is done and it has answered everything.
            Report::Ended { .. } => {}
            Report::Back { lane, inbox } => {
                if self.dispatcher.is_retired(lane) {
                    // Its address left while it came back: nothing for it.
                    return Ok(());
                }
                self.dispatcher.back(lane);
                let Some(l) = self.lanes.get_mut(lane) else {
                    return Ok(());
                };
                l.inbox = Some(inbox);
                l.returned = true;
                let group = l.group;
                if let Some(d) = self.daemons.get_mut(group)
                    && d.down.is_some_and(|how| how != FailureKind::Proxy)
                {
                    d.down = None;
                    let daemon = d.daemon.clone();
                    self.tell(Event::Back { daemon });
                }
                self.tell_held();
            }
        }
        Ok(())
    }

    /// Ends the run on a chunk given up on, once every chunk before it is answered.
    fn check_poisoned(&self) -> Result<(), ClientError> {
        match self.dispatcher.poisoned() {
            None => Ok(()),
            Some((seq, failures)) => Err(ClientError::ChunkFails {
                chunk: seq,
                items: self.chunks.get(&seq).map_or(0, |c| G::items(&c.request)),
                failures,
                reason: self.last_failure.clone().unwrap_or_default(),
            }),
        }
    }

    /// Tells `event` now, or holds it while no daemon has ever answered (see `held`).
    fn tell(&mut self, event: Event) {
        self.held.push(event);
        self.tell_held();
    }

    /// Tells the events held, once some daemon has answered.
    fn tell_held(&mut self) {
        if self.dispatcher.ever_up() || self.dispatcher.is_done() {
            for event in self.held.drain(..) {
                let _ = self.events.send(event);
            }
        }
    }

    /// The run's error when it gives up; the events held (if none ever answered) are in it.
    fn gave_up(&self) -> ClientError {
        let daemons = self.daemons.iter().map(|d| d.daemon.clone());
        if self.dispatcher.ever_up() {
            return ClientError::GaveUp {
                daemons: daemons.collect(),
                waited: self.config.give_up_after,
            };
        }
        let failed = self
            .daemons
            .iter()
            .map(|d| {
                let reason = d.failure.clone();
                (
                    d.daemon.clone(),
                    reason.unwrap_or_else(|| "not reached".into()),
                )
            })
            .collect();
        ClientError::NeverUp { failed }
    }
}
