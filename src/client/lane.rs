//! One lane: one connection to a daemon, with one streaming call (`SolveStream`, or
//! `SolveRpsStream`) being sent on at a time. It sends the chunks it is given and reports each
//! answer, checked, as it comes. A call takes at most `--stream-max-bytes` of requests; then the
//! lane opens the next on the same connection while the last answers what it holds, so that a
//! proxy's body limit is never reached and an L7 balancer can spread the calls. When its daemon
//! fails it says so once, then tries again in the background (a new connection each time, so a
//! daemon restarted under the same name at another address is found), waiting 0.5 s, then twice
//! as long each time up to 5 s, each wait give or take a fifth so that many clients do not retry
//! in step; once a new call is open it reports itself back with a new inbox. An address that is
//! not a patience daemon stops its lane for good.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::time::Duration;

use futures::stream::{self, Stream, StreamExt as _};
use tokio::sync::mpsc;
use tokio_stream::StreamMap;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::dispatch::{FailureKind, LaneId, Seq};
use super::game::{DealProtocol, Exchange, Opened, Protocol};
use super::status::{Verdict, causes, verdict, with_hint};
use crate::auth::AddBearer;
use crate::exchange::Answers;
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
    /// The daemon failed, as `how` says: the chunks the lane held were not answered by it.
    Failed {
        lane: LaneId,
        reason: String,
        how: FailureKind,
    },
    /// The address is not a patience daemon: the lane has stopped for good.
    Foreign { lane: LaneId, reason: String },
    /// The daemon refused what this run asks of every daemon: the run stops.
    Rejected { lane: LaneId, reason: String },
    /// The lane has ended well: its inbox closed with every chunk answered.
    Ended { lane: LaneId },
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
    /// A call takes no more request bytes than this (unless its first chunk alone is larger):
    /// then it is closed and the next chunk opens a new call, which a proxy counts as a new
    /// request (its body limit) and may send to another upstream.
    pub stream_max_bytes: usize,
    pub asked: Option<Options>,
    pub reports: mpsc::UnboundedSender<Report<G>>,
    /// Cancelled when the run is over: the lane stops, whatever it is doing.
    pub cancel: CancellationToken,
    /// Cancelled when every chunk is answered, or when this lane's address has left DNS: a failed
    /// lane stops trying to come back (a lane with a call open still ends it cleanly).
    pub retire: CancellationToken,
    /// Cancelled once the whole input has been given to the lanes: a lane then ends its call's
    /// requests, so that the daemon sends the call's status right after its last answer rather
    /// than a round trip after the run's end. A chunk sent after that (a resend, a hedge) goes on
    /// a call of its own.
    pub all_given: CancellationToken,
}

/// A call's responses, then `None` once it has ended without an error.
type CallResponses<G> =
    Pin<Box<dyn Stream<Item = Option<Result<<G as Exchange>::Response, Status>>> + Send>>;

/// A call just opened: the connection it is on, where its requests go, where its responses come
/// from.
struct Call<G: Protocol> {
    channel: Channel,
    requests: mpsc::Sender<G::Request>,
    responses: CallResponses<G>,
    /// The daemon reads requests as this client builds them; else each goes as
    /// [`Protocol::plain`] makes it.
    current: bool,
}

/// The call a lane is sending on, and the request bytes it has taken.
struct Sending<R> {
    id: u64,
    requests: mpsc::Sender<R>,
    bytes: usize,
    current: bool,
}

/// Bytes a request takes in a call's body: the message and its 5-byte gRPC frame header.
fn framed_len(request: &impl prost::Message) -> usize {
    request.encoded_len() + 5
}

/// Reports the lane failed if its task ends without saying how (a panic): the session would
/// otherwise wait for its chunks for ever.
struct Unreported<'a, G: Protocol>(Option<&'a Lane<G>>);

impl<G: Protocol> Drop for Unreported<'_, G> {
    fn drop(&mut self) {
        if let Some(lane) = self.0 {
            let _ = lane.reports.send(Report::Failed {
                lane: lane.id,
                reason: "its task in this client failed unexpectedly".into(),
                how: FailureKind::Call,
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
        // The wait before the next try. It grows across calls that open and then fail before
        // answering anything (a proxy answering 502 for its upstreams opens every call), and
        // starts again after a call that answered.
        let mut wait = RETRY_FIRST;
        loop {
            let mut guard = Unreported(Some(&self));
            let mut answered = false;
            let end = tokio::select! {
                end = self.one_call(&mut inbox, call.take(), &mut answered) => end,
                () = self.cancel.cancelled() => {
                    guard.0 = None;
                    return;
                }
            };
            guard.0 = None;
            match end {
                Ok(()) => {
                    let _ = self.reports.send(Report::Ended { lane: self.id });
                    return;
                }
                Err(verdict) => {
                    if self.stops(verdict) {
                        return;
                    }
                }
            }
            if answered {
                wait = RETRY_FIRST;
            }
            match self.come_back(&mut wait).await {
                Some((opened, next_inbox)) => {
                    call = Some(opened);
                    inbox = next_inbox;
                }
                None => return,
            }
        }
    }

    /// Tries to open a new call until one opens (then reports the lane back), the daemon refuses
    /// the run (reported), or the run is over, waiting `wait` before each try, twice as long each
    /// time. Attempts that fail are not reported: the failure was, once.
    async fn come_back(
        &self,
        wait: &mut Duration,
    ) -> Option<(Call<G>, mpsc::Receiver<LaneChunk<G::Request>>)> {
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
            *wait = (*wait * 2).min(RETRY_MAX);
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
                // Failures while coming back are not reported: the failure was, once.
                Err(Verdict::Unreached(_) | Verdict::Failed(_) | Verdict::Proxy(_)) => {}
                Err(verdict) => {
                    self.stops(verdict);
                    return None;
                }
            }
        }
    }

    /// Reports how a call ended early; whether the lane stops for good.
    fn stops(&self, verdict: Verdict) -> bool {
        let failed = |reason, how| {
            let lane = self.id;
            (Report::Failed { lane, reason, how }, false)
        };
        let (report, stops) = match verdict {
            Verdict::Unreached(reason) => failed(reason, FailureKind::Unreached),
            Verdict::Failed(reason) => failed(
                with_hint(reason, self.endpoint.uri().scheme_str()),
                FailureKind::Call,
            ),
            Verdict::Proxy(reason) => failed(reason, FailureKind::Proxy),
            Verdict::Foreign(reason) => (
                Report::Foreign {
                    lane: self.id,
                    reason,
                },
                true,
            ),
            Verdict::Rejected(reason) => (
                Report::Rejected {
                    lane: self.id,
                    reason,
                },
                true,
            ),
        };
        let _ = self.reports.send(report);
        stops
    }

    /// Connects to the daemon and opens one streaming call.
    async fn open_call(&self) -> Result<Call<G>, Verdict> {
        let channel = self
            .endpoint
            .connect()
            .await
            .map_err(|e| Verdict::Unreached(format!("cannot connect: {}", causes(&e))))?;
        self.open_on(channel, "the stream was refused").await
    }

    /// Opens one streaming call on a connection; `refused` says so if it is refused.
    async fn open_on(&self, channel: Channel, refused: &str) -> Result<Call<G>, Verdict> {
        let (requests, receiver) = mpsc::channel::<G::Request>(self.window.max(1));
        let span = self.call_span();
        let mut metadata = MetadataMap::new();
        crate::trace::inject_metadata(&span, &mut metadata);
        let Opened { responses, current } = G::open(
            channel.clone(),
            self.bearer.clone(),
            ReceiverStream::new(receiver),
            metadata,
        )
        .instrument(span.clone())
        .await
        .inspect_err(|status| ended::<G::Response>(&span, Some(&Err(status.clone()))))
        .map_err(|s| match verdict(&s) {
            Verdict::Failed(reason) => Verdict::Failed(format!("{refused}: {reason}")),
            other => other,
        })?;
        // The span takes the call's status, and ends when the call's responses are done with.
        let responses: CallResponses<G> =
            Box::pin(responses.map(Some).chain(stream::once(async { None })).map(
                move |response| {
                    ended(&span, response.as_ref());
                    response
                },
            ));
        Ok(Call {
            channel,
            requests,
            responses,
            current,
        })
    }

    /// The span of a call to the daemon: a client span, child of the run's, whose context the
    /// call carries; which daemon (its address) and which of the run's lanes.
    fn call_span(&self) -> tracing::Span {
        let span = tracing::info_span!(
            target: "patience::client",
            "call",
            otel.name = G::RPC,
            otel.kind = "client",
        );
        if span.is_disabled() {
            return span;
        }
        let (service, method) = G::RPC.split_once('/').unwrap_or((G::RPC, ""));
        span.set_attribute("rpc.system", "grpc");
        span.set_attribute("rpc.service", service);
        span.set_attribute("rpc.method", method);
        let uri = self.endpoint.uri();
        if let Some(host) = uri.host() {
            span.set_attribute("server.address", host.to_string());
        }
        if let Some(port) = uri.port_u16() {
            span.set_attribute("server.port", i64::from(port));
        }
        span.set_attribute("patience.client.lane", self.id as i64);
        span
    }

    /// One connection: opens it and a call unless one is open already, then sends the inbox's
    /// chunks and reports their answers until the inbox closes and every chunk is answered, or a
    /// call fails. A call that has taken `stream_max_bytes` is closed (it still answers what it
    /// holds) and the next chunk opens another on the same connection. `answered` tells whether
    /// any chunk was answered.
    async fn one_call(
        &self,
        inbox: &mut mpsc::Receiver<LaneChunk<G::Request>>,
        call: Option<Call<G>>,
        answered: &mut bool,
    ) -> Result<(), Verdict> {
        // A daemon is only connected to once there is work for it: an input with no valid
        // deal needs no daemon, and says nothing about one that is down.
        let mut first = None;
        if call.is_none() {
            match inbox.recv().await {
                Some(chunk) => first = Some(chunk),
                None => return Ok(()),
            }
        }
        let call = match call {
            Some(call) => call,
            None => self.open_call().await?,
        };
        let channel = call.channel;
        // Every call still answering, by number, and what each was sent and has not answered,
        // oldest first, with its number of items.
        let mut calls: StreamMap<u64, CallResponses<G>> = StreamMap::new();
        let mut pending: HashMap<u64, VecDeque<(Seq, usize)>> = HashMap::new();
        calls.insert(0, call.responses);
        pending.insert(0, VecDeque::new());
        let mut sending = Some(Sending {
            id: 0,
            requests: call.requests,
            bytes: 0,
            current: call.current,
        });
        let mut next_id = 1;
        let mut inbox_open = true;
        if let Some(chunk) = first {
            self.send(&mut sending, &mut pending, chunk)?;
        }
        loop {
            if !inbox_open
                && let Some(s) = &sending
                && pending.get(&s.id).is_none_or(VecDeque::is_empty)
            {
                // Nothing more to send: ending the request stream lets the daemon end the call.
                sending = None;
            }
            if !inbox_open && calls.is_empty() {
                return Ok(());
            }
            tokio::select! {
                chunk = inbox.recv(), if inbox_open => match chunk {
                    Some(chunk) => {
                        let full = sending.as_ref().is_none_or(|s| {
                            s.bytes > 0 && s.bytes + framed_len(&chunk.1) > self.stream_max_bytes
                        });
                        if full {
                            // Closing its requests lets the daemon end the call once it has
                            // answered them.
                            drop(sending.take());
                            let call = self
                                .open_on(channel.clone(), "it refused the next call")
                                .await?;
                            calls.insert(next_id, call.responses);
                            pending.insert(next_id, VecDeque::new());
                            sending = Some(Sending {
                                id: next_id,
                                requests: call.requests,
                                bytes: 0,
                                current: call.current,
                            });
                            next_id += 1;
                        }
                        self.send(&mut sending, &mut pending, chunk)?;
                    }
                    None => inbox_open = false,
                },
                () = self.all_given.cancelled(), if sending.is_some() => {
                    // Ending the requests lets the daemon end the call once it has answered them.
                    sending = None;
                }
                next = calls.next(), if !calls.is_empty() => {
                    // Every call's stream ends with its marker, and is removed then.
                    let Some((id, response)) = next else { continue };
                    let held = pending.entry(id).or_default();
                    match response {
                        Some(Ok(response)) => {
                            let Some((seq, sent)) = held.pop_front() else {
                                return Err(Verdict::Failed(
                                    "it answered a request that was never sent".into(),
                                ));
                            };
                            let answers = G::check(response, sent, self.asked)?;
                            *answered = true;
                            // The session may be gone (the run is over): nothing to do then.
                            let _ = self.reports.send(Report::Answered {
                                lane: self.id,
                                seq,
                                answers,
                            });
                        }
                        Some(Err(s)) => return Err(verdict(&s)),
                        None => {
                            let still_sending = sending.as_ref().is_some_and(|s| s.id == id);
                            if !held.is_empty() || still_sending {
                                return Err(Verdict::Failed(
                                    "it ended the stream before answering every request".into(),
                                ));
                            }
                            pending.remove(&id);
                            calls.remove(&id);
                        }
                    }
                }
            }
        }
    }

    /// Sends a chunk on the call being sent on.
    fn send(
        &self,
        sending: &mut Option<Sending<G::Request>>,
        pending: &mut HashMap<u64, VecDeque<(Seq, usize)>>,
        (seq, request): LaneChunk<G::Request>,
    ) -> Result<(), Verdict> {
        let Some(s) = sending else {
            return Err(Verdict::Failed(
                "no call open (a bug in this client)".into(),
            ));
        };
        pending
            .entry(s.id)
            .or_default()
            .push_back((seq, G::items(&request)));
        let request = if s.current {
            request
        } else {
            G::plain(request)
        };
        s.bytes += framed_len(&request);
        match s.requests.try_send(request) {
            // Closed: the call has ended, and the response side says why.
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            // The session gives a lane at most `window` chunks, so this cannot happen; should it,
            // the chunks go to another daemon.
            Err(mpsc::error::TrySendError::Full(_)) => Err(Verdict::Failed(
                "its request queue was full (a bug in this client)".into(),
            )),
        }
    }
}

/// Says on a call's span how the call ended, once it has: its status's code, and for an error
/// the span's error status with the message.
fn ended<R>(span: &tracing::Span, response: Option<&Result<R, Status>>) {
    match response {
        Some(Err(status)) => {
            span.set_attribute("rpc.grpc.status_code", status.code() as i64);
            span.set_status(opentelemetry::trace::Status::error(
                status.message().to_string(),
            ));
        }
        None => span.set_attribute("rpc.grpc.status_code", 0),
        Some(Ok(_)) => {}
    }
}
