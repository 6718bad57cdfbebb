//! The engine's benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench engine` (options after `--`: `--deals N --runs R --reference-deals M`).
//!
//! Measures, side by side in one run on the same uniformly random deals (seeded):
//! - the engine on one thread (one reused `Solver`), before and after the prefetch (`search.rs`),
//!   R runs each taken in turn, their medians and the median ratio of the pairs; ns per position,
//!   real and hot (the same searches with every probe in cache: the floor memory leaves);
//! - the engine on two threads, a solver each, before and after;
//! - states visited per deal (median, p99, max, mean);
//! - what reading a deal and printing its line cost, per deal;
//! - `reference-solve` (seed 001's memo DFS, whole process) on the first M deals (all by
//!   default), against the engine on one thread.
//!
//! `patience solve` against the engine, the figure the command line is judged by, is the root
//! package's `cargo bench --bench solve`.

// The tests' reference data and seed solvers (the workspace's tests/common/data.rs), under the
// name the tests give this crate.
extern crate patience_engine as patience;
#[allow(dead_code, reason = "the bench needs the seed solvers' path only")]
#[path = "../../../tests/common/data.rs"]
mod data;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use patience_engine::deal::{Deal, DealReader};
use patience_engine::solver::Solver;

struct Options {
    deals: usize,
    runs: usize,
    reference_deals: usize,
}

/// `--name value` after `--`, or `default`.
fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn options() -> Options {
    let deals = flag("--deals", 20_000).max(1);
    Options {
        deals,
        runs: flag("--runs", 5).max(1),
        reference_deals: flag("--reference-deals", deals),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn write_deals(path: &Path, deals: &[Deal]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("temp file"));
    for d in deals {
        write!(f, "{d}").expect("write deals");
    }
    f.flush().expect("write deals");
}

/// Runs `f` `runs` times; the median rate in deals per second and every run's rate.
fn rates(runs: usize, deals: usize, mut f: impl FnMut()) -> (f64, String) {
    let all: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            deals as f64 / start.elapsed().as_secs_f64()
        })
        .collect();
    let list = all
        .iter()
        .map(|r| format!("{r:.0}"))
        .collect::<Vec<_>>()
        .join(", ");
    (median(all), list)
}

fn main() {
    let o = options();
    let mut rng = fastrand::Rng::with_seed(2026);
    let deals: Vec<Deal> = (0..o.deals).map(|_| Deal::shuffled(&mut rng)).collect();
    println!(
        "engine bench: {} uniformly random deals (seed 2026), {} runs",
        o.deals, o.runs
    );

    // The engine before and after the prefetch (the one change this bench compares, see
    // docs/performance.md), each one reused solver: the same answers to the bit, then runs taken
    // in turn, before and after, so that the machine's drift falls on both alike.
    let mut before = Solver::new();
    before.set_prefetch(false);
    let mut solver = Solver::new();
    let solutions: Vec<_> = deals.iter().map(|d| solver.solve(d)).collect();
    for (d, s) in deals.iter().zip(&solutions) {
        let b = before.solve(d);
        assert_eq!(
            (b.probability.to_bits(), b.states),
            (s.probability.to_bits(), s.states),
            "the prefetch changed an answer"
        );
    }
    let mut states: Vec<u32> = solutions.iter().map(|s| s.states).collect();
    let mean_states = states.iter().map(|&s| f64::from(s)).sum::<f64>() / states.len() as f64;
    let (mut runs_before, mut runs_after, mut paired) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.runs {
        let (b, _) = rates(1, deals.len(), || {
            for d in &deals {
                std::hint::black_box(before.solve(d));
            }
        });
        let (a, _) = rates(1, deals.len(), || {
            for d in &deals {
                std::hint::black_box(solver.solve(d));
            }
        });
        runs_before.push(b);
        runs_after.push(a);
        paired.push(a / b);
    }
    let list = |xs: &[f64]| {
        xs.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (b_list, a_list) = (list(&runs_before), list(&runs_after));
    let (single_before, single) = (median(runs_before), median(runs_after));
    let ns = |rate: f64| 1e9 / (rate * mean_states);
    println!(
        "engine, 1 thread, before (no prefetch): median {single_before:.0} deals/s, {:.1} ns per position  (runs: {b_list})",
        ns(single_before)
    );
    println!(
        "engine, 1 thread, after: median {single:.0} deals/s, {:.1} ns per position  (runs: {a_list})",
        ns(single)
    );
    println!(
        "  after against before: {:.3}x (median of the {} paired runs)",
        median(paired),
        o.runs
    );
    // The floor: the same searches with every probe in cache. Each deal is solved once, then
    // timed solving it again at once: the second solve starts its deal afresh (the solver trusts
    // no entry of the last deal) and makes the same probes, to cache lines the first just
    // brought in. What the real figure costs above this one is what waiting on memory costs.
    let hot = |solver: &mut Solver| {
        let runs: Vec<f64> = (0..o.runs)
            .map(|_| {
                let mut took = std::time::Duration::ZERO;
                for d in &deals {
                    std::hint::black_box(solver.solve(d));
                    let start = Instant::now();
                    std::hint::black_box(solver.solve(d));
                    took += start.elapsed();
                }
                took.as_secs_f64() * 1e9 / (mean_states * deals.len() as f64)
            })
            .collect();
        median(runs)
    };
    for (name, solver, rate) in [
        ("before", &mut before, single_before),
        ("after", &mut solver, single),
    ] {
        let hot = hot(solver);
        println!(
            "ns per position, {name}: real {:.1}, hot {hot:.1} (every probe in cache): memory's part {:.0}% of the real cost",
            ns(rate),
            100.0 * (1.0 - hot / ns(rate))
        );
    }
    states.sort_unstable();
    println!(
        "states visited per deal: median {}, p99 {}, max {}, mean {mean_states:.0}",
        percentile(&states, 0.5),
        percentile(&states, 0.99),
        states[states.len() - 1]
    );

    // The same engine on two threads, each with its own solver, splitting the deals: what this
    // machine's cores give this load with no I/O at all, to read the solve ratio against.
    for (name, prefetch, one) in [("before", false, single_before), ("after", true, single)] {
        let (pair, _) = rates(o.runs, deals.len(), || {
            std::thread::scope(|scope| {
                for half in deals.chunks(deals.len().div_ceil(2)) {
                    scope.spawn(move || {
                        let mut solver = Solver::new();
                        solver.set_prefetch(prefetch);
                        for d in half {
                            std::hint::black_box(solver.solve(d));
                        }
                    });
                }
            });
        });
        println!(
            "engine, 2 threads (a solver each), {name}: median {pair:.0} deals/s = {:.2}x one thread",
            pair / one
        );
    }
    let dir = std::env::temp_dir();
    let all_path = dir.join(format!("patience-bench-{}.in", std::process::id()));
    write_deals(&all_path, &deals);

    // What a command spends per deal besides solving: the reader and the printer.
    let text = std::fs::read(&all_path).expect("read the deals back");
    let (read_rate, _) = rates(o.runs, deals.len(), || {
        let read = DealReader::new(&text[..]).filter(Result::is_ok).count();
        assert_eq!(read, deals.len());
    });
    let (print_rate, _) = rates(o.runs, deals.len(), || {
        let mut out = Vec::with_capacity(deals.len() * 9);
        for s in &solutions {
            writeln!(out, "{:.6}", s.probability).expect("write to memory");
        }
        std::hint::black_box(out);
    });
    println!(
        "reading a deal: {:.0} ns; printing its line: {:.0} ns (per deal, one thread)",
        1e9 / read_rate,
        1e9 / print_rate
    );

    // The reference (seed 001's memo DFS), whole process, on the first M deals.
    let script = data::reference_path("reference-solve");
    let m = o.reference_deals.min(deals.len());
    if script.exists() && m > 0 {
        let ref_path = dir.join(format!("patience-bench-ref-{}.in", std::process::id()));
        write_deals(&ref_path, &deals[..m]);
        // First call compiles the reference; keep that out of the timing.
        let warm = dir.join(format!("patience-bench-warm-{}.in", std::process::id()));
        write_deals(&warm, &deals[..1]);
        let run = |input: &Path| {
            let start = Instant::now();
            let out = Command::new(&script)
                .arg(input)
                .stderr(Stdio::inherit())
                .output()
                .expect("run reference-solve");
            (start.elapsed(), out.stdout)
        };
        run(&warm);
        let (t, answers) = run(&ref_path);
        let ref_rate = m as f64 / t.as_secs_f64();
        let text = String::from_utf8_lossy(&answers);
        let worst = text
            .lines()
            .zip(&solutions)
            .map(|(r, s)| (r.parse::<f64>().unwrap_or(f64::NAN) - s.probability).abs())
            .fold(0.0, f64::max);
        println!(
            "reference-solve (seed 001, g++ -O2, whole process) on {m} deals: {ref_rate:.0} deals/s; largest difference {worst:.1e}"
        );
        println!(
            "  the engine (1 thread) against it: before {:.1}x, after {:.1}x",
            single_before / ref_rate,
            single / ref_rate
        );
        let _ = std::fs::remove_file(&ref_path);
        let _ = std::fs::remove_file(&warm);
    } else {
        println!(
            "reference-solve not found at {} (set PATIENCE_REFERENCE_DIR): no ratio",
            script.display()
        );
    }

    let _ = std::fs::remove_file(&all_path);
}
