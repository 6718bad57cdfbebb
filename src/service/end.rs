//! How a call ended, where it ends ([`Ending`]), and the one log line every call past admission
//! gets at its end (a refused call gets the metrics' "refused a call" line instead; a unary call
//! its client cancels mid-way is dropped before its service can say anything, and gets none).
//!
//! A call's end is seen from two layers, in either order: the call layer's `Life` sees the status
//! sent, or the response dropped; the service knows why it ended and its items (its
//! [`Account`]). [`Ending`] is the one place both end it: the transport's end ends the call (the
//! call layer's callback: its series and its span, with the code the client got), and the
//! service's account writes the line (and says the same on the span). Each happens once, in
//! whichever order the two come: a stalled client's call, whose status waits unread, is logged
//! when the server cuts it, and one whose client left is counted as soon as the transport knows,
//! before the service's task notices.

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tonic::{Code, Status};
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

/// Where a call ends: the transport's end once, the service's account once, in either order (see
/// the module's doc). Cheap to clone: the call layer keeps one, and hands one to the service in
/// the request's extensions.
#[derive(Clone)]
pub struct Ending(Arc<Mutex<Halves>>);

/// What the call layer does when a call ends: given its status's code and message.
pub type OnEnd = Box<dyn FnOnce(Code, Option<&str>) + Send>;

struct Halves {
    /// The call's span, which the line is written under and which gets the same words.
    span: tracing::Span,
    started: Instant,
    /// Taken by the transport's end.
    on_end: Option<OnEnd>,
    /// Whether the service has given its account (and the line is written).
    accounted: bool,
}

impl fmt::Debug for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("Ending")
            .field("ended", &state.on_end.is_none())
            .field("accounted", &state.accounted)
            .finish_non_exhaustive()
    }
}

impl Ending {
    /// The end of a call the call layer has just opened under `span`: `on_end` runs once, at the
    /// transport's end.
    pub fn open(span: tracing::Span, on_end: OnEnd) -> Ending {
        Ending(Arc::new(Mutex::new(Halves {
            span,
            started: Instant::now(),
            on_end: Some(on_end),
            accounted: false,
        })))
    }

    /// The end of a call made around the call layer (a test's, on the service itself): only its
    /// account, and its log line.
    pub(super) fn detached() -> Ending {
        Ending::open(tracing::Span::current(), Box::new(|_, _| ()))
    }

    /// The call's span, for the work done for it.
    pub fn span(&self) -> tracing::Span {
        self.state().span.clone()
    }

    /// The call layer's end: the status's code and message as sent, or `Cancelled` for a
    /// response dropped before its status. Nothing, if the call has ended already.
    pub fn end(&self, code: Code, message: Option<&str>) {
        let on_end = self.state().on_end.take();
        if let Some(on_end) = on_end {
            on_end(code, message);
        }
    }

    /// The service's end: its account writes the call's line. Once; a second account is
    /// ignored.
    pub(super) fn account(&self, account: Account) {
        let mut state = self.state();
        if !std::mem::replace(&mut state.accounted, true) {
            account.write(&state.span, state.started.elapsed());
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Halves> {
        // Every state the lock guards is valid at every step, whoever panicked holding it.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the service says of a call at its end.
#[derive(Debug)]
pub(super) struct Account {
    pub rpc: &'static str,
    pub game: &'static str,
    pub peer: Option<SocketAddr>,
    /// Items read (for a unary call, those of its request).
    pub received: u64,
    /// Items whose results were handed to the transport, and how many of them were errors.
    pub answered: u64,
    pub errors: u64,
    pub end: CallEnd,
    /// The status the call ended with, when it did not end well.
    pub status: Option<Status>,
}

impl Account {
    /// Writes the call's one line (target `patience::service`, which log filters for it name),
    /// under its span, and says the same on the span.
    fn write(&self, span: &tracing::Span, duration: Duration) {
        span.set_attribute("patience.game", self.game);
        span.set_attribute("patience.items.received", to_i64(self.received));
        span.set_attribute("patience.items.answered", to_i64(self.answered));
        span.set_attribute("patience.items.errors", to_i64(self.errors));
        span.set_attribute("patience.call.end", self.end.as_str());
        let peer = self
            .peer
            .map_or_else(|| "unknown".to_string(), |p| p.to_string());
        let status = self.status.as_ref();
        span.in_scope(|| {
            tracing::info!(
                target: "patience::service",
                rpc = self.rpc,
                game = self.game,
                peer,
                items = self.answered,
                errors = self.errors,
                received = self.received,
                duration_ms = milliseconds(duration),
                end = self.end.as_str(),
                code = status.map(|s| format!("{:?}", s.code())),
                message = status.map(Status::message),
                "call finished"
            );
        });
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

    /// What a test subscriber has written.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Written {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Written {
        fn lines(&self) -> Vec<String> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        }
    }

    /// Runs `steps` under a subscriber of its own, and returns the lines written after each.
    fn logged(steps: &[&dyn Fn()]) -> Vec<Vec<String>> {
        let written = Written::default();
        let writer = written.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            steps
                .iter()
                .map(|step| {
                    step();
                    written.lines()
                })
                .collect()
        })
    }

    fn account(end: CallEnd, answered: u64) -> Account {
        Account {
            rpc: "SolveStream",
            game: "deals",
            peer: None,
            received: 3,
            answered,
            errors: 1,
            end,
            status: None,
        }
    }

    /// An ending that records the codes it was ended with, as the call layer's series would.
    fn ending(ended: &Arc<Mutex<Vec<Code>>>) -> Ending {
        let ended = ended.clone();
        let on_end = move |code, _: Option<&str>| ended.lock().unwrap().push(code);
        Ending::open(tracing::info_span!("call"), Box::new(on_end))
    }

    /// The transport first (a client that cancels before the service's task notices): the call
    /// ends then, with the transport's code, and the account that comes later writes the line,
    /// with the service's words, once.
    #[test]
    fn the_transport_ends_a_call_first_and_the_account_writes_its_line() {
        let codes = Arc::new(Mutex::new(Vec::new()));
        let made = std::cell::OnceCell::new();
        let open = || drop(made.set(ending(&codes)));
        let made = &made;
        let end = || made.get().unwrap().end(Code::Cancelled, None);
        let give = || {
            let end = CallEnd::CancelledByClient;
            made.get().unwrap().account(account(end, 2));
        };
        let after = logged(&[&open, &end, &give, &end, &give]);
        let counts: Vec<usize> = after.iter().map(Vec::len).collect();
        assert_eq!(counts, [0, 0, 1, 1, 1], "{after:?}");
        let line = &after[2][0];
        assert!(line.contains("call finished"), "{line}");
        assert!(line.contains("end=\"cancelled by the client\""), "{line}");
        assert!(line.contains("items=2 errors=1 received=3"), "{line}");
        assert_eq!(*codes.lock().unwrap(), [Code::Cancelled]);
    }

    /// The service first (a stalled client's call, whose status waits unread; a stream that
    /// completed, before its trailers are sent): its account writes the line at once, and the
    /// transport's end, later, ends the call with the code the client got.
    #[test]
    fn the_services_account_writes_its_line_before_the_transport_ends_the_call() {
        let codes = Arc::new(Mutex::new(Vec::new()));
        let made = std::cell::OnceCell::new();
        let open = || drop(made.set(ending(&codes)));
        let made = &made;
        let give = || {
            let mut account = account(CallEnd::Stalled, 3);
            account.status = Some(Status::unavailable("cut"));
            made.get().unwrap().account(account);
        };
        let ended = Arc::new(Mutex::new(Vec::new()));
        let end = || {
            made.get().unwrap().end(Code::Unavailable, Some("cut"));
            ended.lock().unwrap().push(codes.lock().unwrap().len());
        };
        let after = logged(&[&open, &give, &end, &end]);
        let counts: Vec<usize> = after.iter().map(Vec::len).collect();
        assert_eq!(counts, [0, 1, 1, 1], "{after:?}");
        assert!(after[1][0].contains(CallEnd::Stalled.as_str()), "{after:?}");
        assert!(after[1][0].contains("code=\"Unavailable\""), "{after:?}");
        assert_eq!(*codes.lock().unwrap(), [Code::Unavailable]);
        assert_eq!(
            *ended.lock().unwrap(),
            [1, 1],
            "ended once, at the first end"
        );
    }

    /// A call that the call layer never saw is written at its account; one whose service gives
    /// no account (refused, or a unary call dropped) is ended, and gets no line.
    #[test]
    fn a_detached_ending_writes_at_its_account_and_one_without_account_never() {
        let give = || Ending::detached().account(account(CallEnd::Failed, 0));
        let after = logged(&[&give]);
        assert_eq!(after[0].len(), 1, "{after:?}");
        assert!(
            after[0][0].contains("end=\"ended with an error\""),
            "{after:?}"
        );

        let codes = Arc::new(Mutex::new(Vec::new()));
        let refused = || ending(&codes).end(Code::Unauthenticated, Some("no token"));
        let after = logged(&[&refused]);
        assert!(after[0].is_empty(), "{after:?}");
        assert_eq!(*codes.lock().unwrap(), [Code::Unauthenticated]);
    }

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
