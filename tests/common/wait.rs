//! Waiting for an event: a condition looked at again and again until it holds, with a deadline
//! that only catches a hang. The one polling loop of the tests, so that a test says what it waits
//! for and never sleeps to prove that something did not happen.

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
    mut look: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = look().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until `holds` is true, as [`wait_for`] does.
pub async fn wait_until(limit: Duration, what: &str, mut holds: impl FnMut() -> bool) {
    wait_for(limit, what, || holds().then_some(())).await;
}

/// [`wait_for`] for plain threads: sleeps the thread between looks.
pub fn wait_for_blocking<T>(limit: Duration, what: &str, mut look: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = look() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(POLL);
    }
}

/// [`wait_until`] for plain threads.
pub fn wait_until_blocking(limit: Duration, what: &str, mut holds: impl FnMut() -> bool) {
    wait_for_blocking(limit, what, || holds().then_some(()));
}
