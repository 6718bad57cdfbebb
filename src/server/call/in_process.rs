//! A call made in process (the plain HTTP API's), owned as [`super::Calls`] owns one on the wire.

use futures::StreamExt as _;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

use super::life::Life;
use crate::auth::Caller;
use crate::service::{Ending, Inbound};

/// A call made in process, owned as [`super::Calls`] owns one on the wire: counted as started when it
/// is entered, its messages counted as they pass, ended once (as `Canceled` if dropped before
/// [`InProcess::end`]), its place under its cap given back when it is dropped.
#[derive(Debug)]
pub struct InProcess {
    pub(super) life: Life,
    pub(super) caller: Caller,
}

impl InProcess {
    /// Whose the call is, by its token.
    pub fn caller(&self) -> Caller {
        self.caller.clone()
    }

    /// The call's requests as its service reads them, each counted as received when read.
    pub fn inbound<T: Send + 'static>(&self, requests: mpsc::Receiver<T>) -> Inbound<T> {
        let counters = self.life.counters.clone();
        Box::pin(ReceiverStream::new(requests).map(move |request| {
            counters.received(1);
            Ok(request)
        }))
    }

    /// A response message taken from the service.
    pub fn sent(&self) {
        self.life.counters.sent(1);
    }

    /// The call's status, once it is known.
    pub fn end(&mut self, code: Code) {
        self.life.end(code);
    }

    /// Where the call ends, which its service gives its account to, and which holds its span.
    pub fn ending(&self) -> Ending {
        self.life.ending.clone()
    }
}
