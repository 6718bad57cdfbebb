//! When a refusal is logged: at most once per kind in an interval, with how many went unlogged, so
//! that an attack or a misconfigured client shows in the log without flooding it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When each kind of refusal was last logged, and how many went unlogged since.
pub(super) type Refusals = Mutex<HashMap<&'static str, (Instant, u64)>>;

/// At most one log line per kind of refusal in this interval: an attack or a misconfigured client
/// shows in the log without flooding it.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Whether a refusal of kind `reason` is to be logged now, with how many went unlogged since
/// the last one; `None` within [`REFUSAL_LOG_INTERVAL`] of it.
pub(super) fn due(log: &Refusals, reason: &'static str) -> Option<u64> {
    let now = Instant::now();
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    match log.get_mut(reason) {
        Some((last, unlogged)) if now.duration_since(*last) < REFUSAL_LOG_INTERVAL => {
            *unlogged += 1;
            None
        }
        Some((last, unlogged)) => {
            *last = now;
            Some(std::mem::take(unlogged))
        }
        None => {
            log.insert(reason, (now, 0));
            Some(0)
        }
    }
}
