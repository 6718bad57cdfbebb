//! Engine and `patience solve` benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench engine` (options after `--`: `--deals N --runs R --reference-deals M`).
//!
//! Measures, side by side in one run on the same uniformly random deals (seeded):
//! - single-threaded engine throughput (one reused `Solver`), median of R runs;
//! - states visited per deal (median, p99, max);
//! - `reference-solve` (the seed C++ memo DFS) on the first M of those deals, and the ratio;
//! - `patience solve` with 1 and 2 workers on the whole file, and the ratio;
//! - peak resident memory of `patience solve` per worker count.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use patience::deal::Deal;
use patience::solver::Solver;
use support::{Flags, median, percentile};

struct Options {
    deals: usize,
    runs: usize,
    reference_deals: usize,
    engine_only: bool,
}

fn options() -> Options {
    let flags = Flags::from_env();
    Options {
        deals: flags.get("--deals", 20_000usize).max(1),
        runs: flags.get("--runs", 5usize).max(1),
        reference_deals: flags.get("--reference-deals", 2_000),
        engine_only: flags.has("--engine-only"),
    }
}

fn reference_script() -> PathBuf {
    std::env::var_os("PATIENCE_REFERENCE").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/reference-solve"),
        PathBuf::from,
    )
}

fn write_deals(path: &Path, deals: &[Deal]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("temp file"));
    for d in deals {
        write!(f, "{d}").expect("write deals");
    }
    f.flush().expect("write deals");
}

/// Runs a command to completion, returning its wall time and peak RSS in KiB (sampled from /proc).
fn run_measured(cmd: &mut Command) -> (Duration, u64, Vec<u8>) {
    let out_path = std::env::temp_dir().join(format!("patience-bench-out-{}", std::process::id()));
    let out = std::fs::File::create(&out_path).expect("temp file");
    let start = Instant::now();
    let mut child = cmd
        .stdout(out)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_path) {
            for line in s.lines() {
                if let Some(v) = line.strip_prefix("VmHWM:") {
                    let kb = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                    peak = peak.max(kb);
                }
            }
        }
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(
                status.success() || status.code() == Some(1),
                "{cmd:?} failed"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = start.elapsed();
    let output = std::fs::read(&out_path).expect("read output");
    let _ = std::fs::remove_file(&out_path);
    (elapsed, peak, output)
}

fn main() {
    let o = options();
    let mut rng = fastrand::Rng::with_seed(2026);
    let deals: Vec<Deal> = (0..o.deals).map(|_| Deal::shuffled(&mut rng)).collect();
    println!(
        "engine bench: {} uniformly random deals (seed 2026), {} runs",
        o.deals, o.runs
    );

    // Engine, one thread, one reused solver.
    let mut solver = Solver::new();
    let mut states = Vec::with_capacity(deals.len());
    let mut rates = Vec::new();
    let mut ours = Vec::with_capacity(deals.len());
    for run in 0..o.runs {
        let start = Instant::now();
        for d in &deals {
            let s = solver.solve(d);
            if run == 0 {
                states.push(s.states);
                ours.push(s.probability);
            }
        }
        rates.push(deals.len() as f64 / start.elapsed().as_secs_f64());
    }
    let engine_rate = median(rates.clone());
    states.sort_unstable();
    println!(
        "engine (1 thread): median {:.0} deals/s  (runs: {})",
        engine_rate,
        rates
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "states visited per deal: median {}, p99 {}, max {}",
        percentile(&states, 0.5),
        percentile(&states, 0.99),
        states[states.len() - 1]
    );

    // The same engine on two threads, each with its own solver, splitting the deals: what this
    // machine's cores give a memory-bound load with no I/O at all, to read the solve ratio against.
    let mut pair_rates = Vec::new();
    for _ in 0..o.runs {
        let start = Instant::now();
        std::thread::scope(|scope| {
            for half in deals.chunks(deals.len().div_ceil(2)) {
                scope.spawn(move || {
                    let mut solver = Solver::new();
                    for d in half {
                        std::hint::black_box(solver.solve(d));
                    }
                });
            }
        });
        pair_rates.push(deals.len() as f64 / start.elapsed().as_secs_f64());
    }
    let pair_rate = median(pair_rates);
    println!(
        "engine (2 threads, a solver each): median {pair_rate:.0} deals/s = {:.2}x one thread",
        pair_rate / engine_rate
    );
    if o.engine_only {
        return;
    }
    let dir = std::env::temp_dir();
    let all_path = dir.join(format!("patience-bench-{}.in", std::process::id()));
    write_deals(&all_path, &deals);

    // The reference, on a prefix (it is slow), in the same run.
    let script = reference_script();
    let m = o.reference_deals.min(deals.len());
    if script.exists() && m > 0 {
        let ref_path = dir.join(format!("patience-bench-ref-{}.in", std::process::id()));
        write_deals(&ref_path, &deals[..m]);
        // First call compiles the reference; keep that out of the timing.
        let warm = dir.join(format!("patience-bench-warm-{}.in", std::process::id()));
        write_deals(&warm, &deals[..1]);
        run_measured(Command::new(&script).arg(&warm));
        let mut ref_rates = Vec::new();
        let mut answers = Vec::new();
        for _ in 0..3 {
            let (t, _, out) = run_measured(Command::new(&script).arg(&ref_path));
            ref_rates.push(m as f64 / t.as_secs_f64());
            answers = out;
        }
        let ref_rate = median(ref_rates);
        let text = String::from_utf8_lossy(&answers);
        let worst = text
            .lines()
            .zip(&ours)
            .map(|(r, o)| (r.parse::<f64>().unwrap_or(f64::NAN) - o).abs())
            .fold(0.0, f64::max);
        println!(
            "reference-solve (seed memo DFS, whole process) on the first {m} deals: median {ref_rate:.0} deals/s"
        );
        println!(
            "engine / reference: {:.1}x   (largest difference on those deals: {worst:.1e})",
            engine_rate / ref_rate
        );
        let _ = std::fs::remove_file(&ref_path);
        let _ = std::fs::remove_file(&warm);
    } else {
        println!(
            "reference-solve not found at {} (set PATIENCE_REFERENCE): no ratio",
            script.display()
        );
    }

    // The command line with 1 and 2 workers, same file, alternating, median of runs.
    let exe = env!("CARGO_BIN_EXE_patience");
    let mut per_workers = Vec::new();
    for workers in [1, 2] {
        per_workers.push((workers, Vec::new(), 0u64));
    }
    for _ in 0..o.runs.max(1) {
        for (workers, rates, peak) in per_workers.iter_mut() {
            let (t, kb, _) = run_measured(
                Command::new(exe)
                    .args(["solve", "--workers", &workers.to_string()])
                    .arg(&all_path),
            );
            rates.push(deals.len() as f64 / t.as_secs_f64());
            *peak = (*peak).max(kb);
        }
    }
    let mut medians = Vec::new();
    for (workers, rates, peak) in per_workers {
        let m = median(rates);
        medians.push(m);
        println!(
            "patience solve --workers {workers}: median {m:.0} deals/s, peak RSS {:.1} MiB",
            peak as f64 / 1024.0
        );
    }
    println!(
        "solve speed-up, 2 workers vs 1: {:.2}x",
        medians[1] / medians[0]
    );
    let _ = std::fs::remove_file(&all_path);
}
