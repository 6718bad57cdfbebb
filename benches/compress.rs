//! Response compression benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench compress`
//!
//! What `--compress-min-bytes` trades: for `SolveResponse` messages of 1 to 256 results (the
//! reference's probabilities, so the bytes are a real answer's), the message's size as it is and
//! compressed with gzip and zstd at the levels the daemon uses (`flate2`'s fast, zstd 1, as
//! `src/server/frames.rs` compresses), and the CPU time of compressing one message, median of
//! 15 rounds. Below the size where compression stops saving bytes, it only costs; the default
//! minimum (512 bytes) is read off this table (docs/performance.md).

use std::io::Write as _;
use std::time::Instant;

use patience::proto::{SolveResponse, result::Outcome};
use prost::Message as _;

/// Rounds per size, of which the median is printed.
const ROUNDS: usize = 15;

fn main() {
    let text = std::fs::read_to_string("tests/data/random1000.out15")
        .expect("run from the crate's directory, as cargo bench does");
    let probabilities: Vec<f64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    println!(
        "{:>7} {:>7} {:>10} {:>10} {:>9} {:>9}",
        "results", "bytes", "gzip bytes", "zstd bytes", "gzip us", "zstd us"
    );
    for n in [1usize, 2, 4, 8, 16, 32, 64, 128, 256] {
        let response = SolveResponse {
            results: (0..n)
                .map(|i| patience::proto::Result {
                    index: 5_000 + i as u64,
                    id: String::new(),
                    analysis: None,
                    outcome: Some(Outcome::Probability(probabilities[i % probabilities.len()])),
                })
                .collect(),
            ..Default::default()
        };
        let raw = response.encode_to_vec();
        let gzip = || {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(&raw).expect("writes to a Vec");
            encoder.finish().expect("writes to a Vec").len()
        };
        let zstd = || {
            zstd::stream::encode_all(&raw[..], 1)
                .expect("writes to a Vec")
                .len()
        };
        let (gzip_bytes, gzip_us) = timed(gzip, 2_000);
        let (zstd_bytes, zstd_us) = timed(zstd, 2_000);
        println!(
            "{n:>7} {:>7} {gzip_bytes:>10} {zstd_bytes:>10} {gzip_us:>9.2} {zstd_us:>9.2}",
            raw.len()
        );
    }
}

/// What `compress` returns, and the median over [`ROUNDS`] of its time per call in
/// microseconds, each round `calls` calls.
fn timed(mut compress: impl FnMut() -> usize, calls: usize) -> (usize, f64) {
    let mut size = 0;
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                size = std::hint::black_box(compress());
            }
            start.elapsed().as_secs_f64() * 1e6 / calls as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    (size, rounds[ROUNDS / 2])
}
