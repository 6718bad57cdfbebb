//! `--shard K/N` and `patience merge`, through the binaries.
//!
//! The whole run each sharded run is compared with is itself checked against the reference
//! answers (`random1000.out6`, `rps-random120.out10`, from the seed solvers) wherever its items
//! are good, and against `error:` lines where they are bad; the shards are then held to it byte
//! for byte. Stops come at events (a part holding lines, a run saying it waits for a lock), never
//! after a sleep.

use std::fs::File;
use std::path::Path;

use crate::common::{
    Daemon, Scratch, complete_lines, data, doc_examples, doc_section, patience, run, text,
    wait_for_lines,
};

/// A sample deal with a card that does not exist: one `error:` line.
fn bad_deal() -> String {
    text("sample.in").replacen("AS 9S 6C KS", "AS 9S 6C ZZ", 1)
}

/// Three deal files: the first full of bad kinds (`bad-kinds.in`), the second `random1000.in`
/// with blank lines between its deals, a bad deal after every 97th, deal 501 missing a line and a
/// stray line before deal 701, the last `bad-deals.in`;
/// and the whole run's lines for the second, from the reference answers (`None`: an `error:`
/// line).
fn deal_files(dir: &Scratch) -> (Vec<String>, Vec<Option<String>>) {
    let corpus = text("random1000.in");
    let lines: Vec<&str> = corpus.lines().filter(|l| !l.trim().is_empty()).collect();
    let answers = text("random1000.out6");
    let answers: Vec<&str> = answers.lines().collect();
    let (mut middle, mut expected) = (String::from("\n\n"), Vec::new());
    for (i, deal) in lines.chunks(9).enumerate() {
        match i {
            // A deal that lost its fifth line: one `error:` line, and the deals after it read
            // whole (the reader finds where they begin again).
            500 => {
                let mut short = deal.to_vec();
                short.remove(4);
                middle.push_str(&short.join("\n"));
                middle.push('\n');
                expected.push(None);
                continue;
            }
            // A stray line before a deal: its own `error:` line, and the deal answered.
            700 => {
                middle.push_str("AS 9S\n");
                expected.push(None);
            }
            _ => {}
        }
        middle.push_str(&deal.join("\n"));
        middle.push_str(if i % 3 == 0 { "\n\n \r\n" } else { "\n" });
        expected.push(Some(answers[i].to_string()));
        if i % 97 == 96 {
            middle.push_str(&bad_deal());
            expected.push(None);
        }
    }
    let files = vec![
        data("bad-kinds.in"),
        dir.write("middle.in", middle),
        data("bad-deals.in"),
    ];
    (files, expected)
}

/// The whole run of `args` (`solve` and its flags, then the files).
fn whole(args: &[&str]) -> crate::common::Output {
    run(args)
}

/// `args` with `--shard k/n` after the command, run.
fn shard_output(args: &[&str], k: usize, n: usize) -> crate::common::Output {
    let shard = format!("{k}/{n}");
    patience()
        .arg(args[0])
        .args(&["--shard", &shard])
        .args(&args[1..])
        .output()
}

/// `args` with `--shard k/n` after the command, run; its output and exit status.
fn shard(args: &[&str], k: usize, n: usize) -> (Vec<u8>, Option<i32>) {
    let out = shard_output(args, k, n);
    let code = out.code();
    (out.stdout, code)
}

/// Checks the whole run's lines of the middle file against the reference; the other two files'
/// items are all `error:` lines but their first (the UVa sample, in both), bad-kinds' fourth (a
/// position worth 2/3, worked out by hand in docs/solving.md) and eighth (the sample in lower
/// case), and bad-deals' fourth and sixth (random1000's third and fifth deals).
fn check_whole_deals(out: &str, expected: &[Option<String>]) {
    let lines: Vec<&str> = out.lines().collect();
    let random = text("random1000.out6");
    let random: Vec<&str> = random.lines().collect();
    let last = 10 + expected.len();
    assert_eq!(lines.len(), last + 7, "{out}");
    for (i, line) in lines.iter().enumerate() {
        let want = match i {
            0 | 7 => Some("0.589314"),
            3 => Some("0.666667"),
            i if i < 10 => None,
            i if i < last => expected[i - 10].as_deref(),
            i if i == last => Some("0.589314"),
            i if i == last + 3 => Some(random[2]),
            i if i == last + 5 => Some(random[4]),
            _ => None,
        };
        match want {
            Some(want) => assert_eq!(*line, want, "line {}", i + 1),
            None => assert!(line.starts_with("error: "), "line {}: {line}", i + 1),
        }
    }
}

#[test]
fn every_shard_count_concatenates_to_the_whole_run_in_text_and_json() {
    let dir = Scratch::new("shards-every-count");
    let (files, expected) = deal_files(&dir);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    for format in ["text", "json"] {
        let args: Vec<&str> = ["solve", "--format", format]
            .into_iter()
            .chain(files.iter().copied())
            .collect();
        let all = whole(&args);
        assert_eq!(all.code(), Some(1), "some deals are bad: {all:?}");
        let all = all.stdout_str().to_string();
        if format == "text" {
            check_whole_deals(&all, &expected);
        } else {
            for (i, line) in all.lines().enumerate() {
                assert!(line.starts_with(&format!("{{\"index\":{i},")), "{line}");
            }
        }
        for n in 1..=9 {
            let (mut joined, mut status) = (Vec::new(), 0);
            let mut sizes = Vec::new();
            for k in 0..n {
                let (out, code) = shard(&args, k, n);
                sizes.push(out.iter().filter(|&&b| b == b'\n').count());
                joined.extend(out);
                status = status.max(code.expect("an exit status"));
            }
            assert!(
                joined == all.as_bytes(),
                "{format}, {n} shards: the parts joined differ from the whole run"
            );
            assert_eq!(
                status, 1,
                "{format}, {n} shards: the shards' worst status is the run's"
            );
            // Nearly equal: within a few items of an N-th of the whole.
            let share = all.lines().count() / n;
            for (k, size) in sizes.iter().enumerate() {
                assert!(
                    size.abs_diff(share) <= 12,
                    "{format}: shard {k}/{n} has {size} items, an {n}th is {share}"
                );
            }
        }
    }
}

#[test]
fn shards_of_rps_cases_concatenate_to_the_whole_run() {
    let dir = Scratch::new("shards-rps");
    // A case file of bad cases between the corpora: a short case (its next start line held), a
    // bad triple, a bad start line (skipped to the next), a bad token, then trailing text.
    let bad = dir.write(
        "bad.in",
        "4\n2\n0.2 0.3 0.5\n0.2 0.3 0.5\n0\n0.2 0.3\nabc\n0.5 0.5 0\n1\n\n0.2 0.3 0.5\n\
         0.1 x 0.2\n0\n0.2 0.3 0.5\n7\n",
    );
    let sample = data("rps-sample.in");
    let random = data("rps-random120.in");
    let args = ["rps", sample.as_str(), bad.as_str(), random.as_str()];
    let all = whole(&args);
    assert_eq!(all.code(), Some(1), "{all:?}");
    let lines: Vec<&str> = all.stdout_str().lines().collect();
    let reference: Vec<String> = text("rps-sample.out10")
        .lines()
        .chain(text("rps-random120.out10").lines())
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 6 + 5 + 120, "{all:?}");
    for (i, line) in lines.iter().enumerate() {
        match i {
            6..11 => assert!(line.starts_with("error: "), "line {}: {line}", i + 1),
            i if i < 6 => assert_eq!(*line, reference[i]),
            i => assert_eq!(*line, reference[i - 5]),
        }
    }
    for n in 1..=9 {
        let joined: Vec<u8> = (0..n).flat_map(|k| shard(&args, k, n).0).collect();
        assert!(
            joined == all.stdout,
            "{n} shards of rps differ from the whole run"
        );
    }
}

#[test]
fn client_shards_concatenate_to_what_solve_prints() {
    let daemon = Daemon::start(&[]);
    let dir = Scratch::new("shards-client");
    let (files, _) = deal_files(&dir);
    let mut solve = vec!["solve", "--format", "json"];
    solve.extend(files.iter().map(String::as_str));
    let all = whole(&solve);
    let mut client = vec!["client", "--addr", &daemon.addr, "--format", "json"];
    client.extend(files.iter().map(String::as_str));
    let joined: Vec<u8> = (0..3).flat_map(|k| shard(&client, k, 3).0).collect();
    assert!(
        joined == all.stdout,
        "the client's shards differ from solve"
    );
    // The shard may come from the environment, as every job flag may.
    let out = patience()
        .env("PATIENCE_SHARD", "2/3")
        .args(&solve)
        .output();
    assert_eq!(out.stdout, shard(&client, 2, 3).0);
}

#[test]
fn a_shard_needs_files_and_a_shard_that_exists() {
    let out = patience()
        .args(&["solve", "--shard", "0/2", "-"])
        .stdin(text("sample.in"))
        .output();
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr_str()
            .contains("--shard 0/2 needs its inputs as files"),
        "{out:?}"
    );
    let sample = data("sample.in");
    let out = run(&["solve", "--shard", "4/4", &sample]);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr_str()
            .contains("shard 4 of 4 does not exist: K goes from 0 to 3"),
        "{out:?}"
    );
}

/// `n` parts of `args` written to `dir` as `part-K`, each with `--output`; their paths.
fn parts(dir: &Scratch, args: &[&str], n: usize) -> Vec<String> {
    (0..n)
        .map(|k| {
            let part = dir.join(&format!("part-{k}")).display().to_string();
            let shard = format!("{k}/{n}");
            let out = patience()
                .arg(args[0])
                .args(&["--shard", &shard, "--output", &part])
                .args(&args[1..])
                .output();
            assert!(matches!(out.code(), Some(0 | 1)), "{out:?}");
            part
        })
        .collect()
}

fn merge(parts: &[&str], output: Option<&Path>) -> crate::common::Output {
    let mut cmd = patience();
    cmd.arg("merge");
    if let Some(output) = output {
        cmd.arg("--output").arg(output);
    }
    cmd.args(parts).output()
}

#[test]
fn merge_writes_the_whole_run_and_refuses_a_missing_cut_or_foreign_part() {
    let dir = Scratch::new("shards-merge");
    let (files, _) = deal_files(&dir);
    let mut args = vec!["solve"];
    args.extend(files.iter().map(String::as_str));
    let all = whole(&args);
    let written = parts(&dir, &args, 4);
    let given: Vec<&str> = written.iter().map(String::as_str).collect();
    let merged = dir.join("merged");
    let out = merge(&given, Some(&merged));
    assert_eq!(
        out.code(),
        Some(1),
        "some deals are bad, as in the whole run: {out:?}"
    );
    assert_eq!(std::fs::read(&merged).unwrap(), all.stdout);
    // In any order, to standard output.
    let shuffled = [given[2], given[0], given[3], given[1]];
    assert_eq!(merge(&shuffled, None).stdout, all.stdout);

    let refused = |parts: &[&str], says: &str| {
        let target = dir.join("refused");
        let out = merge(parts, Some(&target));
        assert_eq!(out.code(), Some(2), "{out:?}");
        assert!(out.stderr_str().contains(says), "{says:?} in {out:?}");
        assert!(!target.exists(), "nothing written");
        assert!(
            !dir.join("refused.merging").exists(),
            "nothing left half-written"
        );
    };
    refused(
        &[given[0], given[1], given[3]],
        "shard 2 of 4 is missing: none of the parts given is shard 2",
    );
    refused(
        &[given[0], given[1], given[1]],
        &format!("{} is given twice", given[1]),
    );
    let copy = dir.join("copy-of-1").display().to_string();
    std::fs::copy(given[1], &copy).unwrap();
    std::fs::copy(
        format!("{}.done.json", given[1]),
        format!("{copy}.done.json"),
    )
    .unwrap();
    refused(
        &[given[0], given[1], &copy, given[2], given[3]],
        &format!("{} and {copy} are both shard 1/4", given[1]),
    );
    let absent = dir.join("part-9").display().to_string();
    refused(&[given[0], &absent], &format!("{absent} is missing"));

    // A resume that is refused (other flags) leaves a complete part complete.
    let out = patience()
        .args(&[
            "solve",
            "--shard",
            "1/4",
            "--precision",
            "9",
            "--resume",
            "--output",
        ])
        .arg(given[1])
        .args(&files.iter().map(String::as_str).collect::<Vec<_>>())
        .output();
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr_str().contains("cannot resume"), "{out:?}");
    assert_eq!(merge(&given, None).stdout, all.stdout);

    // A part cut short after its shard ended, as a full disk or a copy gone wrong leaves it.
    let bytes = std::fs::read(given[1]).unwrap();
    std::fs::write(given[1], &bytes[..bytes.len() / 2]).unwrap();
    refused(
        &given,
        &format!(
            "{} is not the part its completion record describes",
            given[1]
        ),
    );
    std::fs::write(given[1], &bytes).unwrap();

    // A part of another job: the same inputs in 3 shards; then other inputs in 4.
    let other = Scratch::new("shards-merge-other");
    let three = parts(&other, &args, 3);
    refused(
        &[given[0], &three[1], given[2], given[3]],
        &format!("{} is a part of another job", three[1]),
    );
    let fewer = parts(&other, &["solve", &files[1]], 4);
    refused(
        &[given[0], given[1], &fewer[2], given[3]],
        &format!("{} is a part of another job", fewer[2]),
    );

    // Incomplete: no completion record.
    std::fs::remove_file(format!("{}.done.json", given[3])).unwrap();
    refused(&given, &format!("{} is incomplete", given[3]));
}

#[test]
fn a_shard_killed_mid_part_is_incomplete_and_resumes_to_the_reference() {
    let dir = Scratch::new("shards-kill");
    // 100 copies of random1000.in: the reference answers, 100 times, are the whole run's lines.
    let input = dir.repeated_corpus(100);
    let reference = text("random1000.out6").repeat(100);
    let part = dir.join("part-1");
    let args = |workers: &str| {
        let mut cmd = patience();
        cmd.args(&["solve", "--shard", "1/2", "--workers", workers, "--output"])
            .arg(&part)
            .args(&["--resume", &input]);
        cmd
    };
    let mut running = args("1").running();
    // The part holds lines: the shard is under way (50,000 deals on one worker take far longer
    // than the first 64 KiB of lines).
    wait_for_lines(&part, 1, &mut running.child);
    running.child.kill().unwrap();
    let status = running.child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by a signal");
    let held = complete_lines(&part);
    assert!(held < 50_000, "killed part-way: {held} lines");
    assert!(
        !dir.join("part-1.done.json").exists(),
        "not recorded complete"
    );

    let zero = dir.join("part-0").display().to_string();
    let out = patience()
        .args(&["solve", "--shard", "0/2", "--output", &zero, &input])
        .output();
    assert_eq!(out.code(), Some(0), "{out:?}");
    let part_path = part.display().to_string();
    let out = merge(&[&zero, &part_path], None);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr_str()
            .contains(&format!("{part_path} is incomplete")),
        "{out:?}"
    );

    let out = args("2").output();
    assert_eq!(out.code(), Some(0), "{out:?}");
    let out = merge(&[&zero, &part_path], None);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stdout == reference.as_bytes(),
        "the merged parts are the reference answers"
    );
}

#[test]
fn two_attempts_at_one_shard_leave_one_correct_part() {
    let dir = Scratch::new("shards-twice");
    let (files, _) = deal_files(&dir);
    let mut args = vec!["solve", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let expected = shard(&args, 1, 3).0;
    let part = dir.join("part-1").display().to_string();
    let attempt = || {
        patience()
            .args(&[
                "solve", "--format", "json", "--shard", "1/3", "--output", &part,
            ])
            .args(&files.iter().map(String::as_str).collect::<Vec<_>>())
            .typed()
    };
    // Another run holds the part (this test, for as long as it likes): both attempts wait for it,
    // saying so, then one after the other writes the part.
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(format!("{part}.lock"))
        .unwrap();
    lock.lock().unwrap();
    let (first, second) = (attempt(), attempt());
    for attempt in [&first, &second] {
        let said = attempt.error_line("another run is writing");
        assert!(said.contains(&format!("it holds {part}.lock")), "{said}");
    }
    drop(lock);
    for attempt in [first, second] {
        let (_, code, stderr) = attempt.finish("an attempt at shard 1/3");
        assert_eq!(code, Some(1), "{stderr}");
    }
    assert!(std::fs::read(&part).unwrap() == expected);
    assert!(Path::new(&format!("{part}.done.json")).exists());

    // Two at once, with nothing else holding the part: the same part, complete.
    std::fs::remove_file(&part).unwrap();
    let (first, second) = (attempt(), attempt());
    for attempt in [first, second] {
        let (_, code, stderr) = attempt.finish("an attempt at shard 1/3");
        assert_eq!(code, Some(1), "{stderr}");
    }
    assert!(std::fs::read(&part).unwrap() == expected);
    let out = merge(&[&part], None);
    assert_eq!(out.code(), Some(2), "only one of three parts: {out:?}");
}

/// deploy/kubernetes/shards: the Indexed Job's container script, run as its N pods would run it
/// (N local processes at once, each with its JOB_COMPLETION_INDEX, against a daemon of the
/// test's for the headless Service and a directory for the volume), then the merge Job's. A merge
/// before every shard is done names the missing one and writes nothing; a second pod for an index
/// that is done changes nothing; the merged file is the whole run's.
#[test]
fn the_indexed_job_runs_as_its_pods_would_and_its_merge_joins_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/shards");
    let manifest = std::fs::read_to_string(root.join("job.yaml")).unwrap();
    let completions: usize = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("completions: "))
        .expect("completions")
        .parse()
        .unwrap();
    let shard_script = crate::long_jobs::job_script(&manifest);
    let merge_script = crate::long_jobs::job_script(
        &std::fs::read_to_string(root.join("merge/job.yaml")).unwrap(),
    );

    let daemon = Daemon::start(&[]);
    let dir = Scratch::new("shards-indexed-job");
    let (files, expected) = deal_files(&dir);
    std::fs::copy(&files[1], dir.join("deals.in")).unwrap();
    let whole = run(&["solve", &dir.join("deals.in").display().to_string()]);
    assert_eq!(whole.code(), Some(1));
    for (line, want) in whole.stdout_str().lines().zip(&expected) {
        match want {
            Some(want) => assert_eq!(line, want),
            None => assert!(line.starts_with("error: "), "{line}"),
        }
    }
    let host = daemon
        .addr
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let volume = |script: &str| {
        script
            .replace("dns:///patience-headless:50051", &format!("dns:///{host}"))
            .replace("/data/", &format!("{}/", dir.path().display()))
    };
    let (shard_script, merge_script) = (volume(&shard_script), volume(&merge_script));
    let path = crate::common::path_with_exe();
    let sh = |script: &str, index: Option<usize>| {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script])
            .env("PATH", &path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(index) = index {
            cmd.env("JOB_COMPLETION_INDEX", index.to_string());
        }
        cmd.spawn().unwrap()
    };
    let succeeds = |child: std::process::Child, what: &str| {
        let out = child.wait_with_output().unwrap();
        let errors = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{what} succeeds: {errors}");
        errors
    };
    // Every pod but one, at once.
    let late = completions / 2;
    let pods: Vec<_> = (0..completions)
        .filter(|&k| k != late)
        .map(|k| (k, sh(&shard_script, Some(k))))
        .collect();
    for (k, pod) in pods {
        let errors = succeeds(pod, &format!("pod {k}"));
        assert!(
            errors.contains("patience: summary: "),
            "--progress log: {errors}"
        );
    }
    let out = sh(&merge_script, None).wait_with_output().unwrap();
    let errors = String::from_utf8_lossy(&out.stderr);
    // merge's status 2, which the script's `|| [ "$?" -eq 1 ]` turns into 1: a failed pod.
    assert_eq!(out.status.code(), Some(1), "the merge fails: {errors}");
    assert!(
        errors.contains(&format!("shard {late} of {completions} is missing")),
        "{errors}"
    );
    assert!(!dir.join("deals.out").exists(), "nothing written");
    succeeds(sh(&shard_script, Some(late)), "the late pod");
    // A second pod for an index that is done: nothing to do, the part as it was.
    let part = dir.join(&format!("parts/part-{late}.out"));
    let before = std::fs::read(&part).unwrap();
    succeeds(sh(&shard_script, Some(late)), "a second pod for one index");
    assert_eq!(std::fs::read(&part).unwrap(), before);
    succeeds(sh(&merge_script, None), "the merge");
    assert!(std::fs::read(dir.join("deals.out")).unwrap() == whole.stdout);
}

/// docs/shards.md's examples, run in a directory of their own; and its Kubernetes section quotes
/// the pods' command as deploy/kubernetes/shards/job.yaml has it.
#[test]
fn the_shards_page_examples_run_as_shown() {
    let dir = Scratch::for_docs("shards-doc");
    doc_examples("docs/shards.md", "## Running shards")
        .in_dir(dir.path())
        .at_least(7)
        .run();
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/shards/job.yaml"),
    )
    .unwrap();
    let words = |text: &str| {
        text.replace("\\\n", " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let script = words(&crate::long_jobs::job_script(&manifest));
    assert!(
        words(&doc_section(
            "docs/shards.md",
            "## A Kubernetes Indexed Job"
        ))
        .contains(&script),
        "docs/shards.md quotes another command than job.yaml's: {script}"
    );
}

/// scripts/spark_shards.py on a real Spark (pyspark, `local[2]`): one task per shard, collected
/// in order, prints what `solve` prints, bad deals included. Needs a Python with pyspark and a JDK: `PATIENCE_SPARK_PYTHON` (CI sets it to its venv's);
/// without it the test is skipped, saying so.
#[test]
fn a_spark_job_prints_what_solve_prints() {
    let Some(python) = std::env::var_os("PATIENCE_SPARK_PYTHON") else {
        eprintln!(
            "note: skipping the Spark job: set PATIENCE_SPARK_PYTHON to a python with pyspark \
             (pip install pyspark==4.3.0; it needs Java 17 or later)"
        );
        return;
    };
    let dir = Scratch::new("shards-spark");
    let (files, _) = deal_files(&dir);
    let mut solve = vec!["solve"];
    solve.extend(files.iter().map(String::as_str));
    let whole = run(&solve);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/spark_shards.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .args(["--patience", crate::common::exe(), "--shards", "5"])
        .args(&files)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "some deals are bad: {errors}");
    assert!(
        out.stdout == whole.stdout,
        "the shards collected differ from solve: {errors}"
    );
}

/// `-v` and `--progress log` count a shard's own items: its summary says as many deals as its
/// part has lines, and its bad ones.
#[test]
fn a_shard_reports_its_own_items() {
    let dir = Scratch::new("shards-verbose");
    let (files, _) = deal_files(&dir);
    let part = dir.join("part");
    let out = patience()
        .args(&[
            "solve",
            "--shard",
            "2/3",
            "-v",
            "--progress",
            "log",
            "--output",
        ])
        .arg(&part)
        .args(&files.iter().map(String::as_str).collect::<Vec<_>>())
        .output();
    assert_eq!(out.code(), Some(1), "{out:?}");
    let answers = std::fs::read_to_string(&part).unwrap();
    let (items, bad) = (
        answers.lines().count(),
        answers.lines().filter(|l| l.starts_with("error: ")).count(),
    );
    let summary = format!(
        "patience: summary: {items} deals: {} answered, {bad} bad; ",
        items - bad
    );
    assert!(
        out.stderr_str().contains(&summary),
        "{summary:?} in {out:?}"
    );
}

/// A file that stops being text (a NUL byte) ends there for every shard: the shards' outputs
/// still join into the whole run's, and the one shard whose range holds that line says so, with
/// the whole run's words and status 2.
#[test]
fn a_file_that_stops_being_text_fails_in_the_one_shard_that_holds_it() {
    let dir = Scratch::new("shards-not-text");
    let corpus = text("random1000.in");
    let mut bytes = corpus.as_bytes()[..20_000].to_vec();
    bytes.extend(b"AS 9S\0 6C KS\n");
    bytes.extend(&corpus.as_bytes()[..5_000]);
    let broken = dir.write("broken.in", bytes);
    let sample = data("sample.in");
    let args = ["solve", sample.as_str(), broken.as_str(), sample.as_str()];
    let all = whole(&args);
    assert_eq!(all.code(), Some(2), "{all:?}");
    let said = all.stderr_str().trim().to_string();
    assert!(said.contains("is not text (a NUL byte"), "{said}");
    for n in [2, 3, 5] {
        let (mut joined, mut failed) = (Vec::new(), Vec::new());
        for k in 0..n {
            let out = shard_output(&args, k, n);
            if out.code() == Some(2) {
                assert_eq!(out.stderr_str().trim(), said);
                failed.push(k);
            }
            joined.extend(out.stdout);
        }
        assert!(
            joined == all.stdout,
            "{n} shards joined differ from the whole run"
        );
        assert_eq!(failed.len(), 1, "{n} shards: one says it, {failed:?} did");
    }
}

/// `patience index`: shards of indexed files (marks every 4 KiB here) skip the files before their
/// range and frame the one they begin in from its last mark, and still join into the whole run,
/// deals and rps cases; an index its file has outgrown is not used; and an index that lies is
/// believed, which shows that the shards read it (and why it is held to its file's size and
/// modification time).
#[test]
fn an_index_lets_shards_skip_what_comes_before_them() {
    let dir = Scratch::new("shards-index");
    let (files, _) = deal_files(&dir);
    let files: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, f)| dir.write(&format!("f{i}.in"), std::fs::read(f).unwrap()))
        .collect();
    let mut args = vec!["index", "--every", "4096"];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stdout_str()
            .starts_with(&format!("{}: 10 deals, 1 marks in ", files[0])),
        "{out:?}"
    );
    let joins = |args: &[&str], n: usize| {
        let all = whole(args);
        let joined: Vec<u8> = (0..n).flat_map(|k| shard(args, k, n).0).collect();
        (joined, all.stdout)
    };
    let mut solve = vec!["solve", "--format", "json"];
    solve.extend(files.iter().map(String::as_str));
    for n in 1..=9 {
        let (joined, all) = joins(&solve, n);
        assert!(
            joined == all,
            "{n} shards of indexed files differ from the whole run"
        );
    }

    let cases = [data("rps-sample.in"), data("rps-random120.in")];
    let cases: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, f)| dir.write(&format!("c{i}.in"), std::fs::read(f).unwrap()))
        .collect();
    let out = run(&["index", "--cases", "--every", "300", &cases[0], &cases[1]]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    let rps = ["rps", cases[0].as_str(), cases[1].as_str()];
    for n in 1..=5 {
        let (joined, all) = joins(&rps, n);
        assert!(
            joined == all,
            "{n} shards of indexed case files differ from the whole run"
        );
    }

    // Outgrown: a deal more in the middle file, and its index is not used.
    let mut grown = std::fs::read(&files[1]).unwrap();
    grown.extend(text("sample.in").bytes());
    std::fs::write(&files[1], grown).unwrap();
    for n in [2, 5] {
        let (joined, all) = joins(&solve, n);
        assert!(
            joined == all,
            "{n} shards with an outgrown index differ from the whole run"
        );
    }

    // A lie: the first file's index says 11 deals where it has 10. Believed, so the second
    // shard numbers its deals from one further on than the whole run does.
    let index = format!("{}.index.json", files[0]);
    let said = std::fs::read_to_string(&index).unwrap();
    assert!(said.contains("\"steps\":10,"), "{said}");
    std::fs::write(&index, said.replace("\"steps\":10,", "\"steps\":11,")).unwrap();
    let all = whole(&solve);
    let second = String::from_utf8(shard(&solve, 1, 2).0).unwrap();
    let first = second.lines().next().unwrap().to_string();
    let at = all.stdout_str().lines().position(|l| {
        l.split_once(',').map(|(_, rest)| rest) == first.split_once(',').map(|(_, rest)| rest)
    });
    let at = at.expect("the shard's first deal is in the whole run");
    assert!(
        first.starts_with(&format!("{{\"index\":{},", at + 1)),
        "{first}"
    );
}
