//! How fast the deal reader frames a clean file, beside a plain framer that takes nine lines at a
//! time: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench framing` (options after `--`: `--deals N --runs R --seed S`).
//!
//! The file is N seeded random deals in the judge's layout (nine lines of four cards each), in
//! memory, so no disk or page cache enters the figure. Two ways to read it, in interleaved
//! rounds so that machine noise hits both alike, each round checked to give the same deals:
//! - `DealReader`, as `solve`, the client, the jobs and the HTTP API read (its framing finds
//!   where whole deals begin again after a damaged line, so it looks at the line after a deal
//!   before handing the deal on);
//! - nine lines at a time with no look-ahead and no recovery, each block handed to the general
//!   `Deal::parse`: the framing a first reader of this format would write, as a yardstick that
//!   does not move between checkouts (the reader reads a pile line's four cards at fixed places,
//!   so it beats it).
//!
//! The bench depends on `Deal::parse`, `Display` and `DealReader::new` only, so the same file
//! runs against an older checkout to give the reader's figure from before.

use std::time::Instant;

use patience::deal::{Deal, DealReader};

fn main() {
    let flags: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: u64| -> u64 {
        flags
            .iter()
            .position(|a| a == name)
            .and_then(|i| flags.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let deals = get("--deals", 200_000).max(1) as usize;
    let runs = get("--runs", 9).max(1) as usize;
    let mut rng = fastrand::Rng::with_seed(get("--seed", 2026));

    let dealt: Vec<Deal> = (0..deals).map(|_| Deal::shuffled(&mut rng)).collect();
    let mut text = String::new();
    for deal in &dealt {
        text.push_str(&deal.to_string());
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let bytes = text.as_bytes();

    let mut reader_s = Vec::new();
    let mut plain_s = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let read: Vec<Deal> = DealReader::new(bytes)
            .map(|d| d.expect("a clean file reads whole"))
            .collect();
        reader_s.push(started.elapsed().as_secs_f64());
        assert!(read == dealt, "the reader gave other deals");

        let started = Instant::now();
        let read = nine_lines_at_a_time(&text);
        plain_s.push(started.elapsed().as_secs_f64());
        assert!(read == dealt, "nine lines at a time gave other deals");
    }

    let mb = bytes.len() as f64 / 1e6;
    let (reader, plain) = (median(reader_s.clone()), median(plain_s.clone()));
    let pairs: Vec<f64> = reader_s.iter().zip(&plain_s).map(|(r, f)| r / f).collect();
    println!(
        "framing a clean file: {deals} random deals (seed {}), {mb:.1} MB in memory, median of \
         {runs} interleaved rounds",
        get("--seed", 2026)
    );
    for (name, s) in [
        ("DealReader", reader),
        ("nine lines at a time, no look-ahead", plain),
    ] {
        println!(
            "  {name:<38} {:>9.0} deals/s  {:>7.1} MB/s  {:>6.1} ns/deal",
            deals as f64 / s,
            mb / s,
            s * 1e9 / deals as f64
        );
    }
    println!(
        "  DealReader / nine lines at a time: {:.3} (median of pairs), {:.3} (ratio of medians)",
        median(pairs),
        reader / plain
    );
}

/// Every nine non-blank lines as one deal, parsed by `Deal::parse`: no look-ahead, no recovery.
fn nine_lines_at_a_time(text: &str) -> Vec<Deal> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = 0;
        for _ in 0..9 {
            match rest[end..].find('\n') {
                Some(i) => end += i + 1,
                None => end = rest.len(),
            }
        }
        out.push(Deal::parse(&rest[..end]).expect("a clean deal parses"));
        rest = &rest[end..];
    }
    out
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}
