//! The monitoring shipped in `deploy/monitoring` and the manifests, checked: the rules with
//! promtool (syntax and their unit tests), the dashboard's queries against the rules, the
//! Operator's copy of the rules, the pinned image, and a real Prometheus scraping a daemon under
//! load with the shipped configuration, read back through its HTTP API.
//!
//! promtool and prometheus come from Debian's `prometheus` package. `PATIENCE_PROMETHEUS` names
//! the directory that holds both (CI sets it, and they must then be there); without it they are
//! looked for on the PATH, and the tests that need them are skipped, saying so, when they are not.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common;

use common::{Daemon, Scratch, data, patience, wait_for_blocking};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The Prometheus tool `name` (`promtool`, `prometheus`), or `None` (with a note) where it is not
/// installed and `PATIENCE_PROMETHEUS` does not ask for it.
fn tool(name: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PATIENCE_PROMETHEUS") {
        let path = Path::new(&dir).join(name);
        assert!(
            path.is_file(),
            "PATIENCE_PROMETHEUS asks for {}, which is not there",
            path.display()
        );
        return Some(path);
    }
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(name))
        .find(|path| path.is_file());
    if found.is_none() {
        eprintln!(
            "note: skipping what needs {name}: it is not installed; install Debian's prometheus \
             package (.ci/run unpacks it under target/tools/) or set PATIENCE_PROMETHEUS to the \
             directory that holds it"
        );
    }
    found
}

/// The address in Prometheus's `msg="Listening on" address=HOST:PORT` line (the one of the
/// socket it bound, where the line before, "Start listening for connections", has the flag's).
fn listening_on(log: &str) -> Option<String> {
    log.lines()
        .find(|l| l.contains("msg=\"Listening on\""))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("address="))
        .map(str::to_string)
}

/// Runs a promtool command in `deploy/monitoring`; panics with its output unless it succeeds.
fn promtool(promtool: &Path, args: &[&str]) -> String {
    let out = Command::new(promtool)
        .args(args)
        .current_dir(root().join("deploy/monitoring"))
        .output()
        .expect("run promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

/// The rules are valid, their unit tests (`rules.test.yaml`) pass, and the shipped configuration
/// loads them.
#[test]
fn the_rules_pass_promtool_and_their_unit_tests() {
    let Some(promtool_bin) = tool("promtool") else {
        return;
    };
    let checked = promtool(&promtool_bin, &["check", "rules", "rules.yaml"]);
    assert!(checked.contains("SUCCESS: 24 rules found"), "{checked}");
    let tested = promtool(&promtool_bin, &["test", "rules", "rules.test.yaml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
    promtool(&promtool_bin, &["check", "config", "prometheus.yml"]);
}

/// `record:` names and `expr:` expressions of a rule file, as written on their one line each
/// (tests/autoscaling.rs reads KEDA's query against them too).
pub(crate) fn rule_lines(rules: &str, key: &str) -> Vec<String> {
    rules
        .lines()
        .filter_map(|line| line.trim().trim_start_matches("- ").strip_prefix(key))
        .map(|value| {
            value
                .trim()
                .trim_matches('\'')
                .trim_matches('"')
                .to_string()
        })
        .collect()
}

/// Every query of the Grafana dashboard is one of the rules' expressions or recorded series, so
/// promtool has checked it; the main ones (answers, calls by code, latency, memory) are there.
#[test]
fn every_dashboard_query_is_a_checked_rule() {
    let rules = read("deploy/monitoring/rules.yaml");
    let records = rule_lines(&rules, "record:");
    let exprs = rule_lines(&rules, "expr:");
    assert_eq!(records.len(), 16, "{records:?}");
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/monitoring/dashboard.json")).unwrap();
    let queries: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|panel| {
            let targets = panel["targets"].as_array().expect("a panel's targets");
            assert!(!targets.is_empty(), "{}", panel["title"]);
            targets
                .iter()
                .map(|t| t["expr"].as_str().unwrap().to_string())
        })
        .collect();
    for query in &queries {
        assert!(
            records.contains(query) || exprs.contains(query),
            "the dashboard's query {query:?} is no rule of rules.yaml"
        );
    }
    for main in [
        "patience:answers:rate5m",
        "patience:grpc_server_handled:rate5m",
        "patience:grpc_server_handling_seconds:p99_rate5m",
        "patience:memory_bound:ratio",
        "patience:http_server_requests:rate5m",
        "patience:jobs_work_seconds:sum",
    ] {
        assert!(queries.iter().any(|q| q == main), "{main} is not drawn");
    }
}

/// The groups of `rules.yaml`, as `prometheusrule.yaml` must hold them: indented under `spec`.
fn operator_groups(rules: &str) -> String {
    let from = rules.find("\ngroups:").expect("a groups key") + 1;
    rules[from..]
        .lines()
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("  {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Prometheus Operator's PrometheusRule holds exactly the groups of `rules.yaml`, which
/// promtool checks and tests.
#[test]
fn the_operators_rules_are_the_tested_ones() {
    let groups = operator_groups(&read("deploy/monitoring/rules.yaml"));
    let operator = read("deploy/monitoring/prometheusrule.yaml");
    let (head, spec) = operator.split_once("\nspec:\n").expect("a spec");
    assert!(head.contains("kind: PrometheusRule"), "{head}");
    assert_eq!(
        spec.trim_end(),
        groups.trim_end(),
        "prometheusrule.yaml's spec must be rules.yaml's groups; copy them"
    );
}

/// The image is pinned by the crate's version, in the daemons' Deployment, the batch Job and
/// both kustomizations, and nothing deploys `latest`.
#[test]
fn the_manifests_pin_the_image_to_this_version() {
    let version = env!("CARGO_PKG_VERSION");
    for manifest in [
        "deploy/kubernetes/deployment.yaml",
        "deploy/kubernetes/job/job.yaml",
    ] {
        let text = read(manifest);
        assert!(
            text.contains(&format!("image: patience:{version}\n")),
            "{manifest}: {text}"
        );
    }
    for kustomization in [
        "deploy/kubernetes/kustomization.yaml",
        "deploy/kubernetes/job/kustomization.yaml",
    ] {
        let text = read(kustomization);
        assert!(
            text.contains(&format!("newTag: \"{version}\"")),
            "{kustomization}: {text}"
        );
    }
    for file in [
        "deploy/kubernetes/deployment.yaml",
        "deploy/kubernetes/kustomization.yaml",
        "deploy/kubernetes/job/job.yaml",
        "deploy/kubernetes/job/kustomization.yaml",
        "deploy/README.md",
        "docs/deploying.md",
        "docs/long-jobs.md",
    ] {
        assert!(!read(file).contains(":latest"), "{file} names :latest");
    }
}

/// A process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` from `host:port` over HTTP/1.1: the status code and the body.
fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let mut socket = std::net::TcpStream::connect(addr)?;
    socket.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        socket,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    socket.read_to_string(&mut text)?;
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    // Prometheus answers its API in one piece or chunked; a chunked body is de-chunked here.
    let body = if text
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// `text` percent-encoded for a URL's query.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The instant vector a PromQL query gives now: each series's labels and value.
fn query(prometheus: &str, promql: &str) -> Vec<(serde_json::Value, f64)> {
    let Ok((200, body)) = get(
        prometheus,
        &format!("/api/v1/query?query={}", encoded(promql)),
    ) else {
        return Vec::new();
    };
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    answer["data"]["result"]
        .as_array()
        .map(|series| {
            series
                .iter()
                .map(|s| {
                    let value = s["value"][1].as_str().and_then(|v| v.parse().ok());
                    (s["metric"].clone(), value.unwrap_or(f64::NAN))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A real Prometheus (Debian's) runs the shipped `prometheus.yml` (its two intervals shortened to
/// a second) with the shipped rules against a daemon kept under load: streams from `patience
/// client` and `patience rps`, unary calls, health probes, a probe for a service it does not
/// serve, plain HTTP requests for a path it does not serve. Through Prometheus's HTTP API: the
/// target is up, every rule evaluates without error, and the dashboard's main series have data:
/// the rate of deals, calls by code (OK and NotFound), latency quantiles of unary calls and
/// streams, solve time, memory and its bound, HTTP requests by route and status (404), and the
/// jobs' work left (0: the daemon has no --jobs-dir) that KEDA's query reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_reads_the_daemon_with_the_shipped_configuration() {
    let Some(prometheus_bin) = tool("prometheus") else {
        return;
    };
    let daemon = Daemon::start(&["--workers", "2", "--metrics-addr", "127.0.0.1:0"]);
    let scratch = Scratch::new("prometheus");
    let shipped = read("deploy/monitoring/prometheus.yml");
    let config = shipped
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("evaluation_interval: 15s", "evaluation_interval: 1s");
    assert_eq!(
        config.matches(": 1s").count(),
        2,
        "prometheus.yml no longer sets both intervals to 15s:\n{shipped}"
    );
    scratch.write("prometheus.yml", config);
    scratch.write("rules.yaml", read("deploy/monitoring/rules.yaml"));
    std::fs::create_dir_all(scratch.join("targets")).unwrap();
    scratch.write(
        "targets/patience.yml",
        format!("- targets: [\"{}\"]\n", daemon.metrics_addr()),
    );
    let log = std::fs::File::create(scratch.join("prometheus.log")).unwrap();
    let _prometheus = Killed(
        Command::new(&prometheus_bin)
            .arg(format!(
                "--config.file={}",
                scratch.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                scratch.join("data").display()
            ))
            // Port 0; the log says which port it got.
            .arg("--web.listen-address=127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let web = wait_for_blocking(
        Duration::from_secs(60),
        "Prometheus logs the address it listens on",
        || listening_on(&std::fs::read_to_string(scratch.join("prometheus.log")).ok()?),
    );

    // Load, until the checks are done (at most 500 runs): streams of both games and probes.
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, addr) = (stop.clone(), daemon.addr.clone());
        std::thread::spawn(move || {
            for _ in 0..500 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let client = patience()
                    .args(&["client", "--addr", &addr, &data("random1000.in")])
                    .output();
                assert!(client.status.success(), "{client:?}");
                let rps = patience()
                    .args(&["rps", "--addr", &addr, &data("rps-sample.in")])
                    .output();
                assert!(rps.status.success(), "{rps:?}");
                patience().args(&["health", "--addr", &addr]).output();
                patience()
                    .args(&["health", "--addr", &addr, "--service", "nothing.v1.Here"])
                    .output();
            }
        })
    };
    let (deals, _) = common::corpus("sample");
    let mut unary = daemon.client().await;

    /// A query, and what its answer must be.
    type Check = (&'static str, fn(&[(serde_json::Value, f64)]) -> bool);
    let checks: [Check; 13] = [
        ("up{job=\"patience\"}", |r| r.len() == 1 && r[0].1 == 1.0),
        ("patience:up:sum", |r| r.len() == 1 && r[0].1 == 1.0),
        (
            "patience:answers:rate5m{game=\"double_patience\",outcome=\"solved\"}",
            |r| r.len() == 1 && r[0].1 > 0.0,
        ),
        (
            "patience:grpc_server_handled:rate5m{grpc_code=\"OK\"}",
            |r| {
                r.iter()
                    .any(|(m, v)| m["grpc_method"] == "SolveStream" && *v > 0.0)
                    && r.iter()
                        .any(|(m, v)| m["grpc_method"] == "Solve" && *v > 0.0)
            },
        ),
        (
            "patience:grpc_server_handled:rate5m{grpc_code=\"NotFound\"}",
            |r| {
                r.iter()
                    .any(|(m, v)| m["grpc_method"] == "Check" && *v > 0.0)
            },
        ),
        ("patience:grpc_server_handling_seconds:p50_rate5m", |r| {
            ["unary", "bidi_stream"]
                .iter()
                .all(|t| r.iter().any(|(m, v)| m["grpc_type"] == *t && v.is_finite()))
        }),
        ("patience:grpc_server_handling_seconds:p99_rate5m", |r| {
            ["unary", "bidi_stream"]
                .iter()
                .all(|t| r.iter().any(|(m, v)| m["grpc_type"] == *t && v.is_finite()))
        }),
        (
            "patience:solve_seconds:p99_rate5m{game=\"double_patience\"}",
            |r| r.len() == 1 && r[0].1.is_finite() && r[0].1 > 0.0,
        ),
        ("patience:resident_memory_bytes", |r| {
            r.len() == 1 && r[0].1 > 1e6
        }),
        ("patience:memory_bound:ratio", |r| {
            r.len() == 1 && r[0].1 > 0.0 && r[0].1 < 1.0
        }),
        (
            "patience:http_server_requests:rate5m{http_response_status_code=\"404\"}",
            |r| {
                r.iter()
                    .any(|(m, v)| m["http_route"] == "other" && *v > 0.0)
            },
        ),
        ("patience:workers_busy:ratio", |r| {
            r.len() == 1 && (0.0..=1.0).contains(&r[0].1)
        }),
        // A daemon without --jobs-dir has no jobs' work: 0, not absent, which KEDA would refuse.
        ("patience:jobs_work_seconds:sum", |r| {
            r.len() == 1 && r[0].1 == 0.0
        }),
    ];
    let mut missing: Vec<String> = Vec::new();
    // A round is a unary call, a plain GET and some twenty queries: every 250 ms, not every
    // `POLL`: Prometheus scrapes and evaluates its rules every second here anyway.
    let every = Duration::from_millis(250);
    common::poll_async(Duration::from_secs(120), every, async || {
        // A unary call or two per round, for the unary latency, and a plain HTTP request the
        // front answers 404.
        unary
            .solve(common::request(&deals, 0))
            .await
            .expect("a unary call");
        let (status, _) = get(&daemon.socket.to_string(), "/nothing").expect("a plain GET");
        assert_eq!(status, 404);
        missing = checks
            .iter()
            .filter_map(|(promql, ok)| {
                let result = query(&web, promql);
                (!ok(&result)).then(|| format!("{promql}: {result:?}"))
            })
            .collect();
        // Every rule evaluated, and without an error.
        let rules = get(&web, "/api/v1/rules")
            .map(|(_, body)| body)
            .unwrap_or_default();
        let rules: serde_json::Value = serde_json::from_str(&rules).unwrap_or_default();
        let all: Vec<&serde_json::Value> = rules["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().into_iter().flatten())
            .collect();
        if all.len() != 24 || all.iter().any(|r| r["health"] != "ok") {
            missing.push(format!("rules: {all:?}"));
        }
        missing.is_empty().then_some(())
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    load.join().expect("the load");
    assert!(
        missing.is_empty(),
        "within the hang guard, Prometheus did not show:\n{}\nits log:\n{}",
        missing.join("\n"),
        std::fs::read_to_string(scratch.join("prometheus.log")).unwrap_or_default()
    );
}
