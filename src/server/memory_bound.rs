//! The memory bound of `docs/operations.md` ("Memory"), computed from the limits a daemon runs
//! with and published as `patience_memory_bound_bytes`, so that an alert can compare what the
//! process holds with what its limits allow. Each term's figure was measured as the page says.

use super::{STREAM_WINDOW, ServerConfig};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// Code, runtime and buffers.
const BASE: u64 = 7 * MIB;
/// A worker's Double Patience tables (4 MiB) and rps tables (6.1 MiB resident once used).
const PER_WORKER: u64 = 4 * MIB + 61 * MIB / 10;
/// An open connection's h2 state and buffers.
const PER_CONNECTION: u64 = 18 * KIB;
/// An open call's own state, streaming or unary (beside what it may buffer).
const PER_CALL: u64 = 21 * KIB;
/// A plain HTTP API call's own buffers (body reader, queue), beyond the stream it becomes.
const PER_HTTP_CALL: u64 = 200 * KIB;
/// An open health watch or reflection stream.
const PER_WATCH: u64 = 9 * KIB;
/// A deal or rps case read and not yet answered.
const PER_ITEM: u64 = 250;

/// `7 MiB + W × (4 MiB + 6.1 MiB) + C × 18 KiB + S × (21 KiB + 64 KiB + 200 KiB) + U × (21 KiB +
/// M) + H × 9 KiB + D × 250 B`, in bytes: the worst case, where every open stream is a plain
/// HTTP upload (whose buffers are the 200 KiB), since clients choose. A stream may also have its
/// HTTP/2 window's worth of request data buffered, a unary call a whole message.
pub fn bytes(config: &ServerConfig) -> u64 {
    let l = &config.limits;
    let n = |x: usize| x as u64;
    BASE.saturating_add(n(config.workers).saturating_mul(PER_WORKER))
        .saturating_add(n(config.max_connections).saturating_mul(PER_CONNECTION))
        .saturating_add(
            n(l.max_open_streams)
                .saturating_mul(PER_CALL + u64::from(STREAM_WINDOW) + PER_HTTP_CALL),
        )
        .saturating_add(
            n(l.max_open_unary).saturating_mul(PER_CALL.saturating_add(n(l.max_message_bytes))),
        )
        .saturating_add(n(config.max_open_watches).saturating_mul(PER_WATCH))
        .saturating_add(n(l.max_deals_in_flight).saturating_mul(PER_ITEM))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's figure: "659 MiB if every open stream is a plain HTTP upload" with the
    /// defaults, on 2 cores with 4,096 connections. By hand: 7 + 2 × 10.1 + 72 + 85 + 200 +
    /// 64 × (4 MiB + 21 KiB) + 2.25 + 15.6 MiB.
    #[test]
    fn the_defaults_give_the_documented_bound() {
        let config = ServerConfig {
            workers: 2,
            max_connections: 4_096,
            ..ServerConfig::default()
        };
        assert_eq!(bytes(&config), 481_702_706 + 1_024 * 200 * 1_024);
        let mib = bytes(&config) as f64 / MIB as f64;
        assert!((659.0..660.0).contains(&mib), "{mib}");
    }
}
