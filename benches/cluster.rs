//! Cluster benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench cluster` (options after `--`: `--deals N --runs R --batch B`).
//!
//! One file of uniformly random deals (`patience gen --seed 2026`) through the real
//! `patience client --batch B` binary, spread over 1, 2 and 3 local `patience serve --workers 1`
//! daemons; the median deals/s of R runs for each, and the ratio to one daemon. Every run's output
//! is checked byte for byte against `patience solve`'s. Rounds alternate between the daemon counts
//! so that drift on a shared machine affects them alike.
//!
//! What to expect: each daemon adds one solver thread, so the rate grows with the daemons until
//! the cores run out (the client itself needs a little CPU too). On a 2-core machine the third
//! daemon has no core of its own and cannot help.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Daemon, Flags, TempDir, median, start_daemon};

/// Seed of the deals (the engine and service benches use the same one).
const SEED: u64 = 2026;
/// The most daemons compared.
const DAEMONS: usize = 3;

struct Options {
    deals: usize,
    runs: usize,
    batch: usize,
}

fn options() -> Options {
    let flags = Flags::from_env();
    Options {
        deals: flags.get("--deals", 20_000usize).max(1),
        runs: flags.get("--runs", 5usize).max(1),
        batch: flags.get("--batch", 256usize).max(1),
    }
}

/// Runs `cmd` with its standard output in `out`; returns the wall time. Panics if it fails.
fn run_to_file(cmd: &mut Command, out: &Path) -> Duration {
    let what = format!("{cmd:?}");
    let file = std::fs::File::create(out).expect("temp file");
    let start = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::inherit())
        .status()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let elapsed = start.elapsed();
    assert!(status.success(), "{what} failed: {status}");
    elapsed
}

fn main() {
    let o = options();
    let exe = env!("CARGO_BIN_EXE_patience");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "cluster bench: {} uniformly random deals (patience gen --seed {SEED}), {} runs, \
         patience client --batch {}, daemons with --workers 1, {cores} cores here",
        o.deals, o.runs, o.batch
    );

    let dir = TempDir::new("cluster");
    let input = dir.join("deals.in");
    run_to_file(
        Command::new(exe).args([
            "gen",
            "--count",
            &o.deals.to_string(),
            "--seed",
            &SEED.to_string(),
        ]),
        &input,
    );
    let expected_path = dir.join("solve.out");
    run_to_file(Command::new(exe).arg("solve").arg(&input), &expected_path);
    let expected = std::fs::read(&expected_path).expect("read solve output");
    assert_eq!(
        expected.iter().filter(|&&b| b == b'\n').count(),
        o.deals,
        "patience solve printed the wrong number of lines"
    );

    let daemons: Vec<Daemon> = (0..DAEMONS).map(|_| start_daemon(1)).collect();
    let urls: Vec<String> = daemons.iter().map(|d| d.addr.clone()).collect();
    let out = dir.join("client.out");
    let mut rates = vec![Vec::new(); DAEMONS];
    for _ in 0..o.runs {
        for (k, rates) in rates.iter_mut().enumerate() {
            let mut cmd = Command::new(exe);
            cmd.args(["client", "--batch", &o.batch.to_string()]);
            for url in &urls[..=k] {
                cmd.args(["--addr", url]);
            }
            let t = run_to_file(cmd.arg(&input), &out);
            let got = std::fs::read(&out).expect("read client output");
            assert!(
                got == expected,
                "with {} daemons the client's output differs from patience solve's",
                k + 1
            );
            rates.push(o.deals as f64 / t.as_secs_f64());
        }
    }

    let one = median(rates[0].clone());
    println!("{:<10} {:>12} {:>9}", "daemons", "deals/s", "vs 1");
    for (k, rates) in rates.iter().enumerate() {
        let m = median(rates.clone());
        println!("{:<10} {:>12.0} {:>8.2}x", k + 1, m, m / one);
    }
    println!("every run's output was byte-identical to patience solve's");
    for mut daemon in daemons {
        let (_, status) = daemon.stop();
        assert!(status.success(), "a daemon exited with {status}");
    }
}
