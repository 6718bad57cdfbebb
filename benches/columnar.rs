//! Parquet benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench columnar` (options after `--`: `--deals N`, `--runs R`).
//!
//! One file of uniformly random deals (`patience gen --seed 2026`, 1,000,000 by default),
//! answered by the real binary with `solve --workers 2`, R pairs in turn:
//! - `--output answers.txt` (the text lines) against `--format parquet --output answers.parquet`:
//!   each run's CPU (user + system, the whole process's) and wall time, their medians and the
//!   median of the pairs' CPU ratios (what writing Parquet costs on top of solving), and the two
//!   files' sizes;
//! - with a venv holding pyarrow and DuckDB (`target/tools/venv`, or `PATIENCE_VENV`): the same
//!   deals as a Parquet input (pyarrow, snappy), solved to text, against the text input, and
//!   DuckDB's `SELECT count(*), avg(probability)` of the Parquet answers.
//!
//! Every Parquet output is checked against the text: the same count, and the same
//! probabilities at 6 decimals (DuckDB's, when it is there).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Flags, TempDir, cpu_measured, generated_deals, median};

/// Seed of the deals (the other benches use the same one).
const SEED: u64 = 2026;

fn main() {
    let flags = Flags::from_env();
    let deals = flags.get("--deals", 1_000_000usize).max(1);
    let runs = flags.get("--runs", 5usize).max(1);
    let dir = TempDir::new("columnar");
    let input = generated_deals(&dir, deals, SEED);
    let text_out = dir.join("answers.txt").display().to_string();
    let parquet_out = dir.join("answers.parquet").display().to_string();
    let stdout = dir.join("stdout");
    println!("{deals} deals, `patience solve --workers 2`, {runs} pairs in turn:");

    let (mut text, mut parquet, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = cpu_measured(
            &[
                "solve",
                "-q",
                "--workers",
                "2",
                "--output",
                &text_out,
                &input,
            ],
            &[],
            &stdout,
        );
        let p = cpu_measured(
            &[
                "solve",
                "-q",
                "--workers",
                "2",
                "--format",
                "parquet",
                "--output",
                &parquet_out,
                &input,
            ],
            &[],
            &stdout,
        );
        ratios.push(p.1 / t.1);
        text.push(t);
        parquet.push(p);
    }
    let size = |path: &str| std::fs::metadata(path).expect("an output").len();
    let show = |name: &str, runs: &[(std::time::Duration, f64)], bytes: u64| {
        println!(
            "  {name:<8} CPU {:6.2} s, wall {:6.2} s (medians), {bytes} bytes ({:.2} bytes per deal)",
            median(runs.iter().map(|r| r.1).collect()),
            median(runs.iter().map(|r| r.0.as_secs_f64()).collect()),
            bytes as f64 / deals as f64,
        );
    };
    show("text", &text, size(&text_out));
    show("parquet", &parquet, size(&parquet_out));
    println!(
        "  parquet / text CPU: median of the pairs {:.3}x",
        median(ratios)
    );

    let Some(python) = python() else {
        println!("(no venv with pyarrow and duckdb: the Parquet input and DuckDB are skipped)");
        return;
    };
    let answers = std::fs::read_to_string(&text_out).expect("the text answers");
    let script = r#"
import sys, duckdb
con = duckdb.connect()
count, avg = con.execute("SELECT count(*), avg(probability) FROM read_parquet(?)", [sys.argv[1]]).fetchone()
print(count, repr(avg))
for (p,) in con.execute("SELECT probability FROM read_parquet(?) ORDER BY index", [sys.argv[1]]).fetchall():
    print("error" if p is None else f"{p:.6f}")
"#;
    let duck = run_python(&python, script, &[&parquet_out]);
    let mut lines = duck.lines();
    let head = lines.next().expect("DuckDB's count and avg");
    let shown: Vec<&str> = answers
        .lines()
        .map(|l| if l.starts_with("error") { "error" } else { l })
        .collect();
    assert!(
        lines.eq(shown.iter().copied()),
        "DuckDB's probabilities are not the text's"
    );
    println!("  DuckDB on the Parquet answers: count(*), avg(probability) = {head}");

    let parquet_in = dir.join("deals.parquet").display().to_string();
    let script = r#"
import sys, pyarrow as pa, pyarrow.parquet as pq
cards = open(sys.argv[1]).read().split()
deals = [" ".join(cards[i:i + 36]) for i in range(0, len(cards), 36)]
pq.write_table(pa.table({"deal": deals}), sys.argv[2], compression="snappy")
"#;
    run_python(&python, script, &[&input, &parquet_in]);
    let from_parquet = dir.join("from-parquet.txt").display().to_string();
    let (mut text_in, mut parquet_read) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        text_in.push(cpu_measured(&["solve", "-q", "--workers", "2", &input], &[], &stdout).1);
        parquet_read.push(
            cpu_measured(
                &["solve", "-q", "--workers", "2", &parquet_in],
                &[],
                Path::new(&from_parquet),
            )
            .1,
        );
    }
    assert!(
        std::fs::read(&from_parquet).expect("answers") == answers.as_bytes(),
        "the Parquet input's answers differ from the text input's"
    );
    println!(
        "  input as Parquet ({} bytes, pyarrow, snappy) against text ({} bytes): CPU {:.2} s \
         against {:.2} s (medians), {:.3}x",
        size(&parquet_in),
        size(&input),
        median(parquet_read.clone()),
        median(text_in.clone()),
        median(parquet_read) / median(text_in)
    );
}

/// The venv's python, when it has pyarrow and duckdb.
fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("PATIENCE_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    Command::new(&python)
        .args(["-c", "import pyarrow, duckdb"])
        .output()
        .is_ok_and(|out| out.status.success())
        .then_some(python)
}

fn run_python(python: &Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(python)
        .args(["-c", script])
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}
