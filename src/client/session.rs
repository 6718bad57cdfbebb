//! The async loop of a run: it takes submissions as the dispatcher has room, carries out what the
//! dispatcher decides (chunks to lanes, hedges), feeds it what the lanes report, adds lanes as
//! names resolve to new addresses, and hands each chunk's first answer to its submitter.
//!
//! Every chunk's request stays here until it is answered, so a lane that fails, or is hedged,
//! needs to hand nothing back: the dispatcher knows what it held, and the requests are resent
//! from here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::answers::Answers;
use super::connect::{Daemon, Target};
use super::discovery::{Found, Watch};
use super::dispatch::{Action, Delivery, Dispatcher, LaneId, Policy, Seq};
use super::game::{DealProtocol, Protocol};
use super::lane::{self, LaneChunk, Report};
use super::tally::Tally;
use super::{ClientConfig, ClientError, Event, HEDGE_FACTOR, sleep_until_some};

/// One request message and where its answers go.
#[derive(Debug)]
pub struct Chunk<G: Protocol = DealProtocol> {
    pub request: G::Request,
    pub reply: oneshot::Sender<Answers>,
}

/// A lane as the session sees it.
struct LaneHandle<G: Protocol> {
    daemon: Daemon,
    /// Where its chunks go; `None` while it is down, and once the input is done.
    inbox: Option<mpsc::Sender<LaneChunk<G::Request>>>,
    /// Its name's watcher, told to resolve again when the lane fails.
    again: Option<Arc<Notify>>,
    /// Why it last failed, for the run's error if no daemon ever answers.
    failure: Option<String>,
}

struct Session<G: Protocol> {
    config: ClientConfig,
    dispatcher: Dispatcher,
    lanes: Vec<LaneHandle<G>>,
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
    /// What happened to the daemons while none has ever answered: told as soon as one does. If
    /// none ever does, the run's error says what each failed with, once, instead of a warning
    /// per daemon that its work "waits for a daemon to be back" just before the run gives up.
    held: Vec<Event>,
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
        window: config.window,
        give_up_after: config.give_up_after,
        hedge_floor: config.hedge_floor,
        hedge_factor: HEDGE_FACTOR,
    };
    let mut session = Session {
        dispatcher: Dispatcher::new(policy),
        lanes: Vec::new(),
        chunks: HashMap::new(),
        sent: HashSet::new(),
        tally: Tally::default(),
        reports: reports_tx,
        events,
        cancel: cancel.clone(),
        retire: cancel.child_token(),
        held: Vec::new(),
        config,
    };
    let ended = session.drive(submissions, reports).await;
    let tally = std::mem::take(&mut session.tally);
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
                Target::Url(url) => self.add_lane(Daemon::Url(url), None),
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
                        self.add_lane(daemon.clone(), Some(watch.again.clone()));
                    }
                    tokio::spawn(watch.run(known));
                }
            }
        }
        if self.lanes.is_empty() {
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
            let now = Instant::now();
            if self.dispatcher.gives_up(now.into_std()) {
                return Err(self.gave_up());
            }
            if self.dispatcher.is_done() {
                self.tell_held();
                break;
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
        // Done: closing the inboxes ends each lane's stream. Report the lanes that fail now (say,
        // one that could not connect before the others did all the work), for a little while.
        self.retire.cancel();
        for lane in &mut self.lanes {
            lane.inbox = None;
        }
        // Once every lane has ended, its reports end too: the session's own sender goes (for one
        // whose receiver is already gone, so nothing can be sent on it).
        drop(std::mem::replace(
            &mut self.reports,
            mpsc::unbounded_channel().0,
        ));
        let lanes = &self.lanes;
        let events = &self.events;
        let late = async {
            while let Some(report) = reports.recv().await {
                if let Report::Failed { lane, reason } | Report::Rejected { lane, reason } = report
                    && let Some(daemon) = lanes.get(lane).map(|l| l.daemon.clone())
                {
                    let _ = events.send(Event::Failed {
                        daemon,
                        reason,
                        resent: 0,
                        others: 0,
                    });
                }
            }
        };
        let _ = tokio::time::timeout(self.config.late_failures, late).await;
        Ok(())
    }

    fn add_lane(&mut self, daemon: Daemon, again: Option<Arc<Notify>>) {
        let id = self.dispatcher.add_lane();
        // The dispatcher, the lanes and the tally number lanes alike.
        self.tally.lane_added(daemon.clone());
        let (inbox_tx, inbox) = mpsc::channel(self.config.window.max(1));
        let lane = match self.config.connector.endpoint(&daemon) {
            Ok(endpoint) => lane::Lane::<G> {
                id,
                endpoint,
                bearer: self.config.bearer.clone(),
                window: self.config.window,
                asked: self.config.asked,
                reports: self.reports.clone(),
                cancel: self.cancel.child_token(),
                retire: self.retire.child_token(),
            },
            Err(e) => {
                // Addresses were checked when the targets were parsed, and the certificates when
                // they were read; what is left (TLS set-up) says why through its sources.
                let _ = self.reports.send(Report::Failed {
                    lane: id,
                    reason: super::status::causes(&e),
                });
                self.lanes.push(LaneHandle {
                    daemon,
                    inbox: None,
                    again,
                    failure: None,
                });
                return;
            }
        };
        tokio::spawn(lane.run(inbox));
        self.lanes.push(LaneHandle {
            daemon,
            inbox: Some(inbox_tx),
            again,
            failure: None,
        });
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
                Action::Slowed { lane, holding } => {
                    if let Some(l) = self.lanes.get(lane) {
                        let daemon = l.daemon.clone();
                        self.tell(Event::Slowed { daemon, holding });
                    }
                }
            }
        }
    }

    fn report(&mut self, report: Report<G>) -> Result<(), ClientError> {
        let now = Instant::now().into_std();
        match report {
            Report::Answered { lane, seq, answers } => {
                match self.dispatcher.answered(lane, seq, now) {
                    Delivery::First => {
                        if let Some(chunk) = self.chunks.remove(&seq) {
                            self.sent.remove(&seq);
                            self.tally.answered(lane, G::items(&chunk.request));
                            // The submitter may be gone (its reader closed the output): nothing
                            // to do.
                            let _ = chunk.reply.send(answers);
                        }
                    }
                    Delivery::Duplicate => self.tally.duplicates += 1,
                }
                self.tell_held();
            }
            Report::Failed { lane, reason } => {
                let resent = self.dispatcher.failed(lane, now);
                let others = self
                    .lanes
                    .iter()
                    .enumerate()
                    .filter(|(i, l)| *i != lane && l.inbox.is_some())
                    .count();
                if let Some((seq, failures)) = self.dispatcher.poisoned() {
                    let items = self.chunks.get(&seq).map_or(0, |c| G::items(&c.request));
                    return Err(ClientError::ChunkFails {
                        chunk: seq,
                        items,
                        failures,
                        reason,
                    });
                }
                if let Some(l) = self.lanes.get_mut(lane) {
                    l.inbox = None;
                    if let Some(again) = &l.again {
                        again.notify_one();
                    }
                    l.failure = Some(reason.clone());
                    let daemon = l.daemon.clone();
                    self.tell(Event::Failed {
                        daemon,
                        reason,
                        resent,
                        others,
                    });
                }
            }
            Report::Rejected { lane, reason } => {
                let daemon = self.daemon(lane);
                return Err(ClientError::Rejected { daemon, reason });
            }
            Report::Back { lane, inbox } => {
                self.dispatcher.back(lane);
                if let Some(l) = self.lanes.get_mut(lane) {
                    l.inbox = Some(inbox);
                    let daemon = l.daemon.clone();
                    self.tell(Event::Back { daemon });
                }
            }
        }
        Ok(())
    }

    fn found(&mut self, found: Found) {
        match found {
            Found::Daemon(daemon) => {
                let again = self.lanes.iter().find_map(|l| match (&l.daemon, &daemon) {
                    (Daemon::Resolved { name: a, .. }, Daemon::Resolved { name: b, .. })
                        if a == b =>
                    {
                        l.again.clone()
                    }
                    _ => None,
                });
                let _ = self.events.send(Event::Found {
                    daemon: daemon.clone(),
                });
                self.add_lane(daemon, again);
            }
            Found::Failed { name, error } => {
                let _ = self.events.send(Event::ResolveFailed { name, error });
            }
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

    fn daemon(&self, lane: LaneId) -> Daemon {
        self.lanes
            .get(lane)
            .map_or_else(|| Daemon::Url("?".into()), |l| l.daemon.clone())
    }

    /// The run's error when it gives up; the events held (if none ever answered) are in it.
    fn gave_up(&self) -> ClientError {
        let daemons = self.lanes.iter().map(|l| l.daemon.clone());
        if self.dispatcher.ever_up() {
            return ClientError::GaveUp {
                daemons: daemons.collect(),
                waited: self.config.give_up_after,
            };
        }
        let failed = self
            .lanes
            .iter()
            .map(|l| {
                let reason = l.failure.clone();
                (
                    l.daemon.clone(),
                    reason.unwrap_or_else(|| "not reached".into()),
                )
            })
            .collect();
        ClientError::NeverUp { failed }
    }
}
