//! Jobs the daemon runs (`serve --jobs-dir`), through the binaries: `patience jobs` (gRPC), the
//! HTTP API's `/v1/jobs` (curl), a daemon killed with SIGKILL mid-job and started again, a
//! cancel and a resubmission, the refusals, the metrics, and a job from a zstd object to an object
//! of a real S3-compatible server (moto).
//!
//! A job's output must be byte for byte what `patience solve` prints for the same inputs; its
//! first input is a corpus file whose answers come from the reference solver's output.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::{Daemon, Output, S3Server, Scratch, data, fed_fifo, patience, text};

/// Deals of the generated part of the inputs: enough that the job runs for a few seconds on two
/// workers, so that it is seen running and killed or cancelled mid-way.
const DEALS: &str = "300000";

/// A jobs folder with `in/a.in` (the corpus' 1,000 random deals) and `in/b.in` (generated).
fn jobs_dir(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    std::fs::create_dir_all(scratch.join("in")).unwrap();
    std::fs::copy(data("random1000.in"), scratch.join("in/a.in")).unwrap();
    std::fs::write(scratch.join("in/b.in"), &inputs().generated).unwrap();
    scratch
}

/// What `patience solve` prints for a jobs folder's two inputs.
fn solved() -> &'static str {
    &inputs().solved
}

/// The generated input and what `patience solve` prints for the two: the same in every test
/// (one seed), so made once per run of the harness, where each test made its own (generating and
/// solving 301,000 deals is seconds of CPU, and the tests share two cores).
struct Inputs {
    generated: String,
    solved: String,
}

fn inputs() -> &'static Inputs {
    static INPUTS: OnceLock<Inputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        let generated = patience()
            .args(&["gen", "--count", DEALS, "--seed", "2027"])
            .output();
        assert_eq!(generated.code(), Some(0));
        let scratch = Scratch::new("jobs-inputs");
        let b = scratch.write("b.in", generated.stdout_str());
        let out = patience()
            .arg("solve")
            .arg(data("random1000.in"))
            .arg(&b)
            .output();
        assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
        // The corpus part is checked against the reference solver's answers.
        let reference = text("random1000.out6");
        assert!(
            out.stdout_str().starts_with(&reference),
            "solve does not begin with the reference's answers"
        );
        Inputs {
            generated: generated.stdout_str().to_string(),
            solved: out.stdout_str().to_string(),
        }
    })
}

fn jobs(daemon: &Daemon, args: &[&str]) -> Output {
    patience()
        .args(&["jobs", "--addr", &daemon.addr])
        .args(args)
        .output()
}

/// `patience jobs get ID`'s line, and the items it says are done.
fn get(daemon: &Daemon, id: &str) -> (String, u64) {
    let out = jobs(daemon, &["get", id]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    let line = out.stdout_str().trim().to_string();
    let items = line
        .split_once(": ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (line, items)
}

/// Waits until job `id` is running and has answered some items (but not all): an event.
fn running_mid_way(daemon: &Daemon, id: &str) {
    let seen = crate::common::wait::poll_blocking(Duration::from_secs(60), || {
        let (line, items) = get(daemon, id);
        assert!(
            !line.contains("succeeded"),
            "the job ended before it could be stopped mid-way: {line}"
        );
        (line.contains("running") && items > 2_000).then_some(())
    });
    assert!(seen.is_some(), "job {id} never ran");
}

#[test]
fn a_job_killed_with_its_daemon_resumes_at_the_next_start_and_writes_what_solve_prints() {
    let dir = jobs_dir("jobs-kill");
    let expected = solved();
    let folder = dir.path().display().to_string();
    let mut daemon = Daemon::start(&["--workers", "2", "--jobs-dir", &folder]);
    let submitted = jobs(
        &daemon,
        &[
            "submit",
            "in/a.in",
            "in/b.in",
            "-o",
            "out/all.txt",
            "--id",
            "k1",
            "--detach",
        ],
    );
    assert_eq!(submitted.code(), Some(0), "{}", submitted.stderr_str());
    assert!(
        submitted.stdout_str().starts_with("k1 "),
        "{}",
        submitted.stdout_str()
    );
    running_mid_way(&daemon, "k1");
    // Killed once the output holds some 10,000 answers (written in whole lines as they come).
    let written = crate::common::wait::poll_blocking(Duration::from_secs(60), || {
        let len = std::fs::metadata(dir.join("out/all.txt")).map_or(0, |m| m.len());
        (len >= 90_000).then_some(len)
    });
    assert!(
        written.is_some(),
        "the output never grew: {:?}",
        get(&daemon, "k1")
    );
    daemon.kill();
    let record = std::fs::read_to_string(dir.join(".patience-jobs/k1.json")).unwrap();
    assert!(record.contains("\"state\":\"running\""), "{record}");
    assert!(!dir.join("out/all.txt.done.json").exists());
    // The output's run record names the inputs within the folder, not by where it was.
    let run = std::fs::read_to_string(dir.join("out/all.txt.resume.json")).unwrap();
    assert!(
        run.contains(r#""inputs":["in/a.in","in/b.in"]"#) && !run.contains(&folder),
        "{run}"
    );

    // The folder mounted elsewhere (a volume attached again at another path): its job resumes
    // there.
    let moved = Scratch::new("jobs-kill-moved");
    std::fs::remove_dir(moved.path()).unwrap();
    std::fs::rename(dir.path(), moved.path()).unwrap();
    let dir = moved;
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "2", "--jobs-dir", &folder]);
    daemon.logged(
        "taking up the jobs a last run left unfinished",
        Duration::from_secs(10),
    );
    let watched = jobs(&daemon, &["watch", "k1"]);
    assert_eq!(watched.code(), Some(0), "{}", watched.stderr_str());
    assert_eq!(
        watched.stdout_str().trim(),
        "k1 succeeded: 301000 items, 0 bad -> out/all.txt"
    );
    assert!(
        std::fs::read_to_string(dir.join("out/all.txt")).unwrap() == expected,
        "the resumed job's output is not what solve prints"
    );
    // The second run went on from the first's answers, not from nothing.
    let ended = daemon.logged("job ended", Duration::from_secs(10));
    let resumed: u64 = crate::common::log_field(&ended, "resumed")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(resumed >= 10_000, "{ended}");
    // Ended, the job still says how far through its inputs it went: all of them.
    let sizes: u64 = ["in/a.in", "in/b.in"]
        .iter()
        .map(|name| std::fs::metadata(dir.join(name)).unwrap().len())
        .sum();
    let got = Command::new("curl")
        .args(["-s", &format!("{}/v1/jobs/k1", daemon.addr)])
        .output()
        .unwrap();
    let job: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(job["bytes_done"], sizes, "{job}");
}

/// A job whose input cannot be read through says why in the input's own words, as `solve` would
/// (here a file that stops being text), not only an exit status.
#[test]
fn a_job_that_fails_on_its_input_says_why_in_its_words() {
    let dir = Scratch::new("jobs-unreadable");
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let mut bytes = std::fs::read(data("sample.in")).unwrap();
    bytes.extend_from_slice(b"AS 9S\0 6C KS\n");
    std::fs::write(dir.join("in/bad.in"), &bytes).unwrap();
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "1", "--jobs-dir", &folder]);
    let submitted = jobs(
        &daemon,
        &["submit", "in/bad.in", "-o", "out/bad.txt", "--id", "u1"],
    );
    assert_eq!(submitted.code(), Some(2), "{}", submitted.stderr_str());
    let (line, _) = get(&daemon, "u1");
    assert!(line.contains("failed"), "{line}");
    let solve = patience().arg("solve").arg(dir.join("in/bad.in")).output();
    let said = solve
        .stderr_str()
        .lines()
        .find_map(|l| l.strip_prefix("patience: "))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        said.contains("line 10 is not text (a NUL byte at byte 6)"),
        "{said}"
    );
    let got = Command::new("curl")
        .args(["-s", &format!("{}/v1/jobs/u1", daemon.addr)])
        .output()
        .unwrap();
    let job: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    // The input named as the spec names it, within the folder, and then `solve`'s words.
    let shown = dir.join("in/bad.in").display().to_string();
    assert_eq!(
        job["error"],
        said.replacen(&shown, "in/bad.in", 1),
        "solve says: {said}"
    );
    assert_eq!(
        job["error"],
        "in/bad.in: line 10 is not text (a NUL byte at byte 6): not a file of deals or cases"
    );
}

/// A job is cancelled mid-way whatever the machine's speed: its second input is a FIFO that the
/// test feeds only its first 100,000 deals until the cancel is seen, so the job cannot finish
/// before it; the cancel is waited for as an event (the limit only catches a hang). The same spec
/// submitted again (the FIFO fed whole this time) goes on from the answers written.
#[test]
fn a_cancelled_job_stops_mid_way_and_goes_on_when_submitted_again() {
    let dir = jobs_dir("jobs-cancel");
    let expected = solved();
    let generated = inputs().generated.as_bytes();
    // Whole deals: nine lines of 12 bytes each in the judge's layout, as `gen` writes them.
    let first = &generated[..100_000 * 108];
    std::fs::remove_file(dir.join("in/b.in")).unwrap();
    let (hold, held) = std::sync::mpsc::channel();
    let writer = fed_fifo(&dir.join("in/b.in"), first.to_vec(), held);
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&[
        "--workers",
        "2",
        "--jobs-dir",
        &folder,
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let spec = ["in/a.in", "in/b.in", "-o", "out/c.txt", "--id", "c1"];
    let detached = jobs(&daemon, &[&["submit"][..], &spec, &["--detach"]].concat());
    assert_eq!(detached.code(), Some(0), "{}", detached.stderr_str());
    running_mid_way(&daemon, "c1");
    let cancelled = jobs(&daemon, &["cancel", "c1"]);
    assert_eq!(cancelled.code(), Some(0), "{}", cancelled.stderr_str());
    let stopped = crate::common::wait::poll_blocking(crate::common::HANG_LIMIT, || {
        let (line, items) = get(&daemon, "c1");
        line.contains("cancelled").then_some(items)
    });
    let items = stopped.expect("the job was not cancelled");
    assert!(items <= 101_000, "{items}");
    drop(hold);
    writer.join().unwrap();
    // Left as it stands: whole lines, a prefix of the answers, and no completion.
    let partial = std::fs::read_to_string(dir.join("out/c.txt")).unwrap();
    assert!(
        expected.starts_with(&partial),
        "not a prefix of the answers"
    );
    // The whole input this time, closed once written.
    std::fs::remove_file(dir.join("in/b.in")).unwrap();
    let (hold, held) = std::sync::mpsc::channel();
    drop(hold);
    let writer = fed_fifo(&dir.join("in/b.in"), generated.to_vec(), held);

    // The same id with another spec is refused; with the same spec the job goes on.
    let other = jobs(
        &daemon,
        &["submit", "in/a.in", "-o", "out/c.txt", "--id", "c1"],
    );
    assert_eq!(other.code(), Some(2));
    assert!(
        other
            .stderr_str()
            .contains("job c1 exists, with another spec"),
        "{}",
        other.stderr_str()
    );
    let again = jobs(&daemon, &[&["submit"][..], &spec].concat());
    assert_eq!(again.code(), Some(0), "{}", again.stderr_str());
    assert_eq!(
        again.stdout_str().trim(),
        "c1 succeeded: 301000 items, 0 bad -> out/c.txt"
    );
    assert!(
        std::fs::read_to_string(dir.join("out/c.txt")).unwrap() == expected,
        "the resubmitted job's output is not what solve prints"
    );
    writer.join().unwrap();

    let scrape = crate::common::scrape(&daemon.metrics_addr());
    assert_eq!(
        crate::common::metric(
            &scrape,
            "patience_jobs{tenant=\"default\",state=\"succeeded\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        crate::common::metric(
            &scrape,
            "patience_jobs{tenant=\"default\",state=\"running\"}"
        ),
        Some(0.0)
    );
    let items = crate::common::metric(&scrape, "patience_job_items_total{tenant=\"default\"}")
        .unwrap_or(0.0);
    assert!(items >= 301_000.0, "{items}");
}

#[test]
fn jobs_on_the_http_api_and_specs_refused_in_words_before_they_start() {
    let dir = Scratch::new("jobs-http");
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::copy(data("random1000.in"), dir.join("in/a.in")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "1", "--jobs-dir", &folder]);
    let url = format!("{}/v1/jobs", daemon.addr);
    let curl = |args: &[&str]| {
        let (code, _, body) = crate::common::curl(args);
        (code, body)
    };
    let post = |json: &str| curl(&["-X", "POST", "--data-binary", json, &url]);

    let (code, body) =
        post(r#"{"job_id":"h1","inputs":["in/a.in"],"output":"out/a.json","format":"json"}"#);
    assert_eq!(code, "200", "{body}");
    let job: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(job["job_id"], "h1");
    let done = crate::common::wait::poll_blocking(Duration::from_secs(30), || {
        let (_, body) = curl(&[&format!("{url}/h1")]);
        let job: serde_json::Value = serde_json::from_str(&body).unwrap();
        (job["state"] == "succeeded").then_some(job)
    })
    .expect("the job did not end");
    assert_eq!(done["items_done"], 1000);
    let json = patience()
        .args(&["solve", "--format", "json"])
        .arg(dir.join("in/a.in"))
        .output();
    assert!(std::fs::read_to_string(dir.join("out/a.json")).unwrap() == json.stdout_str());
    let (_, listed) = curl(&[&url]);
    assert!(listed.contains("\"h1\""), "{listed}");

    for (json, code, field) in [
        (
            r#"{"inputs":["../a.in"],"output":"x"}"#,
            "400",
            "spec.inputs[0]",
        ),
        (
            r#"{"inputs":["/etc/passwd"],"output":"x"}"#,
            "400",
            "spec.inputs[0]",
        ),
        (
            r#"{"inputs":["etc/passwd"],"output":"x"}"#,
            "400",
            "leads outside",
        ),
        (
            r#"{"inputs":["in/a.in"],"output":"../x"}"#,
            "400",
            "spec.output",
        ),
        (
            r#"{"inputs":["in/a.in"],"output":"in/a.in"}"#,
            "400",
            "also an input",
        ),
        (
            r#"{"inputs":["in/missing.in"],"output":"x"}"#,
            "400",
            "cannot read in/missing.in",
        ),
        (r#"{"inputs":[],"output":"x"}"#, "400", "spec.inputs"),
        (
            r#"{"inputs":["in/a.in"],"output":"x","shard":"3/3"}"#,
            "400",
            "spec.shard",
        ),
        (r#"{"inputs":["in/a.in"]}"#, "400", "not a job's JSON"),
    ] {
        let (got, body) = post(json);
        assert_eq!(got, code, "{json}: {body}");
        assert!(body.contains(field), "{json}: {body}");
    }
    let reason = Command::new("curl")
        .args([
            "-s",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-X",
            "POST",
            "--data-binary",
        ])
        .arg(r#"{"inputs":["in/missing.in"],"output":"x"}"#)
        .arg(&url)
        .output()
        .unwrap();
    let head = String::from_utf8(reason.stdout)
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        head.contains("x-patience-reason: job_precondition"),
        "{head}"
    );
    let (code, body) = curl(&[&format!("{url}/nope")]);
    assert_eq!(
        (code.as_str(), body.contains("no job")),
        ("404", true),
        "{body}"
    );
    // A refused spec left no job behind.
    let (_, listed) = curl(&[&url]);
    assert_eq!(listed.matches("\"job_id\"").count(), 1, "{listed}");

    // Over gRPC, the same refusal with its code.
    let refused = jobs(&daemon, &["submit", "../a.in", "-o", "x"]);
    assert_eq!(refused.code(), Some(2));
    assert!(
        refused.stderr_str().contains("spec.inputs[0]"),
        "{}",
        refused.stderr_str()
    );
}

#[test]
fn a_job_reads_a_zstd_object_and_writes_an_object_of_a_real_s3_server() {
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("jobs");
    let dir = jobs_dir("jobs-s3");
    let expected = solved();
    let both = [
        std::fs::read(dir.join("in/a.in")).unwrap(),
        std::fs::read(dir.join("in/b.in")).unwrap(),
    ]
    .concat();
    let packed = dir.write("all.in.zst", zstd::encode_all(both.as_slice(), 3).unwrap());
    s3.put_file("jobs", "in/all.in.zst", Path::new(&packed));
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start_with(
        &["--workers", "2", "--jobs-dir", &folder],
        &[&[("RUST_LOG", "info")][..], &s3.vars()].concat(),
        None,
    );
    let watched = jobs(
        &daemon,
        &[
            "submit",
            "s3://jobs/in/all.in.zst",
            "-o",
            "s3://jobs/out/answers.txt",
            "--id",
            "s1",
        ],
    );
    assert_eq!(watched.code(), Some(0), "{}", watched.stderr_str());
    let got = s3
        .get("jobs", "out/answers.txt")
        .expect("the output object");
    assert!(
        got == expected.as_bytes(),
        "the object is not what solve prints"
    );
    // An object that is not there is refused before the job starts.
    let missing = jobs(
        &daemon,
        &["submit", "s3://jobs/in/none.in", "-o", "s3://jobs/x"],
    );
    assert_eq!(missing.code(), Some(2));
    assert!(
        missing.stderr_str().contains("no such key"),
        "{}",
        missing.stderr_str()
    );
}

/// The README's jobs example, against a daemon whose jobs' folder holds what it names.
#[test]
fn the_readme_jobs_example_prints_what_it_shows() {
    let dir = Scratch::new("jobs-readme");
    std::fs::copy(data("random1000.in"), dir.join("deals.in")).unwrap();
    std::fs::copy(data("random1000.out6"), dir.join("random1000.out6")).unwrap();
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "2", "--jobs-dir", &folder]);
    crate::common::doc_examples("README.md", "## Jobs the daemon runs")
        .at_least(2)
        .rewrite("http://127.0.0.1:50051", &daemon.addr)
        .in_dir(dir.path())
        .run();
}

/// The token guards the jobs as it guards solving: over gRPC and over HTTP.
#[test]
fn the_token_guards_the_jobs() {
    let dir = Scratch::new("jobs-token");
    let token = dir.write("token", "s3cret\n");
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&[
        "--workers",
        "1",
        "--jobs-dir",
        &folder,
        "--auth-token-file",
        &token,
    ]);
    let without = jobs(&daemon, &["list"]);
    assert_eq!(without.code(), Some(2));
    assert!(
        without.stderr_str().contains("authorization"),
        "{}",
        without.stderr_str()
    );
    let with = jobs(&daemon, &["--auth-token-file", &token, "list"]);
    assert_eq!(with.code(), Some(0), "{}", with.stderr_str());
    let http = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("{}/v1/jobs", daemon.addr))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&http.stdout), "401");
}

/// A store that stops answering mid-job fails the job, with the reason kept in its state.
#[test]
fn a_storage_fault_mid_job_fails_it_with_the_reason() {
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("jobs");
    let dir = jobs_dir("jobs-fault");
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start_with(
        &[
            "--workers",
            "2",
            "--jobs-dir",
            &folder,
            "--storage-retry-timeout",
            "2s",
        ],
        &[
            &[
                ("RUST_LOG", "info"),
                ("PATIENCE_UPLOAD_PART_SIZE", "5242880"),
            ][..],
            &s3.vars(),
        ]
        .concat(),
        None,
    );
    let detached = jobs(
        &daemon,
        &[
            "submit",
            "in/a.in",
            "in/b.in",
            "-o",
            "s3://jobs/out.txt",
            "--id",
            "f1",
            "--detach",
        ],
    );
    assert_eq!(detached.code(), Some(0), "{}", detached.stderr_str());
    running_mid_way(&daemon, "f1");
    drop(s3);
    let watched = jobs(&daemon, &["watch", "f1"]);
    assert_eq!(watched.code(), Some(2), "{}", watched.stdout_str());
    let line = watched.stdout_str();
    assert!(line.starts_with("f1 failed: "), "{line}");
    assert!(line.contains("the store did not answer"), "{line}");
}

/// A daemon without `--jobs-dir` serves JobService (reflection lists it) and says in words that
/// it runs no jobs.
#[test]
fn a_daemon_without_a_jobs_folder_says_it_runs_no_jobs() {
    let daemon = Daemon::start(&["--workers", "1"]);
    let listed = jobs(&daemon, &["list"]);
    assert_eq!(listed.code(), Some(2));
    assert!(
        listed
            .stderr_str()
            .contains("this daemon runs no jobs: start it with --jobs-dir"),
        "{}",
        listed.stderr_str()
    );
    let http = Command::new("curl")
        .args(["-s", "-D", "-", "-o", "/dev/null"])
        .arg(format!("{}/v1/jobs", daemon.addr))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&http.stdout).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 400"), "{head}");
    assert!(
        head.contains("x-patience-reason: job_precondition"),
        "{head}"
    );
}

/// Links made inside the folder after a job was created lead none of its reads or writes out:
/// while a first job holds the daemon's one slot (its input a FIFO held open), the places of
/// three queued jobs are swapped for links to a folder outside. Two are files no check of the
/// spec looks at, which a run opens by name: an output's lock (`NAME.lock`, made if missing) and
/// the temporary its run record is written through (`NAME.resume.json.tmp`); those runs fail,
/// saying a link leads outside the daemon's `--jobs-dir`. The third is the folder an output is in, which
/// the run's own check of its spec refuses. The outside folder is as it was, byte for byte,
/// nothing added.
#[test]
fn links_swapped_in_after_the_create_lead_nowhere_outside() {
    let dir = jobs_dir("jobs-links");
    let outside = Scratch::new("jobs-links-outside");
    let secret = outside.write("secret.txt", "kept\n");
    let before = listing(outside.path());
    std::fs::remove_file(dir.join("in/b.in")).unwrap();
    let (hold, held) = std::sync::mpsc::channel();
    let first = inputs().generated.as_bytes()[..108 * 5000].to_vec();
    let writer = fed_fifo(&dir.join("in/b.in"), first, held);
    let folder = dir.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "1", "--max-jobs", "1", "--jobs-dir", &folder]);
    let submit = |args: &[&str]| {
        let out = jobs(&daemon, &[&["submit"][..], args, &["--detach"]].concat());
        assert_eq!(out.code(), Some(0), "{args:?}: {}", out.stderr_str());
    };
    submit(&["in/b.in", "-o", "out/hold.txt", "--id", "hold"]);
    let running = crate::common::wait::poll_blocking(crate::common::HANG_LIMIT, || {
        get(&daemon, "hold").0.contains("running").then_some(())
    });
    assert!(running.is_some(), "the first job never ran");
    submit(&["in/a.in", "-o", "out/w.txt", "--id", "w"]);
    submit(&["in/a.in", "-o", "out/r.txt", "--id", "r"]);
    submit(&["in/a.in", "-o", "sub/d.txt", "--id", "d"]);
    for id in ["w", "r", "d"] {
        let (line, _) = get(&daemon, id);
        assert!(line.contains("queued"), "{line}");
    }
    // The swaps, each after its job's create.
    let link = |to: &Path, at: &str| std::os::unix::fs::symlink(to, dir.join(at)).unwrap();
    link(&outside.join("made.lock"), "out/w.txt.lock");
    link(Path::new(&secret), "out/r.txt.resume.json.tmp");
    std::fs::remove_dir(dir.join("sub")).unwrap();
    link(outside.path(), "sub");
    drop(hold);
    writer.join().unwrap();
    for (id, words) in [
        ("w", "a link leads outside the daemon's --jobs-dir"),
        ("r", "a link leads outside the daemon's --jobs-dir"),
        (
            "d",
            "sub leads outside the daemon's --jobs-dir (through a link)",
        ),
    ] {
        let ended = crate::common::wait::poll_blocking(crate::common::HANG_LIMIT, || {
            let (line, _) = get(&daemon, id);
            (!line.contains("queued") && !line.contains("running")).then_some(line)
        });
        let line = ended.unwrap_or_else(|| panic!("job {id} never ended"));
        assert!(line.contains("failed"), "{id}: {line}");
        let got = Command::new("curl")
            .args(["-s", &format!("{}/v1/jobs/{id}", daemon.addr)])
            .output()
            .unwrap();
        let job: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
        let error = job["error"].as_str().unwrap_or_default();
        assert!(error.contains(words), "{id}: {error}");
    }
    assert_eq!(listing(outside.path()), before);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "kept\n");
}

/// Every file under `dir`, with its bytes, in order.
fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read(&path).unwrap_or_default())
        })
        .collect();
    files.sort();
    files
}
