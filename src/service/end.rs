//! How a streaming call ended: the words of its log line's `end` field.

use std::fmt;

/// How a streaming call ended, as its log line says. Operators and tests look for these words
/// in the logs, so [`StreamEnd::as_str`] keeps them exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamEnd {
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
    /// The call's own machinery broke, which it should never do.
    Internal(Internal),
}

/// Ways the call's own machinery can break: each names the part, so a log line that shows one
/// says where to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Internal {
    /// The call's in-flight semaphore, or the server's, was closed under a waiting request.
    BudgetClosed,
    /// The task that queues requests on the pool ended while the call still needed it.
    SubmitterStopped,
}

impl StreamEnd {
    /// The log line's `end` field: a string, as it has always been, so text logs keep quoting it.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamEnd::Completed => "completed",
            StreamEnd::CancelledByClient => "cancelled by the client",
            StreamEnd::DeadlineExceeded => "deadline exceeded",
            StreamEnd::AbortedByShutdown => "aborted by shutdown",
            StreamEnd::CutShortByShutdown => "cut short by shutdown",
            StreamEnd::Stalled => "cut: the client took no results for --stall-timeout",
            StreamEnd::Failed => "ended with an error",
            StreamEnd::Internal(Internal::BudgetClosed) => {
                "internal error: the in-flight budget closed"
            }
            StreamEnd::Internal(Internal::SubmitterStopped) => {
                "internal error: the submitter stopped"
            }
        }
    }
}

impl fmt::Display for StreamEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operators and tests grep the logs for these words.
    #[test]
    fn each_end_reads_as_it_always_has() {
        let ends = [
            (StreamEnd::Completed, "completed"),
            (StreamEnd::CancelledByClient, "cancelled by the client"),
            (StreamEnd::DeadlineExceeded, "deadline exceeded"),
            (StreamEnd::AbortedByShutdown, "aborted by shutdown"),
            (StreamEnd::CutShortByShutdown, "cut short by shutdown"),
            (StreamEnd::Failed, "ended with an error"),
            (
                StreamEnd::Stalled,
                "cut: the client took no results for --stall-timeout",
            ),
            (
                StreamEnd::Internal(Internal::BudgetClosed),
                "internal error: the in-flight budget closed",
            ),
            (
                StreamEnd::Internal(Internal::SubmitterStopped),
                "internal error: the submitter stopped",
            ),
        ];
        for (end, text) in ends {
            assert_eq!(end.to_string(), text);
            assert_eq!(end.as_str(), text);
        }
    }
}
