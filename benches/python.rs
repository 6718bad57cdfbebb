//! The Python package's speed: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench python` (options after `--`: `--deals N` (100,000) for the in-process
//! figures, `--engine-deals N` (100,000) for Ray, Spark and Dask, `--engines ray,spark,dask`).
//!
//! The wheel is built by maturin (from the tools venv, `PATIENCE_VENV`; without it the bench says
//! so and stops) and installed into a fresh venv that sees the tools venv's packages. Printed side
//! by side in one run, on N random deals (`patience gen --seed 2026`):
//! - `patience.solve` in this process, 1 and 2 threads (the call alone, median of 3), against
//!   `patience solve --workers 1` and `--workers 2` as whole processes (median of 3), and 2
//!   threads against 1;
//! - each engine's call (Ray Data on `ray.init(num_cpus=2)`, Spark `local[2]`, a Dask
//!   LocalCluster of 2 workers) over the deals as a Parquet file, against `patience solve
//!   --workers 2`, with the engine's start-up timed apart;
//! - the wheel's size.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Flags, TempDir, run_measured};

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Runs `command` to its end, or stops the bench saying what failed; its standard output.
fn ran(command: &mut Command, what: &str) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn main() {
    let flags = Flags::from_env();
    let deals = flags.get("--deals", 100_000usize).max(1);
    let engine_deals = flags.get("--engine-deals", 100_000usize).max(1);
    let engines = flags.get("--engines", "ray,spark,dask".to_string());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var_os("PATIENCE_VENV")
        .map_or_else(|| root.join("target/tools/venv"), PathBuf::from);
    let tools_python = venv.join("bin/python");
    if !venv.join("bin/maturin").is_file() {
        println!(
            "no maturin in {} (set PATIENCE_VENV, or run .ci/run once): no figures",
            venv.display()
        );
        return;
    }
    let dir = TempDir::new("python");
    let exe = env!("CARGO_BIN_EXE_patience");

    // The wheel, as tests/python_package.rs builds it, and a fresh venv with it.
    let wheels = dir.join("wheels");
    ran(
        Command::new(venv.join("bin/maturin"))
            .args(["build", "--release", "--quiet", "-m"])
            .arg(root.join("crates/python/Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", root.join("target")),
        "maturin build",
    );
    let wheel = std::fs::read_dir(&wheels)
        .expect("maturin's output")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("one wheel");
    let wheel_bytes = std::fs::metadata(&wheel).map_or(0, |m| m.len());
    let fresh = dir.join("venv");
    ran(
        Command::new(&tools_python).args(["-m", "venv"]).arg(&fresh),
        "python -m venv",
    );
    ran(
        Command::new(fresh.join("bin/pip"))
            .args(["install", "--quiet", "--no-deps", "--no-index"])
            .arg(&wheel),
        "pip install",
    );
    let site = ran(
        Command::new(&tools_python).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]),
        "the tools venv's packages",
    );

    let deals_path = dir.join("deals.in");
    let text = ran(
        Command::new(exe).args(["gen", "--seed", "2026", "--count", &deals.to_string()]),
        "patience gen",
    );
    std::fs::write(&deals_path, &text).expect("write the deals");
    let engine_path = dir.join("engine-deals.in");
    let text = ran(
        Command::new(exe).args([
            "gen",
            "--seed",
            "2027",
            "--count",
            &engine_deals.to_string(),
        ]),
        "patience gen",
    );
    std::fs::write(&engine_path, &text).expect("write the deals");
    let parquet = dir.join("engine-deals.parquet");

    // `NAME SECONDS [START-UP ROWS]` lines from the Python side.
    let python = |input: &Path, what: &[&str]| -> Vec<Vec<f64>> {
        let out = ran(
            Command::new(fresh.join("bin/python"))
                .arg(root.join("benches/python_engines.py"))
                .arg(input)
                .arg(&parquet)
                .args(what)
                .env("PYTHONPATH", site.trim()),
            "benches/python_engines.py",
        );
        out.lines()
            .map(|line| {
                line.split_whitespace()
                    .skip(1)
                    .filter_map(|v| v.parse().ok())
                    .collect()
            })
            .collect()
    };
    let solve = |input: &Path, workers: usize| -> f64 {
        median(
            (0..3)
                .map(|_| {
                    let (t, _, _) = run_measured(
                        Command::new(exe)
                            .args(["solve", "-q", "--workers", &workers.to_string()])
                            .arg(input),
                    );
                    t.as_secs_f64()
                })
                .collect(),
        )
    };

    println!(
        "python bench: {deals} random deals (seed 2026) in process, {engine_deals} (seed 2027) through the engines"
    );
    println!(
        "wheel: {} ({:.0} kB)",
        wheel
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        wheel_bytes as f64 / 1000.0
    );
    let rate = |n: usize, s: f64| n as f64 / s.max(1e-9);
    let solve1 = solve(&deals_path, 1);
    let solve2 = solve(&deals_path, 2);
    let threads = python(&deals_path, &["threads1", "threads2"]);
    let (one, two) = (threads[0][0], threads[1][0]);
    println!(
        "patience.solve, 1 thread:  {:.0} deals/s = {:.3}x patience solve --workers 1 (whole process, {:.0} deals/s) (target: 0.95 or more)",
        rate(deals, one),
        solve1 / one,
        rate(deals, solve1)
    );
    println!(
        "patience.solve, 2 threads: {:.0} deals/s = {:.2}x 1 thread (target: 1.8 or more); {:.3}x patience solve --workers 2 ({:.0} deals/s)",
        rate(deals, two),
        one / two,
        solve2 / two,
        rate(deals, solve2)
    );
    let solve2_engines = solve(&engine_path, 2);
    println!(
        "patience solve --workers 2 on the engines' deals: {:.0} deals/s",
        rate(engine_deals, solve2_engines)
    );
    for engine in engines.split(',').filter(|e| !e.is_empty()) {
        let figures = python(&engine_path, &[engine]);
        let Some([took, started, rows]) = figures.first().map(|f| [f[0], f[1], f[2]]) else {
            println!("{engine}: no figure");
            continue;
        };
        assert_eq!(
            rows as usize, engine_deals,
            "{engine} answered {rows} rows of {engine_deals}"
        );
        println!(
            "{engine}: {:.0} deals/s = {:.3}x patience solve --workers 2 (target: 0.8 or more); start-up {:.1} s apart; {rows:.0} rows",
            rate(engine_deals, took),
            solve2_engines / took,
            started
        );
    }
}
