//! Storage benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench storage` (options after `--`: `--deals N`, `--rounds R`, `--large-mb M`).
//!
//! - `patience solve --workers 2` on the same N random deals (`patience gen --seed 2026`) as a
//!   local plain file, a local `.gz` (flate2, default level) and a local `.zst` (libzstd, level
//!   3), and the same three as objects of a `moto_server` the bench starts (PyPI's S3-compatible
//!   store, from `PATIENCE_VENV`; without it the S3 rows are skipped, said so): the median wall
//!   time and CPU (user + system of the process, from its start to its exit) of R rounds, the
//!   setups alternating within each round so that a shared machine's drift hits them alike, and
//!   the ratio of each to the local plain file. The target: zstd costs at most 5% of a
//!   run's time against plain.
//! - The peak RSS (VmHWM, sampled every 2 ms) of `patience solve --workers 2` reading one
//!   zstd-compressed object of M MB of deals (decompressed size) from moto, the whole object
//!   solved, against the same on a local plain file of 1/100 of its size: the object's size does
//!   not show in the memory.
//!
//! Every output is checked byte for byte against the local plain file's.

mod support;

use std::process::Command;

use support::{Flags, S3Server, TempDir, cpu_measured, median, run_measured};

/// Seed of the deals (the other benches use the same one).
const SEED: u64 = 2026;

/// `count` deals from `patience gen --seed SEED`.
fn generate(count: usize) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_patience"))
        .args([
            "gen",
            "--count",
            &count.to_string(),
            "--seed",
            &SEED.to_string(),
        ])
        .output()
        .expect("run patience gen");
    assert!(out.status.success(), "patience gen failed");
    out.stdout
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).expect("zstd")
}

/// The machine, as `lscpu` names it.
fn machine() -> String {
    let lscpu = Command::new("lscpu")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let model = String::from_utf8_lossy(&lscpu)
        .lines()
        .find_map(|l| l.strip_prefix("Model name:").map(|m| m.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}

fn main() {
    let flags = Flags::from_env();
    let deals = flags.get("--deals", 100_000usize).max(1);
    let rounds = flags.get("--rounds", 3usize).max(1);
    let large_mb = flags.get("--large-mb", 500usize).max(1);
    let dir = TempDir::new("storage");
    let plain = generate(deals);
    let files = [
        ("plain", plain.clone()),
        ("gzip", gzip(&plain)),
        ("zstd", zstd(&plain)),
    ];
    let names = ["deals.in", "deals.in.gz", "deals.in.zst"];
    let mut setups: Vec<(String, String, u64)> = Vec::new();
    for ((kind, bytes), name) in files.iter().zip(names) {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write the deals");
        setups.push((
            format!("local {kind}"),
            path.display().to_string(),
            bytes.len() as u64,
        ));
    }
    let s3 = S3Server::start();
    let env: Vec<(&str, &str)> = s3.as_ref().map_or_else(Vec::new, |s3| s3.vars().to_vec());
    match &s3 {
        Some(s3) => {
            s3.make_bucket("deals");
            for ((kind, bytes), name) in files.iter().zip(names) {
                s3.put_file("deals", name, &dir.join(name));
                setups.push((
                    format!("s3 {kind}"),
                    format!("s3://deals/{name}"),
                    bytes.len() as u64,
                ));
            }
        }
        None => println!("(no moto_server in PATIENCE_VENV: the S3 rows are skipped)"),
    }
    println!("machine: {}", machine());
    println!(
        "{deals} deals ({} bytes plain), `patience solve --workers 2`, median of {rounds} rounds:",
        plain.len()
    );
    let mut walls = vec![Vec::new(); setups.len()];
    let mut cpus = vec![Vec::new(); setups.len()];
    let reference = dir.join("reference.out");
    for round in 0..rounds {
        for (i, (_, input, _)) in setups.iter().enumerate() {
            let out = if i == 0 {
                reference.clone()
            } else {
                dir.join("other.out")
            };
            let (wall, cpu) = cpu_measured(&["solve", "--workers", "2", input], &env, &out);
            if round > 0 || i > 0 {
                assert!(
                    std::fs::read(&out).unwrap() == std::fs::read(&reference).unwrap(),
                    "{input}: other answers than the local plain file's"
                );
            }
            walls[i].push(wall.as_secs_f64());
            cpus[i].push(cpu);
        }
    }
    let wall: Vec<f64> = walls.into_iter().map(median).collect();
    let cpu: Vec<f64> = cpus.into_iter().map(median).collect();
    println!(
        "  {:<12} {:>12} {:>9} {:>9} {:>9} {:>9}",
        "input", "bytes", "wall s", "x plain", "CPU s", "x plain"
    );
    for (i, (label, _, bytes)) in setups.iter().enumerate() {
        println!(
            "  {label:<12} {bytes:>12} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            wall[i],
            wall[i] / wall[0],
            cpu[i],
            cpu[i] / cpu[0]
        );
    }

    // Peak memory on a large object: the deals of M MB, zstd-compressed, solved whole.
    let Some(s3) = &s3 else { return };
    let per_deal = plain.len() as f64 / deals as f64;
    let large_deals = ((large_mb as f64 * 1e6) / per_deal).ceil() as usize;
    let small = dir.join("small.in");
    std::fs::write(&small, generate((large_deals / 100).max(1))).expect("write");
    let large = generate(large_deals);
    let large_zst = dir.join("large.in.zst");
    std::fs::write(&large_zst, zstd(&large)).expect("write");
    let zst_bytes = std::fs::metadata(&large_zst).map_or(0, |m| m.len());
    drop(large);
    s3.put_file("deals", "large.in.zst", &large_zst);
    let _ = std::fs::remove_file(&large_zst);
    let solve = |input: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_patience"));
        cmd.args(["solve", "--workers", "2", input])
            .envs(env.iter().copied());
        let (elapsed, peak_kib, output) = run_measured(&mut cmd);
        (
            elapsed,
            peak_kib,
            output.iter().filter(|&&b| b == b'\n').count(),
        )
    };
    println!("peak RSS of `patience solve --workers 2` reading a whole input:");
    for (label, input) in [
        (
            format!("local plain file, {} deals", large_deals / 100),
            small.display().to_string(),
        ),
        (
            format!("s3 zstd object, {large_deals} deals ({large_mb} MB plain, {zst_bytes} bytes)"),
            "s3://deals/large.in.zst".to_string(),
        ),
    ] {
        let (elapsed, peak_kib, lines) = solve(&input);
        println!(
            "  {label}: {:.1} MiB peak, {lines} answers in {:.1} s",
            peak_kib as f64 / 1024.0,
            elapsed.as_secs_f64()
        );
    }
}
