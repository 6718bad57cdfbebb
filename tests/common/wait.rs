//! Waiting for an event: a condition looked at again and again until it holds, with a deadline
//! that only catches a hang. The one polling loop of the tests (an async one and one for plain
//! threads), so that a test says what it waits for and never sleeps to prove that something did
//! not happen.

use std::time::{Duration, Instant};

/// How long to wait between two looks at a condition.
pub const POLL: Duration = Duration::from_millis(10);

/// Waits until `look` gives a value, looking every [`POLL`] (a tokio sleep, so paused time
/// advances meanwhile); panics naming `what` if none came within `limit`, which only catches a
/// hang and is wall time whatever the runtime's clock.
pub async fn wait_for<T>(limit: Duration, what: &str, mut look: impl FnMut() -> Option<T>) -> T {
    wait_for_async(limit, what, async || look()).await
}

/// [`wait_for`] with a look that awaits (such as asking a connection whether a GOAWAY came).
pub async fn wait_for_async<T>(
    limit: Duration,
    what: &str,
    look: impl AsyncFnMut() -> Option<T>,
) -> T {
    match poll_async(limit, POLL, look).await {
        Some(value) => value,
        None => panic!("{what}: not within {limit:?}"),
    }
}

/// Waits until `holds` is true, as [`wait_for`] does.
pub async fn wait_until(limit: Duration, what: &str, mut holds: impl FnMut() -> bool) {
    wait_for(limit, what, || holds().then_some(())).await;
}

/// The loop under [`wait_for_async`]: looks every `every` until `look` gives a value; `None`
/// once `limit` (wall time, a hang guard) has passed, for a caller with more to say than a name
/// (what it saw last), or with something to do before failing. `every` is [`POLL`] unless each
/// look costs (a round of queries to Prometheus).
pub async fn poll_async<T>(
    limit: Duration,
    every: Duration,
    mut look: impl AsyncFnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = look().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}

/// [`wait_for`] for plain threads: sleeps the thread between looks.
pub fn wait_for_blocking<T>(limit: Duration, what: &str, look: impl FnMut() -> Option<T>) -> T {
    match poll_blocking(limit, look) {
        Some(value) => value,
        None => panic!("{what}: not within {limit:?}"),
    }
}

/// [`wait_until`] for plain threads.
pub fn wait_until_blocking(limit: Duration, what: &str, mut holds: impl FnMut() -> bool) {
    wait_for_blocking(limit, what, || holds().then_some(()));
}

/// [`poll_async`] for plain threads, every [`POLL`]: the value `look` gave, or `None` once
/// `limit` has passed.
pub fn poll_blocking<T>(limit: Duration, mut look: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = look() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}
