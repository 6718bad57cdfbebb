//! One lane: one daemon, one streaming call (`SolveStream`, or `SolveRpsStream`) at a time. It sends the chunks it is given and
//! reports each answer, checked, in the order it sent them. When its daemon fails it says so
//! once, then tries again in the background (a new connection each time, so a daemon restarted
//! under the same name at another address is found), waiting 0.5 s, then twice as long each time
//! up to 5 s, each wait give or take a fifth so that many clients do not retry in step; once a new
//! call is open it reports itself back with a new inbox.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::Endpoint;

use super::answers::Answers;
use super::dispatch::{LaneId, Seq};
use super::game::{DealProtocol, Protocol};
use super::status::{Verdict, causes, verdict, with_hint};
use crate::auth::AddBearer;
use crate::solver::Options;

const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// A chunk on its way to a lane.
pub type LaneChunk<R> = (Seq, R);

/// What a lane tells the session.
#[derive(Debug)]
pub enum Report<G: Protocol = DealProtocol> {
    /// The lane's daemon answered chunk `seq`.
    Answered {
        lane: LaneId,
        seq: Seq,
        answers: Answers,
    },
    /// The daemon failed: the chunks the lane held were not answered by it.
    Failed { lane: LaneId, reason: String },
    /// The daemon refused what this run asks of every daemon: the run stops.
    Rejected { lane: LaneId, reason: String },
    /// The daemon is back with a new call; chunks go to this inbox now.
    Back {
        lane: LaneId,
        inbox: mpsc::Sender<LaneChunk<G::Request>>,
    },
}

/// What a lane needs for its whole life.
#[derive(Debug)]
pub struct Lane<G: Protocol = DealProtocol> {
    pub id: LaneId,
    pub endpoint: Endpoint,
    pub bearer: AddBearer,
    pub window: usize,
    pub asked: Option<Options>,
    pub reports: mpsc::UnboundedSender<Report<G>>,
    /// Cancelled when the run is over: the lane stops, whatever it is doing.
    pub cancel: CancellationToken,
    /// Cancelled when every chunk is answered: a failed lane stops trying to come back (a lane
    /// with a call open still ends it cleanly).
    pub retire: CancellationToken,
}

/// A call just opened: where its requests go and where its responses come from.
type Call<G> = (
    mpsc::Sender<<G as Protocol>::Request>,
    tonic::Streaming<<G as Protocol>::Response>,
);

/// Reports the lane failed if its task ends without saying how (a panic): the session would
/// otherwise wait for its chunks for ever.
struct Unreported<'a, G: Protocol>(Option<&'a Lane<G>>);

impl<G: Protocol> Drop for Unreported<'_, G> {
    fn drop(&mut self) {
        if let Some(lane) = self.0 {
            let _ = lane.reports.send(Report::Failed {
                lane: lane.id,
                reason: "its task in this client failed unexpectedly".into(),
            });
        }
    }
}

impl<G: Protocol> Lane<G> {
    /// Runs the lane until its inbox closes with every chunk answered, its daemon refuses the run,
    /// or the run is cancelled. The first inbox exists before the first call is open, so chunks
    /// can wait for a daemon that is slow to answer at start.
    pub async fn run(self, first_inbox: mpsc::Receiver<LaneChunk<G::Request>>) {
        let mut inbox = first_inbox;
        let mut call = None;
        loop {
            let mut guard = Unreported(Some(&self));
            let end = tokio::select! {
                end = self.one_call(&mut inbox, call.take()) => end,
                () = self.cancel.cancelled() => {
                    guard.0 = None;
                    return;
                }
            };
            guard.0 = None;
            match end {
                Ok(()) => return,
                Err(Verdict::Rejected(reason)) => {
                    let _ = self.reports.send(Report::Rejected {
                        lane: self.id,
                        reason,
                    });
                    return;
                }
                Err(Verdict::Failed(reason)) => {
                    let _ = self.reports.send(Report::Failed {
                        lane: self.id,
                        reason: with_hint(reason, self.endpoint.uri().scheme_str()),
                    });
                }
            }
            match self.come_back().await {
                Some((opened, next_inbox)) => {
                    call = Some(opened);
                    inbox = next_inbox;
                }
                None => return,
            }
        }
    }

    /// Tries to open a new call until one opens (then reports the lane back), the daemon refuses
    /// the run (reported), or the run is over. Attempts that fail are not reported: the failure
    /// was, once.
    async fn come_back(&self) -> Option<(Call<G>, mpsc::Receiver<LaneChunk<G::Request>>)> {
        let mut wait = RETRY_FIRST;
        loop {
            let jittered = wait.mul_f64(0.8 + 0.4 * fastrand::f64());
            let opened = tokio::select! {
                opened = async {
                    tokio::time::sleep(jittered).await;
                    self.open_call().await
                } => opened,
                () = self.cancel.cancelled() => return None,
                () = self.retire.cancelled() => return None,
            };
            wait = (wait * 2).min(RETRY_MAX);
            match opened {
                Ok(call) => {
                    let (inbox_tx, inbox) = mpsc::channel(self.window.max(1));
                    self.reports
                        .send(Report::Back {
                            lane: self.id,
                            inbox: inbox_tx,
                        })
                        .ok()?;
                    return Some((call, inbox));
                }
                Err(Verdict::Rejected(reason)) => {
                    let _ = self.reports.send(Report::Rejected {
                        lane: self.id,
                        reason,
                    });
                    return None;
                }
                Err(Verdict::Failed(_)) => {}
            }
        }
    }

    /// Connects to the daemon and opens one streaming call.
    async fn open_call(&self) -> Result<Call<G>, Verdict> {
        let channel = self
            .endpoint
            .connect()
            .await
            .map_err(|e| Verdict::Failed(format!("cannot connect: {}", causes(&e))))?;
        let (requests_tx, requests) = mpsc::channel::<G::Request>(self.window.max(1));
        let responses = G::open(channel, self.bearer.clone(), ReceiverStream::new(requests))
            .await
            .map_err(|s| match verdict(&s) {
                Verdict::Failed(reason) => {
                    Verdict::Failed(format!("the stream was refused: {reason}"))
                }
                rejected => rejected,
            })?;
        Ok((requests_tx, responses))
    }

    /// One call: opens it unless it is open already, then sends the inbox's chunks and reports
    /// their answers until the inbox closes and every chunk is answered, or the call fails.
    async fn one_call(
        &self,
        inbox: &mut mpsc::Receiver<LaneChunk<G::Request>>,
        call: Option<Call<G>>,
    ) -> Result<(), Verdict> {
        // Chunks sent and not yet answered, oldest first, with their number of deals.
        let mut pending: VecDeque<(Seq, usize)> = VecDeque::new();
        // A daemon is only connected to once there is work for it: an input with no valid
        // deal needs no daemon, and says nothing about one that is down.
        let mut first = None;
        if call.is_none() {
            match inbox.recv().await {
                Some(chunk) => first = Some(chunk),
                None => return Ok(()),
            }
        }
        let (requests_tx, mut responses) = match call {
            Some(call) => call,
            None => self.open_call().await?,
        };
        if let Some((seq, request)) = first {
            pending.push_back((seq, G::items(&request)));
            // A new channel has room: this cannot fail but by the call ending, which the
            // response side reports.
            let _ = requests_tx.try_send(request);
        }
        let mut requests_tx = Some(requests_tx);
        let mut inbox_open = true;
        loop {
            if !inbox_open && pending.is_empty() {
                // Nothing more to send: ending the request stream lets the daemon end the call.
                requests_tx = None;
            }
            tokio::select! {
                chunk = inbox.recv(), if inbox_open => match chunk {
                    Some((seq, request)) => {
                        pending.push_back((seq, G::items(&request)));
                        if let Some(tx) = &requests_tx {
                            match tx.try_send(request) {
                                // Closed: the call has ended, and the response side says why.
                                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
                                // The session gives a lane at most `window` chunks, so this
                                // cannot happen; should it, the chunks go to another daemon.
                                Err(mpsc::error::TrySendError::Full(_)) => {
                                    return Err(Verdict::Failed(
                                        "its request queue was full (a bug in this client)".into(),
                                    ));
                                }
                            }
                        }
                    }
                    None => inbox_open = false,
                },
                response = responses.message() => match response {
                    Ok(Some(response)) => {
                        let Some((seq, sent)) = pending.pop_front() else {
                            return Err(Verdict::Failed(
                                "it answered a request that was never sent".into(),
                            ));
                        };
                        let answers = G::check(response, sent, self.asked)?;
                        // The session may be gone (the run is over): nothing to do then.
                        let _ = self.reports.send(Report::Answered {
                            lane: self.id,
                            seq,
                            answers,
                        });
                    }
                    Ok(None) if pending.is_empty() && requests_tx.is_none() => return Ok(()),
                    Ok(None) => {
                        return Err(Verdict::Failed(
                            "it ended the stream before answering every request".into(),
                        ));
                    }
                    Err(s) => return Err(verdict(&s)),
                },
            }
        }
    }
}
