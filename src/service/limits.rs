//! The limits that keep one client from taking more than its share, and the statuses that tell a
//! client which limit it hit and which flag raises it.

use std::time::Duration;

use tonic::Status;

use crate::proto::reason::Reason;

/// Limits that keep one client from taking more than its share.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request message, in bytes; more is `RESOURCE_EXHAUSTED` (a deal is under 200).
    pub max_message_bytes: usize,
    /// Deals one request may carry; more is `INVALID_ARGUMENT`.
    pub max_deals_per_request: usize,
    /// Deals one `SolveStream` call may have read but not yet handed back to the transport; at the
    /// limit the server stops reading that call.
    pub max_in_flight: usize,
    /// `SolveStream` calls open at once across all connections; beyond, `RESOURCE_EXHAUSTED`
    /// (enforced by the server, which sees a call before it is read).
    pub max_open_streams: usize,
    /// `Solve` calls open at once across all connections (each may be reading a message of up to
    /// `max_message_bytes`); beyond, `RESOURCE_EXHAUSTED`.
    pub max_open_unary: usize,
    /// Deals read but not yet handed back across all calls; at the limit calls stop being read,
    /// and new calls get `RESOURCE_EXHAUSTED`.
    pub max_deals_in_flight: usize,
    /// Once shutdown begins, stop reading a stream whose client is still sending after this long
    /// (answering what was read and naming the resume index), instead of serving it until the
    /// drain timeout. Off by default.
    pub drain_cut_after: Option<Duration>,
    /// A streaming call whose client takes none of its finished responses for this long (it does
    /// not read, so HTTP/2 flow control holds them) has the ones still waiting dropped, with a
    /// status in their place: they hold their share of `max_deals_in_flight`, and a few such
    /// clients would otherwise stall every other call for good. `None` is off.
    pub stall_timeout: Option<Duration>,
    /// Deals per pool job: large enough to amortise the hop to a worker, small enough to spread
    /// one request over every worker.
    pub batch: usize,
    /// Test hook: a deal with this id makes its worker panic while solving it, to prove that a
    /// panic costs one `ERROR_CODE_INTERNAL` result and nothing else. `None` (off) by default;
    /// the command line never sets it.
    #[doc(hidden)]
    pub panic_on_id: Option<String>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 << 20,
            max_deals_per_request: 10_000,
            max_in_flight: 4_096,
            max_open_streams: 1_024,
            max_open_unary: 64,
            max_deals_in_flight: 65_536,
            drain_cut_after: None,
            stall_timeout: Some(Duration::from_secs(60)),
            batch: 32,
            panic_on_id: None,
        }
    }
}

impl Limits {
    /// Refuses a request with more items (deals, or rps cases: the limit counts both) than one
    /// may carry, naming the flag, so the client knows to split it rather than retry it.
    pub(super) fn check_size(&self, items: usize, what: &'static str) -> Result<(), Status> {
        let limit = self.max_deals_per_request;
        if items > limit {
            return Err(Reason::MaxDealsPerRequest { items, limit, what }.status());
        }
        Ok(())
    }
}
