//! `patience rps` benchmark: prints figures, asserts nothing about time (only that the answers are
//! right: a bench that solves wrong measures nothing).
//!
//! `cargo bench --bench rps` (options after `--`: `--cases N --reference-cases M --runs R`).
//!
//! On seeded random cases with 15 other players each (the largest allowed, written with three
//! decimals summing to exactly 1), side by side in one run:
//! - `reference-rps` (seed 004, g++ -O2, whole process) and `patience rps --workers 1` (whole
//!   process) on the same file of M cases, median of R runs each, and the ratio; every answer of
//!   ours within 1e-9 of the seed's where it prints a number;
//! - `patience rps` with 1 and 2 workers on N cases, median cases/s of R runs (alternating), the
//!   ratio, peak RSS of each (sampled from /proc) and the memory a worker adds; the two outputs
//!   must be identical.
//!
//! The seed is `O(3^n)` per case (about 0.1 s at n = 15), so M defaults to far fewer cases than N.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{Flags, TempDir, median, rps_random_cases, run_measured};

/// Other players per case: the most a case may have, where the engines differ most.
const OTHERS: usize = 15;

struct Options {
    cases: usize,
    reference_cases: usize,
    runs: usize,
}

fn options() -> Options {
    let flags = Flags::from_env();
    Options {
        cases: flags.get("--cases", 400usize).max(1),
        reference_cases: flags.get("--reference-cases", 40usize).max(1),
        runs: flags.get("--runs", 5usize).max(1),
    }
}

fn patience_rps(workers: usize, file: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_patience"));
    cmd.args(["rps", "--quiet", "--workers", &workers.to_string()])
        .arg(file);
    cmd
}

fn lines(output: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(output)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Checks our answers against the seed's, line by line, within 1e-9 where the seed printed a
/// number (it prints nan where it divides by zero); returns the largest difference and how many
/// lines were skipped.
fn check_against_reference(ours: &[String], theirs: &[String]) -> (f64, usize) {
    assert_eq!(ours.len(), theirs.len(), "one line per case from both");
    let mut worst = 0.0f64;
    let mut skipped = 0;
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        let Some(t) = t.parse::<f64>().ok().filter(|t| t.is_finite()) else {
            skipped += 1;
            continue;
        };
        let o: f64 = o
            .parse()
            .unwrap_or_else(|e| panic!("case {}: {o:?}: {e}", i + 1));
        let d = (o - t).abs();
        assert!(
            d <= 1e-9,
            "case {}: patience {o}, reference {t}: wrong answers",
            i + 1
        );
        worst = worst.max(d);
    }
    (worst, skipped)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    let o = options();
    let dir = TempDir::new("rps");
    println!(
        "{} cases of n = {OTHERS} ({} more for the reference, which is slow), median of {} runs",
        o.cases, o.reference_cases, o.runs
    );

    // The seed against `patience rps --workers 1` on the same file, whole process each.
    let script = support::reference_path("reference-rps");
    if script.exists() {
        let ref_path = dir.join("reference.in");
        std::fs::write(
            &ref_path,
            rps_random_cases(o.reference_cases, Some(OTHERS), 2145),
        )
        .expect("write the cases");
        // The first call compiles the reference; keep that out of the timing.
        let warm = dir.join("warm.in");
        std::fs::write(&warm, rps_random_cases(1, Some(0), 1)).expect("write the cases");
        run_measured(Command::new(&script).arg(&warm));

        let mut theirs = Vec::new();
        let mut ours = Vec::new();
        let mut answers = (Vec::new(), Vec::new());
        for _ in 0..o.runs {
            let (t, _, out) = run_measured(Command::new(&script).arg(&ref_path));
            theirs.push(secs(t));
            answers.0 = lines(&out);
            let (t, _, out) = run_measured(&mut patience_rps(1, &ref_path));
            ours.push(secs(t));
            answers.1 = lines(&out);
        }
        let (worst, skipped) = check_against_reference(&answers.1, &answers.0);
        let (theirs, ours) = (median(theirs), median(ours));
        let m = o.reference_cases as f64;
        println!(
            "reference-rps (seed 004, g++ -O2, whole process): {:.3} s = {:.1} cases/s",
            theirs,
            m / theirs
        );
        println!(
            "patience rps --workers 1 (whole process, same file): {:.3} s = {:.1} cases/s: {:.1}x the seed; \
             largest difference {worst:.1e}{}",
            ours,
            m / ours,
            theirs / ours,
            if skipped > 0 {
                format!(" ({skipped} cases where the seed prints nan not compared)")
            } else {
                String::new()
            }
        );
    } else {
        println!(
            "reference-rps not found at {} (set PATIENCE_REFERENCE_DIR): no ratio",
            script.display()
        );
    }

    // One and two workers on the larger file, alternating, median of runs.
    let path = dir.join("cases.in");
    std::fs::write(&path, rps_random_cases(o.cases, Some(OTHERS), 4)).expect("write the cases");
    let mut per_workers: Vec<(usize, Vec<f64>, u64, Vec<u8>)> =
        [1, 2].map(|w| (w, Vec::new(), 0, Vec::new())).into();
    for _ in 0..o.runs {
        for (workers, rates, peak, output) in &mut per_workers {
            let (t, kib, out) = run_measured(&mut patience_rps(*workers, &path));
            rates.push(o.cases as f64 / secs(t));
            *peak = (*peak).max(kib);
            *output = out;
        }
    }
    assert!(
        per_workers[0].3 == per_workers[1].3,
        "--workers 2 printed something else than --workers 1"
    );
    assert_eq!(lines(&per_workers[0].3).len(), o.cases, "one line per case");
    let mut medians = Vec::new();
    for (workers, rates, peak, _) in &per_workers {
        let m = median(rates.clone());
        medians.push(m);
        println!(
            "patience rps --workers {workers}: median {m:.0} cases/s, peak RSS {:.1} MiB",
            *peak as f64 / 1024.0
        );
    }
    println!(
        "2 workers vs 1: {:.2}x; a worker adds {:.1} MiB of peak RSS",
        medians[1] / medians[0],
        (per_workers[1].2 as f64 - per_workers[0].2 as f64) / 1024.0
    );
}
