//! Admission, in one place: whether a call may open, and how much of the server its requests may
//! hold while they are answered.
//!
//! A call is admitted by [`Admission::admit`], which the server's call layer (`server/call.rs`)
//! asks for every call before any of its messages is read (so a call that never sends one counts
//! too), after the token check, and whose place it holds until the call's response is done:
//! - solving calls (`SolveStream`, `Solve`, and the rps pair) are refused with `UNAVAILABLE` once
//!   shutdown has begun, with `RESOURCE_EXHAUSTED` naming the flag beyond `--max-open-streams` or
//!   `--max-open-unary` open at once, or when the server's deal budget (`--max-deals-in-flight`)
//!   is spent;
//! - health `Watch` and reflection streams never end by themselves and need no token, so they are
//!   capped too (`--max-open-watches`) and cannot take the solving calls' places; health `Check`,
//!   which ends at once, is free.
//!
//! Which methods stream is read from each service's own descriptor set, so an rpc added to the
//! proto is capped as its kind without anyone remembering to list it.
//!
//! Once admitted, each request of a call holds its items (deals or cases) in the server's budget
//! and, for a stream, in the call's own (`--max-in-flight`) until its response has been handed to
//! the transport: [`Admission::hold`], [`Admission::hold_with`]. A call in progress that finds the
//! budget spent waits for it, which the workers give back as they answer.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tonic::Status;

use super::lifecycle::{Lifecycle, Phase};
use crate::metrics::Metrics;
use crate::proto::reason::Reason;
use crate::proto::{DescriptorError, service_methods};

/// How many calls of each kind may be open at once across all connections.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// `--max-open-streams`: streaming solving calls.
    pub streams: usize,
    /// `--max-open-unary`: unary solving calls (each may be reading a message of up to
    /// `--max-message-bytes`).
    pub unary: usize,
    /// `--max-open-watches`: health watches and reflection streams.
    pub watches: usize,
}

/// The server's admission state, shared by every call. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Admission(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    streams: Cap,
    unary: Cap,
    watches: Cap,
    deals: Arc<Semaphore>,
    max_deals: usize,
    lifecycle: Lifecycle,
    /// Counts the solving calls open, so that a drain knows when the last one has ended.
    solving: TaskTracker,
    metrics: Metrics,
}

/// One cap: its places, its size, and the flag and metric label that name it.
#[derive(Debug)]
struct Cap {
    places: Arc<Semaphore>,
    max: usize,
    flag: &'static str,
    reason: &'static str,
}

impl Cap {
    fn new(max: usize, flag: &'static str, reason: &'static str) -> Cap {
        let max = max.max(1);
        Cap {
            places: Arc::new(Semaphore::new(max)),
            max,
            flag,
            reason,
        }
    }
}

/// What a method is, for admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Stream,
    Unary,
    Watch,
    Free,
}

impl Admission {
    pub fn new(
        caps: Caps,
        max_deals_in_flight: usize,
        lifecycle: Lifecycle,
        metrics: Metrics,
    ) -> Admission {
        let max_deals = max_deals_in_flight.max(1);
        Admission(Arc::new(Shared {
            streams: Cap::new(caps.streams, "--max-open-streams", "max_open_streams"),
            unary: Cap::new(caps.unary, "--max-open-unary", "max_open_unary"),
            watches: Cap::new(caps.watches, "--max-open-watches", "max_open_watches"),
            deals: Arc::new(Semaphore::new(max_deals)),
            max_deals,
            lifecycle,
            solving: TaskTracker::new(),
            metrics,
        }))
    }

    /// A place for a call of `kind`, or the status it is refused with.
    pub fn admit(&self, kind: CallKind, peer: Option<SocketAddr>) -> Result<Admitted, Status> {
        let s = &self.0;
        let cap = match kind {
            CallKind::Free => return Ok(Admitted::free()),
            CallKind::Watch => &s.watches,
            CallKind::Stream => &s.streams,
            CallKind::Unary => &s.unary,
        };
        let solving = kind != CallKind::Watch;
        if solving && s.lifecycle.phase() >= Phase::Draining {
            s.metrics
                .call_refused("shutting_down", peer, "shutting down");
            return Err(Reason::Draining.status());
        }
        let Ok(permit) = cap.places.clone().try_acquire_owned() else {
            let reason = Reason::MaxOpenCalls {
                flag: cap.flag,
                limit: cap.max,
            };
            s.metrics.call_refused(cap.reason, peer, &reason.message());
            return Err(reason.status());
        };
        if solving && s.deals.available_permits() == 0 {
            let reason = Reason::MaxDealsInFlight { limit: s.max_deals };
            s.metrics
                .call_refused("max_deals_in_flight", peer, &reason.message());
            return Err(reason.status());
        }
        if solving {
            s.metrics.calls(1);
        } else {
            s.metrics.watches(1);
        }
        Ok(Admitted {
            _permit: Some(permit),
            solving: solving.then(|| s.solving.token()),
            metrics: Some(s.metrics.clone()),
        })
    }

    /// Completes once no solving call is open (at once if none is). During a drain no new one is
    /// admitted, so after this only watches and the responses' last bytes keep connections open.
    pub async fn solving_done(&self) {
        self.0.solving.close();
        self.0.solving.wait().await;
    }

    /// Waits for `items` (at least one, at most the whole budget) of the server's deal budget.
    pub(super) async fn hold(&self, items: usize) -> Result<Held, AcquireError> {
        let server = self
            .0
            .deals
            .clone()
            .acquire_many_owned(self.cost(items))
            .await?;
        Ok(Held {
            _call: None,
            _server: server,
            _in_flight: None,
        })
    }

    /// Waits for a request's `items` in its call's own budget `call` (of `call_max`), then in
    /// the server's, in that order (a call never holds server budget while it waits for its
    /// own; a request larger than either budget takes all of it). Once held they count in
    /// `patience_deals_in_flight`, in the same step, so the gauge moves with the budget.
    pub(super) fn hold_with(
        &self,
        call: Arc<Semaphore>,
        call_max: usize,
        items: usize,
    ) -> impl Future<Output = Result<Held, AcquireError>> + Send + 'static {
        let server = self.0.deals.clone();
        let cost = self.cost(items.clamp(1, call_max.max(1)));
        let metrics = self.0.metrics.clone();
        async move {
            let own = call.acquire_many_owned(cost).await?;
            let server = server.acquire_many_owned(cost).await?;
            Ok(Held {
                _call: Some(own),
                _server: server,
                _in_flight: Some(InFlight::new(&metrics, items)),
            })
        }
    }

    fn cost(&self, items: usize) -> u32 {
        u32::try_from(items.clamp(1, self.0.max_deals)).unwrap_or(u32::MAX)
    }
}

/// A service's methods as admission sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceKinds {
    /// Each method's kind, by path (`/name/Method`).
    pub methods: HashMap<String, CallKind>,
    /// The kind of a path under the service that its descriptors do not know: answered
    /// UNIMPLEMENTED, and counting it as the service's unary kind costs nothing and leaves nothing
    /// uncapped.
    pub unknown: CallKind,
}

/// The methods of the service `name` as admission sees them, from the encoded descriptor set
/// that describes it. A solving service's streaming methods count under `--max-open-streams`, its
/// unary ones under `--max-open-unary`, and none is admitted during shutdown or with the deal
/// budget spent; any other service's (health, reflection) streaming methods count under
/// `--max-open-watches`, and its unary ones are free.
pub fn service_kinds(
    name: &'static str,
    descriptors: &[u8],
    solving: bool,
) -> Result<ServiceKinds, DescriptorError> {
    let kind = |streaming| match (solving, streaming) {
        (true, true) => CallKind::Stream,
        (true, false) => CallKind::Unary,
        (false, true) => CallKind::Watch,
        (false, false) => CallKind::Free,
    };
    Ok(ServiceKinds {
        methods: method_kinds(name, descriptors, kind)?,
        unknown: kind(false),
    })
}

/// The kind of each method of the service `name` (its path, `/name/Method`), from the encoded
/// descriptor set that describes it: `kind(streaming)`, where streaming in either direction counts.
fn method_kinds(
    name: &'static str,
    descriptors: &[u8],
    kind: impl Fn(bool) -> CallKind,
) -> Result<HashMap<String, CallKind>, DescriptorError> {
    Ok(service_methods(name, descriptors)?
        .iter()
        .map(|m| {
            let streaming = m.client_streaming() || m.server_streaming();
            (format!("/{name}/{}", m.name()), kind(streaming))
        })
        .collect())
}

/// A call's place under its cap, given back when dropped: the call layer holds it until the
/// call's response is done, however the call ends.
#[derive(Debug)]
pub struct Admitted {
    _permit: Option<OwnedSemaphorePermit>,
    /// Set for a solving call: what a drain waits for.
    solving: Option<TaskTrackerToken>,
    metrics: Option<Metrics>,
}

impl Admitted {
    fn free() -> Admitted {
        Admitted {
            _permit: None,
            solving: None,
            metrics: None,
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        match (&self.metrics, &self.solving) {
            (Some(metrics), Some(_)) => metrics.calls(-1),
            (Some(metrics), None) => metrics.watches(-1),
            (None, _) => {}
        }
    }
}

/// A request's items, counted against its call's budget and the server's until its response has
/// been handed to the transport (or dropped), and in `patience_deals_in_flight` as long: so the
/// gauge shows what the budget holds, a client that does not read included.
pub(super) struct Held {
    _call: Option<OwnedSemaphorePermit>,
    _server: OwnedSemaphorePermit,
    /// A stream request's count; a unary call counts its own, from before it waits.
    _in_flight: Option<InFlight>,
}

/// Counts items (a unary call's, or a stream request's) in `patience_deals_in_flight` until
/// dropped, however the call ends. Only the gauge is kept, not all the metrics: a stream's
/// travels with every response.
pub(super) struct InFlight {
    gauge: Gauge,
    items: i64,
}

impl InFlight {
    pub fn new(metrics: &Metrics, items: usize) -> InFlight {
        let gauge = metrics.in_flight_gauge();
        let items = i64::try_from(items).unwrap_or(i64::MAX);
        gauge.inc_by(items);
        InFlight { gauge, items }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.dec_by(self.items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::lifecycle::LifecycleControl;
    use prost::Message as _;
    use prost_types::{
        FileDescriptorProto, FileDescriptorSet, MethodDescriptorProto, ServiceDescriptorProto,
    };

    fn method(name: &str, client_streaming: bool, server_streaming: bool) -> MethodDescriptorProto {
        MethodDescriptorProto {
            name: Some(name.into()),
            client_streaming: Some(client_streaming),
            server_streaming: Some(server_streaming),
            ..Default::default()
        }
    }

    /// The descriptors of `test.v1.Game` with these methods.
    fn descriptors(methods: Vec<MethodDescriptorProto>) -> Vec<u8> {
        FileDescriptorSet {
            file: vec![FileDescriptorProto {
                package: Some("test.v1".into()),
                service: vec![ServiceDescriptorProto {
                    name: Some("Game".into()),
                    method: methods,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    }

    fn admission(caps: usize) -> (Admission, LifecycleControl) {
        let (lifecycle, control) = Lifecycle::new();
        let caps = Caps {
            streams: caps,
            unary: caps,
            watches: caps,
        };
        (
            Admission::new(caps, 100, lifecycle, Metrics::new()),
            control,
        )
    }

    fn kinds(service: &ServiceKinds) -> Vec<(String, CallKind)> {
        let mut kinds: Vec<_> = service
            .methods
            .iter()
            .map(|(p, k)| (p.clone(), *k))
            .collect();
        kinds.sort_by(|a, b| a.0.cmp(&b.0));
        kinds
    }

    /// An rpc added to a service's proto is capped as its kind with nothing else to change:
    /// streaming in any direction counts as a stream, the rest as unary.
    #[test]
    fn every_method_is_capped_by_the_kind_its_descriptor_gives() {
        let set = descriptors(vec![
            method("Solve", false, false),
            method("SolveStream", true, true),
            method("Upload", true, false),
            method("Watch", false, true),
        ]);
        let solving = service_kinds("test.v1.Game", &set, true).unwrap();
        assert_eq!(
            kinds(&solving),
            [
                ("/test.v1.Game/Solve".to_string(), CallKind::Unary),
                ("/test.v1.Game/SolveStream".to_string(), CallKind::Stream),
                ("/test.v1.Game/Upload".to_string(), CallKind::Stream),
                ("/test.v1.Game/Watch".to_string(), CallKind::Stream),
            ]
        );
        // A path the descriptors do not know is still capped.
        assert_eq!(solving.unknown, CallKind::Unary);
        let auxiliary = service_kinds("test.v1.Game", &set, false).unwrap();
        assert_eq!(auxiliary.methods["/test.v1.Game/Solve"], CallKind::Free);
        assert_eq!(auxiliary.methods["/test.v1.Game/Watch"], CallKind::Watch);
        assert_eq!(auxiliary.unknown, CallKind::Free);
    }

    /// The services the daemon serves, from the descriptor sets it is built with: the solving
    /// calls by their kind, health `Watch` and reflection under the watches' cap, health `Check`
    /// free.
    #[test]
    fn the_daemons_services_are_capped_as_their_protos_say() {
        let solving = |streaming| {
            if streaming {
                CallKind::Stream
            } else {
                CallKind::Unary
            }
        };
        let auxiliary = |streaming| {
            if streaming {
                CallKind::Watch
            } else {
                CallKind::Free
            }
        };
        /// A service, its descriptors, how it is wrapped, and its methods' kinds.
        type Case<'a> = (
            &'static str,
            &'a [u8],
            &'a dyn Fn(bool) -> CallKind,
            &'a [(&'a str, CallKind)],
        );
        let cases: [Case; 4] = [
            (
                "patience.v1.Solver",
                crate::proto::FILE_DESCRIPTOR_SET,
                &solving,
                &[
                    ("SolveStream", CallKind::Stream),
                    ("Solve", CallKind::Unary),
                ],
            ),
            (
                "patience.v1.RpsService",
                crate::proto::FILE_DESCRIPTOR_SET,
                &solving,
                &[
                    ("SolveRpsStream", CallKind::Stream),
                    ("SolveRps", CallKind::Unary),
                ],
            ),
            (
                "grpc.health.v1.Health",
                tonic_health::pb::FILE_DESCRIPTOR_SET,
                &auxiliary,
                &[("Watch", CallKind::Watch), ("Check", CallKind::Free)],
            ),
            (
                "grpc.reflection.v1.ServerReflection",
                tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
                &auxiliary,
                &[("ServerReflectionInfo", CallKind::Watch)],
            ),
        ];
        for (name, set, kind, expected) in cases {
            let kinds = method_kinds(name, set, kind).unwrap();
            assert_eq!(kinds.len(), expected.len(), "{name}: {kinds:?}");
            for (method, want) in expected {
                assert_eq!(
                    kinds.get(&format!("/{name}/{method}")),
                    Some(want),
                    "{name}"
                );
            }
        }
        let missing = method_kinds(
            "patience.v1.Nothing",
            crate::proto::FILE_DESCRIPTOR_SET,
            solving,
        );
        assert!(matches!(
            missing,
            Err(DescriptorError::Missing("patience.v1.Nothing"))
        ));
    }

    #[tokio::test]
    async fn solving_calls_are_refused_once_the_drain_begins_and_watches_are_not() {
        let (admission, control) = admission(2);
        let open = admission.admit(CallKind::Stream, None);
        assert!(open.is_ok());
        control.advance(Phase::Draining);
        for kind in [CallKind::Stream, CallKind::Unary] {
            let refused = admission.admit(kind, None).err().map(|s| s.code());
            assert_eq!(refused, Some(tonic::Code::Unavailable), "{kind:?}");
        }
        assert!(admission.admit(CallKind::Watch, None).is_ok());
        assert!(admission.admit(CallKind::Free, None).is_ok());
        // The drain waits for the call admitted before it, and only for that one.
        let done = tokio::spawn({
            let admission = admission.clone();
            async move { admission.solving_done().await }
        });
        tokio::task::yield_now().await;
        assert!(!done.is_finished());
        drop(open);
        done.await.unwrap();
    }

    #[test]
    fn each_cap_refuses_past_its_size_naming_its_flag() {
        let (admission, _control) = admission(1);
        for (kind, flag) in [
            (CallKind::Stream, "--max-open-streams"),
            (CallKind::Unary, "--max-open-unary"),
            (CallKind::Watch, "--max-open-watches"),
        ] {
            let first = admission.admit(kind, None);
            assert!(first.is_ok(), "{kind:?}");
            let refused = admission.admit(kind, None).err().unwrap();
            assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
            assert!(refused.message().contains(flag), "{}", refused.message());
            drop(first);
            assert!(
                admission.admit(kind, None).is_ok(),
                "{kind:?} after one ended"
            );
        }
    }
}
