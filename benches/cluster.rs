//! Cluster benchmark: prints figures, asserts nothing about time.
//!
//! `cargo bench --bench cluster` (options after `--`: `--deals N --runs R --batch B
//! --delay-ms D`).
//!
//! One file of uniformly random deals (`patience gen --seed 2026`) through the real
//! `patience client --batch B` binary, over local `patience serve --workers 1` daemons:
//! - 1, 2 and 3 daemons given directly;
//! - the two near daemons alone, and with the third behind a delay proxy of D ms each way (a
//!   2D ms round trip; tests/common/delay.rs): a distant daemon should help or do nothing;
//! - the three given directly, and behind nginx and behind HAProxy, each with the shipped
//!   configuration (deploy/proxies/) and at its defaults (nginx: nothing but `grpc_pass`;
//!   HAProxy: `proto h2` and its documentation's basic timeouts), skipped when the proxy is not
//!   installed, the client given the proxy's one address.
//!
//! For each: the median deals/s of R runs, the ratio to its baseline, and each daemon's share of
//! the deals (from its metrics). Every run's output is checked byte for byte against
//! `patience solve`'s. Rounds alternate between the setups so that drift on a shared machine
//! affects them alike.
//!
//! What to expect on a 2-core machine: the daemons and the client share the two cores, so a third
//! daemon (near or distant) adds no solving power, only the chance to hurt; through a proxy the
//! proxy's CPU comes out of the solvers' too.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Daemon, DelayProxy, Flags, Proxy, ProxyKind, TempDir, deals_answered, median};

/// Seed of the deals (the engine and service benches use the same one).
const SEED: u64 = 2026;

struct Options {
    deals: usize,
    runs: usize,
    batch: usize,
    delay: Duration,
}

fn options() -> Options {
    let flags = Flags::from_env();
    Options {
        deals: flags.get("--deals", 300_000usize).max(1),
        runs: flags.get("--runs", 3usize).max(1),
        batch: flags.get("--batch", 256usize).max(1),
        delay: Duration::from_millis(flags.get("--delay-ms", 100u64)),
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

/// One way of giving the client daemons.
struct Setup {
    name: String,
    addrs: Vec<String>,
    /// The setup its ratio is to (an index into the setups).
    baseline: usize,
    rates: Vec<f64>,
    /// Each run's share of the deals answered by each of the three daemons.
    shares: Vec<[f64; 3]>,
}

fn setup(name: &str, addrs: Vec<String>, baseline: usize) -> Setup {
    Setup {
        name: name.into(),
        addrs,
        baseline,
        rates: Vec::new(),
        shares: Vec::new(),
    }
}

fn main() {
    let o = options();
    let exe = env!("CARGO_BIN_EXE_patience");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "cluster bench: {} uniformly random deals (patience gen --seed {SEED}), {} runs, \
         patience client --batch {} (its defaults otherwise), daemons with --workers 1, {cores} \
         cores here",
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

    let daemons: Vec<Daemon> = (0..3)
        .map(|_| {
            Daemon::start(&[
                "--workers",
                "1",
                "--log-format",
                "text",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
        })
        .collect();
    let urls: Vec<String> = daemons.iter().map(|d| d.addr.clone()).collect();
    let metrics: Vec<String> = daemons.iter().map(Daemon::metrics_addr).collect();
    let far = DelayProxy::start(&daemons[2].socket.to_string(), o.delay);
    let sockets: Vec<SocketAddr> = daemons.iter().map(|d| d.socket).collect();
    // Each proxy with the shipped configuration, then at its defaults.
    let mut proxies: Vec<(Proxy, &str)> = Vec::new();
    for kind in [ProxyKind::Nginx, ProxyKind::Haproxy] {
        match Proxy::binary(kind) {
            Ok(program) => {
                for (template, how) in [(kind.shipped(), "shipped"), (kind.defaults(), "defaults")]
                {
                    proxies.push((Proxy::start(kind, &program, &template, &sockets), how));
                }
            }
            Err(why) => println!("{}: skipped ({why})", kind.program()),
        }
    }

    let rtt = o.delay.as_millis() * 2;
    let mut setups = vec![
        setup("1 daemon", urls[..1].to_vec(), 0),
        setup("2 near", urls[..2].to_vec(), 0),
        setup(
            &format!("2 near + 1 at {rtt} ms"),
            vec![urls[0].clone(), urls[1].clone(), far.url()],
            1,
        ),
        setup("3 direct", urls.clone(), 0),
    ];
    let direct = setups.len() - 1;
    for (proxy, how) in &proxies {
        let name = format!("{} ({how})", proxy.kind.program());
        setups.push(setup(&name, vec![proxy.addr.clone()], direct));
    }

    let out = dir.join("client.out");
    for _ in 0..o.runs {
        for s in &mut setups {
            let before: Vec<u64> = metrics.iter().map(|m| deals_answered(m)).collect();
            let mut cmd = Command::new(exe);
            cmd.args(["client", "--batch", &o.batch.to_string()]);
            for addr in &s.addrs {
                cmd.args(["--addr", addr]);
            }
            let t = run_to_file(cmd.arg(&input), &out);
            let got = std::fs::read(&out).expect("read client output");
            assert!(
                got == expected,
                "{}: the client's output differs from patience solve's",
                s.name
            );
            s.rates.push(o.deals as f64 / t.as_secs_f64());
            let after: Vec<u64> = metrics.iter().map(|m| deals_answered(m)).collect();
            let mut share = [0.0; 3];
            for (k, share) in share.iter_mut().enumerate() {
                *share = after[k].saturating_sub(before[k]) as f64 / o.deals as f64;
            }
            s.shares.push(share);
        }
    }

    println!(
        "{:<26} {:>10} {:>10} {:>8} {:>8} {:>8}",
        "setup", "deals/s", "ratio", "d1", "d2", "d3"
    );
    let medians: Vec<f64> = setups.iter().map(|s| median(s.rates.clone())).collect();
    for (s, &m) in setups.iter().zip(&medians) {
        let base = medians[s.baseline];
        let ratio = if s.baseline == 0 && s.name == "1 daemon" {
            "1.00x".to_string()
        } else {
            format!("{:.2}x", m / base)
        };
        let share = |k: usize| median(s.shares.iter().map(|sh| sh[k]).collect());
        println!(
            "{:<26} {:>10.0} {:>10} {:>7.1}% {:>7.1}% {:>7.1}%",
            s.name,
            m,
            ratio,
            100.0 * share(0),
            100.0 * share(1),
            100.0 * share(2)
        );
    }
    println!(
        "ratios: the daemons to 1 daemon; the distant setup to 2 near (its time is 1/ratio of \
         theirs); each proxy to 3 direct. Shares: medians over the runs, of the deals each \
         daemon answered (d3 is the distant one in the distant setup)."
    );
    println!("every run's output was byte-identical to patience solve's");
    drop(proxies);
    for mut daemon in daemons {
        let (_, status) = daemon.stop();
        assert!(status.success(), "a daemon exited with {status}");
    }
}
