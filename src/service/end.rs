//! How a call ended, and the one log line every call past admission gets at its end (a refused
//! call gets the metrics' "refused a call" line instead; one its client cancels mid-way is
//! logged as cancelled, for a stream, or not at all, for a unary call, which is dropped).

use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tonic::Status;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// How a call ended, as its log line says. Operators and tests look for these words in the
/// logs, so [`CallEnd::as_str`] keeps them exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallEnd {
    /// The client finished sending and every response was handed to the transport.
    Completed,
    /// The client cancelled or dropped the call (or its deadline reset the stream).
    CancelledByClient,
    /// The call's own deadline passed first.
    DeadlineExceeded,
    /// The drain timeout passed during shutdown.
    AbortedByShutdown,
    /// Shutdown stopped reading a client that was still sending (`--drain-cut-after`).
    CutShortByShutdown,
    /// The client took none of its results for `--stall-timeout`: those waiting were dropped.
    Stalled,
    /// A request could not be read or queued; the client was told why.
    Failed,
    /// The call's own machinery broke, which it should never do: the in-flight budget closed
    /// under a waiting request.
    BudgetClosed,
}

impl CallEnd {
    /// The log line's `end` field: a string, as it has always been, so text logs keep quoting it.
    pub fn as_str(self) -> &'static str {
        match self {
            CallEnd::Completed => "completed",
            CallEnd::CancelledByClient => "cancelled by the client",
            CallEnd::DeadlineExceeded => "deadline exceeded",
            CallEnd::AbortedByShutdown => "aborted by shutdown",
            CallEnd::CutShortByShutdown => "cut short by shutdown",
            CallEnd::Stalled => "cut: the client took no results for --stall-timeout",
            CallEnd::Failed => "ended with an error",
            CallEnd::BudgetClosed => "internal error: the in-flight budget closed",
        }
    }
}

impl fmt::Display for CallEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a call's log line says about it.
pub(super) struct Finished<'a> {
    pub rpc: &'static str,
    pub game: &'static str,
    pub peer: Option<SocketAddr>,
    /// Items read (for a unary call, those of its request).
    pub received: u64,
    /// Items whose results were handed to the transport, and how many of them were errors.
    pub answered: u64,
    pub errors: u64,
    pub started: Instant,
    pub end: CallEnd,
    /// The status the call ended with, when it did not end well.
    pub status: Option<&'a Status>,
}

impl Finished<'_> {
    /// Logs the call's one line (target `patience::service`, whichever module ends the call, so
    /// log filters for it keep working), and says the same on the call's span, which is current.
    pub fn log(self) {
        let span = tracing::Span::current();
        span.set_attribute("patience.game", self.game);
        span.set_attribute("patience.items.received", to_i64(self.received));
        span.set_attribute("patience.items.answered", to_i64(self.answered));
        span.set_attribute("patience.items.errors", to_i64(self.errors));
        span.set_attribute("patience.call.end", self.end.as_str());
        let peer = self
            .peer
            .map_or_else(|| "unknown".to_string(), |p| p.to_string());
        tracing::info!(
            target: "patience::service",
            rpc = self.rpc,
            game = self.game,
            peer,
            items = self.answered,
            errors = self.errors,
            received = self.received,
            duration_ms = milliseconds(self.started.elapsed()),
            end = self.end.as_str(),
            code = self.status.map(|s| format!("{:?}", s.code())),
            message = self.status.map(Status::message),
            "call finished"
        );
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `elapsed` in milliseconds, to the microsecond: a whole number of microseconds divided by a
/// thousand prints as at most three decimals, where seconds times a thousand printed float noise
/// (`2.7463420000000003`).
fn milliseconds(elapsed: Duration) -> f64 {
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    micros as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operators and tests grep the logs for these words.
    #[test]
    fn each_end_reads_as_it_always_has() {
        let ends = [
            (CallEnd::Completed, "completed"),
            (CallEnd::CancelledByClient, "cancelled by the client"),
            (CallEnd::DeadlineExceeded, "deadline exceeded"),
            (CallEnd::AbortedByShutdown, "aborted by shutdown"),
            (CallEnd::CutShortByShutdown, "cut short by shutdown"),
            (CallEnd::Failed, "ended with an error"),
            (
                CallEnd::Stalled,
                "cut: the client took no results for --stall-timeout",
            ),
            (
                CallEnd::BudgetClosed,
                "internal error: the in-flight budget closed",
            ),
        ];
        for (end, text) in ends {
            assert_eq!(end.to_string(), text);
            assert_eq!(end.as_str(), text);
        }
    }

    /// Durations print with at most three decimals, however long (2,746,342 ns once printed as
    /// 2.7463420000000003 ms).
    #[test]
    fn durations_print_without_float_noise() {
        for micros in [
            0u64,
            1,
            999,
            2_746,
            2_746_342,
            123_456_789,
            9_007_199_254_740_991,
        ] {
            let text = milliseconds(Duration::from_micros(micros)).to_string();
            let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
            assert!(decimals <= 3, "{micros} us printed as {text} ms");
        }
        let noisy = Duration::from_nanos(2_746_342);
        assert_eq!(milliseconds(noisy).to_string(), "2.746");
    }
}
