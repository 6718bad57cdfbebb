//! What each analysis option costs against plain solving: prints figures, asserts nothing about
//! time.
//!
//! `cargo bench --bench analysis` (options after `--`: `--deals N --runs R --seed S`).
//!
//! On the same uniformly random deals (seeded), one reused `Solver`, one thread, interleaved
//! rounds so that machine noise hits every variant alike; reports the median deals/s of R rounds
//! per variant and its cost relative to plain `solve`. Also checks, on every deal, that asking for
//! more never changes the probability. Then the whole command: `patience solve --workers 1
//! --format json` with and without `--exact` on the same deals, alternating, median of R runs.

mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use patience::deal::Deal;
use patience::solver::{Options, Solver};
use support::{Flags, TempDir, median};

fn main() {
    let flags = Flags::from_env();
    let deals = flags.get("--deals", 5_000usize).max(1);
    let runs = flags.get("--runs", 5usize).max(1);
    let seed = flags.get("--seed", 2026u64);
    let mut rng = fastrand::Rng::with_seed(seed);
    let deals: Vec<Deal> = (0..deals).map(|_| Deal::shuffled(&mut rng)).collect();

    let none = Options::default();
    let variants: [(&str, Option<Options>); 6] = [
        ("solve (plain)", None),
        ("analyze, nothing asked", Some(none)),
        (
            "--moves",
            Some(Options {
                moves: true,
                ..none
            }),
        ),
        ("--line", Some(Options { line: true, ..none })),
        (
            "--exact",
            Some(Options {
                exact: true,
                ..none
            }),
        ),
        (
            "all three",
            Some(Options {
                exact: true,
                moves: true,
                line: true,
            }),
        ),
    ];

    let mut solver = Solver::new();
    let plain: Vec<u64> = deals
        .iter()
        .map(|d| solver.solve(d).probability.to_bits())
        .collect();
    let mut rates = vec![Vec::new(); variants.len()];
    for _ in 0..runs {
        for (v, (_, options)) in variants.iter().enumerate() {
            let start = Instant::now();
            let mut checksum = 0u64;
            for (d, want) in deals.iter().zip(&plain) {
                let p = match options {
                    None => solver.solve(d).probability,
                    Some(o) => {
                        let a = solver.analyze(d, *o);
                        checksum += a.moves.len() as u64 + a.line.len() as u64;
                        checksum += a.exact.map_or(0, |e| e.denominator_bits() as u64);
                        a.probability
                    }
                };
                assert_eq!(p.to_bits(), *want, "an option changed the probability");
            }
            std::hint::black_box(checksum);
            rates[v].push(deals.len() as f64 / start.elapsed().as_secs_f64());
        }
    }

    println!(
        "analysis options, {} random deals (seed {seed}), 1 thread, median of {runs} interleaved rounds",
        deals.len()
    );
    let base = median(rates[0].clone());
    for ((name, _), r) in variants.iter().zip(rates) {
        let m = median(r);
        let per_deal = 1e6 / m;
        println!(
            "  {name:<24} {m:>10.0} deals/s  {per_deal:>8.1} µs/deal  {:>6.2}× the time of plain",
            base / m
        );
    }

    // The whole command, as a user runs it.
    let dir = TempDir::new("analysis");
    let input = dir.join("deals.in");
    let mut text = Vec::new();
    for d in &deals {
        write!(text, "{d}").expect("write to memory");
    }
    std::fs::write(&input, text).expect("write the deals");
    let exe = env!("CARGO_BIN_EXE_patience");
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..runs {
        for (exact, times) in [false, true].into_iter().zip(times.iter_mut()) {
            let mut cmd = Command::new(exe);
            cmd.args(["solve", "--workers", "1", "--format", "json"]);
            if exact {
                cmd.arg("--exact");
            }
            let start = Instant::now();
            let status = cmd
                .arg(&input)
                .stdout(Stdio::null())
                .status()
                .expect("run patience solve");
            assert!(status.success(), "{cmd:?} failed");
            times.push(start.elapsed().as_secs_f64());
        }
    }
    let [without, with] = times.map(median);
    println!(
        "patience solve --workers 1 --format json, {} deals: {:.3} s; with --exact {:.3} s = {:.2}× the time",
        deals.len(),
        without,
        with,
        with / without
    );
}
