//! Shards benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench shards` (options after `--`: `--deals N`).
//!
//! One file of uniformly random deals (`patience gen --seed 2026`), answered by the real binary:
//! - `patience solve --workers 1`, one run, against the same split into N = 2, 4 and 8 shards
//!   (`--shard K/N --output part-K`, one after the other): the CPU (user + system) of the whole
//!   run and of the shards added up, their ratio, the wall time of the run and of the slowest
//!   shard (what N machines would take), and each shard's input bytes (framed up to its range,
//!   read within it: the end of its range, from its completion record);
//! - `patience client` through a local `patience serve --workers 1`: the client's CPU per deal,
//!   one run and 8 shards added up.
//!
//! Every sharded output is checked byte for byte against the whole run's.
//!
//! A process's CPU is read from the `sh` that waited for it (`/proc/$$/stat`'s cutime and
//! cstime), so it is the whole process's, from its start to its exit.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{Flags, TempDir, cpu_measured, generated_deals, start_daemon};

/// Seed of the deals (the other benches use the same one).
const SEED: u64 = 2026;

/// The end of a part's range, from its completion record: the input bytes its shard read.
fn bytes_read(part: &Path) -> u64 {
    let mut record = part.as_os_str().to_owned();
    record.push(".done.json");
    let text = std::fs::read_to_string(&record).expect("a completion record");
    let at = text.find("\"end\":").expect("a range end") + 6;
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a number")
}

fn main() {
    let deals = Flags::from_env().get("--deals", 400_000usize).max(1);
    let dir = TempDir::new("shards");
    let input = generated_deals(&dir, deals, SEED);
    let size = std::fs::metadata(&input).expect("the deals").len();
    println!("{deals} deals, {size} bytes, `patience solve --workers 1`:");

    let whole_out = dir.join("whole.out");
    let (wall, cpu) = cpu_measured(&["solve", "--workers", "1", &input], &[], &whole_out);
    let whole = std::fs::read(&whole_out).expect("the whole run's output");
    println!(
        "  one run:   CPU {cpu:6.2} s, wall {:6.2} s",
        wall.as_secs_f64()
    );
    for n in [2usize, 4, 8] {
        let (mut cpu_sum, mut slowest, mut joined) = (0.0, Duration::ZERO, Vec::new());
        let mut read = Vec::new();
        for k in 0..n {
            let part = dir.join(&format!("part-{k}-of-{n}"));
            let shard = format!("{k}/{n}");
            let part_name = part.display().to_string();
            let args = [
                "solve",
                "--workers",
                "1",
                "--shard",
                &shard,
                "--output",
                &part_name,
                &input,
            ];
            let (wall, cpu) = cpu_measured(&args, &[], &dir.join("stdout"));
            cpu_sum += cpu;
            slowest = slowest.max(wall);
            read.push(bytes_read(&part));
            joined.extend(std::fs::read(&part).expect("a part"));
        }
        assert!(
            joined == whole,
            "{n} shards joined differ from the whole run"
        );
        let read: Vec<String> = read
            .iter()
            .map(|b| format!("{:.0}%", *b as f64 * 100.0 / size as f64))
            .collect();
        println!(
            "  {n} shards: CPU {cpu_sum:6.2} s in all ({:.3}x one run), slowest shard's wall \
             {:6.2} s; input read by each (of {size} bytes): {}",
            cpu_sum / cpu,
            slowest.as_secs_f64(),
            read.join(" ")
        );
    }

    let daemon = start_daemon(1);
    println!("`patience client` through one local `patience serve --workers 1`:");
    let (_, cpu) = cpu_measured(&["client", "--addr", &daemon.addr, &input], &[], &whole_out);
    assert!(
        std::fs::read(&whole_out).expect("output") == whole,
        "the client differs from solve"
    );
    println!(
        "  one run:   client CPU {cpu:6.2} s, {:.2} us per deal",
        cpu * 1e6 / deals as f64
    );
    let mut cpu_sum = 0.0;
    let mut joined = Vec::new();
    for k in 0..8 {
        let shard = format!("{k}/8");
        let out = dir.join("client.out");
        let (_, cpu) = cpu_measured(
            &["client", "--addr", &daemon.addr, "--shard", &shard, &input],
            &[],
            &out,
        );
        cpu_sum += cpu;
        joined.extend(std::fs::read(&out).expect("output"));
    }
    assert!(joined == whole, "8 client shards joined differ from solve");
    println!(
        "  8 shards:  client CPU {cpu_sum:6.2} s in all, {:.2} us per deal",
        cpu_sum * 1e6 / deals as f64
    );
}
