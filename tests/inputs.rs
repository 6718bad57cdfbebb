//! Inputs as people hand them: a pipe, process substitution, `/dev/stdin` and a FIFO, each of
//! which gives its bytes once, read by `solve`, `rps` and `client` as the same bytes in a file
//! are, plain, gzip and zstd; and what needs a file (`--shard`, `index`, Parquet) refusing a
//! stream at once, in words. Every run is a real process reading a real pipe or FIFO.
//!
//! Expected answers are the reference's (`tests/data/*.out6`, `*.out10`).

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

use common::cli::{HANG_LIMIT, wait_or_hang};
use common::{Daemon, Scratch, data, exe, text};

/// The bytes of `text` as `codec` writes them: plain, gzip or zstd.
fn encoded(text: &[u8], codec: &str) -> Vec<u8> {
    match codec {
        "plain" => text.to_vec(),
        "gzip" => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(text).expect("gzip in memory");
            gz.finish().expect("gzip in memory")
        }
        "zstd" => zstd::encode_all(text, 1).expect("zstd in memory"),
        other => panic!("no codec {other}"),
    }
}

/// A FIFO at `path` whose writer, on a thread, writes `bytes` once and closes it: a second open
/// for reading would wait for a writer that never comes.
fn fifo(path: &Path, bytes: Vec<u8>) -> JoinHandle<()> {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        // Opening for writing waits for the reader; a reader that never comes leaves this thread
        // blocked, which the test's own hang limit reports.
        if let Ok(mut writer) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = writer.write_all(&bytes);
        }
    })
}

/// `patience ARGS` run through bash (`ARGS` may hold `<(...)`), with `stdin` on its standard
/// input; its stdout, exit status and stderr, or a failure when it hangs.
fn through_bash(script: &str, stdin: Option<&Path>) -> (String, Option<i32>, String) {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).env("PATIENCE", exe());
    common::daemon::without_patience_env(&mut cmd);
    match stdin {
        Some(path) => cmd.stdin(std::fs::File::open(path).expect("the stdin file")),
        None => cmd.stdin(Stdio::null()),
    };
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bash");
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout.expect("piped")));
    let err = std::thread::spawn(move || std::io::read_to_string(stderr.expect("piped")));
    let status = wait_or_hang(&mut child, HANG_LIMIT, script);
    let out = out.join().expect("stdout reader").unwrap_or_default();
    let err = err.join().expect("stderr reader").unwrap_or_default();
    (out, status.code(), err)
}

/// Every way a stream reaches a command (process substitution, a pipe into `/dev/stdin`, a FIFO,
/// `-`), for `command` (`solve`, `rps`, or `client --addr A`) on `input`'s bytes encoded each
/// way: the output is `expected`, status 0, nothing on stderr.
fn each_stream_gives(command: &str, input: &str, expected: &str) {
    let scratch = Scratch::new("stream-inputs");
    let text = std::fs::read(data(input)).expect("the input");
    for codec in ["plain", "gzip", "zstd"] {
        let file = scratch.write(&format!("{input}.{codec}"), encoded(&text, codec));
        let fifo_path = scratch.join(&format!("{input}.{codec}.fifo"));
        let writer = fifo(&fifo_path, encoded(&text, codec));
        let ways: [(String, Option<PathBuf>); 4] = [
            (format!("\"$PATIENCE\" {command} <(cat '{file}')"), None),
            (
                format!("cat '{file}' | \"$PATIENCE\" {command} /dev/stdin"),
                None,
            ),
            (
                format!("\"$PATIENCE\" {command} '{}'", fifo_path.display()),
                None,
            ),
            (
                format!("\"$PATIENCE\" {command} /dev/stdin"),
                Some(PathBuf::from(&file)),
            ),
        ];
        for (script, stdin) in ways {
            let (out, code, err) = through_bash(&script, stdin.as_deref());
            assert_eq!(out, expected, "{codec}: {script}\nstderr: {err}");
            assert_eq!(code, Some(0), "{codec}: {script}\nstderr: {err}");
            assert_eq!(err, "", "{codec}: {script}");
        }
        writer.join().expect("the FIFO's writer");
    }
}

#[test]
fn solve_reads_a_pipe_a_fifo_and_dev_stdin_once() {
    each_stream_gives("solve --quiet", "random1000.in", &text("random1000.out6"));
}

#[test]
fn rps_reads_a_pipe_a_fifo_and_dev_stdin_once() {
    each_stream_gives("rps --quiet", "rps-sample.in", &text("rps-sample.out10"));
}

#[test]
fn the_client_reads_a_pipe_a_fifo_and_dev_stdin_once() {
    let daemon = Daemon::start(&["--workers", "1"]);
    each_stream_gives(
        &format!("client --quiet --addr {}", daemon.addr),
        "sample.in",
        &text("sample.out6"),
    );
}

/// What must read its input twice or from its end refuses a stream at once, naming it and saying
/// what to do, and never waits on a FIFO nobody writes to again.
#[test]
fn what_needs_a_file_refuses_a_stream_in_words() {
    let scratch = Scratch::new("stream-refusals");
    let deals = std::fs::read(data("sample.in")).expect("sample.in");

    // --shard sizes its range by the inputs' sizes.
    let fifo_path = scratch.join("shard.fifo");
    let _writer = fifo(&fifo_path, deals.clone());
    let shown = fifo_path.display().to_string();
    let (out, code, err) = through_bash(
        &format!("\"$PATIENCE\" solve --quiet --shard 0/2 '{shown}'"),
        None,
    );
    assert_eq!((out.as_str(), code), ("", Some(2)), "{err}");
    assert!(
        err.contains(&format!(
            "{shown}: it is a pipe or FIFO, which can be read only once"
        )) && err.contains("save it to a file first"),
        "{err}"
    );
    // The refusal did not open the FIFO: its writer is still waiting, for this reader.
    let (out, code, err) = through_bash(&format!("\"$PATIENCE\" solve --quiet '{shown}'"), None);
    assert_eq!(
        (out.as_str(), code),
        (text("sample.out6").as_str(), Some(0)),
        "{err}"
    );

    // `patience index` marks a file for reading it again.
    let (_, code, err) = through_bash(
        &format!("\"$PATIENCE\" index <(cat '{}')", data("sample.in")),
        None,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("it is a pipe or FIFO, which can be read only once")
            && err.contains("save it to a file and index that"),
        "{err}"
    );

    // A Parquet file is read from its footer: through a pipe, it is refused by its first bytes.
    let parquet = scratch.write("deals.parquet", b"PAR1 whatever follows\nPAR1");
    let (out, code, err) = through_bash(
        &format!("\"$PATIENCE\" solve --quiet <(cat '{parquet}')"),
        None,
    );
    assert_eq!(out, "", "{err}");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "it is a Parquet file, which is read from its footer at its end: give it as a file"
        ),
        "{err}"
    );
    let (_, code, err) = through_bash(
        &format!("cat '{parquet}' | \"$PATIENCE\" solve --quiet --input-format parquet -"),
        None,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("it is read as Parquet, which is read from its footer"),
        "{err}"
    );
}

/// random1000.in with deal 501's fifth line taken out, and what `solve` must print for it: the
/// reference's answers (random1000.out6), deal 501's replaced by one `error:` line naming the
/// lines skipped, every other deal's as in the clean file.
fn one_line_missing(scratch: &Scratch) -> (String, String) {
    let corpus = text("random1000.in");
    let mut lines: Vec<&str> = corpus.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.remove(500 * 9 + 4);
    let file = scratch.write("missing-line.in", lines.join("\n") + "\n");
    let expected: Vec<String> = text("random1000.out6")
        .lines()
        .enumerate()
        .map(|(i, answer)| match i {
            500 => format!(
                "error: {file}: deal 501 (line 4501): lines 4501-4508 do not read as whole deals"
            ),
            _ => answer.to_string(),
        })
        .collect();
    (file, expected.join("\n") + "\n")
}

/// Output lines, an `error:` line cut after its first `expected` words' length: the lines of
/// `expected` that are `error:` lines are prefixes of what was printed.
fn assert_prints(out: &str, expected: &str, what: &str) {
    let (got, want): (Vec<&str>, Vec<&str>) = (out.lines().collect(), expected.lines().collect());
    assert_eq!(got.len(), want.len(), "{what}: {out}");
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        match want.starts_with("error:") {
            true => assert!(got.starts_with(want), "{what}: line {}: {got}", i + 1),
            false => assert_eq!(got, want, "{what}: line {}", i + 1),
        }
    }
}

/// The user: one line missing in the middle of a file costs its deal only, whether the
/// file is read as a file, through a pipe, through a daemon, or cut into shards.
#[test]
fn a_missing_line_costs_its_deal_only_however_the_file_is_read() {
    let scratch = Scratch::new("missing-line");
    let (file, expected) = one_line_missing(&scratch);
    let whole = common::run(&["solve", "--quiet", &file]);
    assert_eq!(whole.code(), Some(1), "{whole:?}");
    assert_prints(whole.stdout_str(), &expected, "solve FILE");

    let (out, code, err) =
        through_bash(&format!("cat '{file}' | \"$PATIENCE\" solve --quiet"), None);
    assert_eq!(code, Some(1), "{err}");
    // From a pipe, the error line names standard input by nothing.
    assert_prints(&out, &expected.replace(&format!("{file}: "), ""), "a pipe");

    let daemon = Daemon::start(&["--workers", "1"]);
    let client = common::run(&["client", "--quiet", "--addr", &daemon.addr, &file]);
    assert_eq!(client.stdout_str(), whole.stdout_str(), "{client:?}");

    let parts: String = (0..3)
        .map(|k| {
            let shard = format!("{k}/3");
            common::run(&["solve", "--quiet", "--shard", &shard, &file])
                .stdout_str()
                .to_string()
        })
        .collect();
    assert_eq!(parts, whole.stdout_str(), "--shard K/3 of the damaged file");
}

/// A person typing: a deal with a card twice (nine lines, which the reader would look past for
/// where deals begin again) gets its `error:` line at once, before the next deal is typed.
#[test]
fn a_damaged_deal_typed_is_answered_before_the_next_is_typed() {
    let sample = text("sample.in");
    let twice = sample.replacen("JC QH AC KH", "AS QH AC KH", 1);
    let mut typed = common::patience().args(&["solve", "--quiet"]).typed();
    typed.type_in(sample.as_bytes());
    assert_eq!(typed.next_line(HANG_LIMIT), "0.589314\n");
    typed.type_in(twice.as_bytes());
    let line = typed.next_line(HANG_LIMIT);
    assert!(
        line.starts_with("error: deal 2 (line 11): AS appears twice"),
        "{line}"
    );
    typed.type_in(sample.as_bytes());
    assert_eq!(typed.next_line(HANG_LIMIT), "0.589314\n");
    typed.close_input();
    let (rest, code, _) = typed.finish("solve typed into");
    assert_eq!((rest.as_str(), code), ("", Some(1)));
}

/// The same for FZU 2145 case files: in rps-random120.in, case 10 loses a player's line, case 40
/// gains one and case 80 loses its start line; each costs its own case only, against the
/// reference's answers (rps-random120.out10), read as a file, through a pipe and in three shards.
/// A case typed is still answered before the next is typed (the line after it is not awaited).
#[test]
fn a_damaged_case_costs_its_case_only_however_the_file_is_read() {
    let scratch = Scratch::new("damaged-cases");
    let corpus = text("rps-random120.in");
    let lines: Vec<&str> = corpus.lines().collect();
    // Where each case starts (a line holding one token), after the count on line 1.
    let starts: Vec<usize> = (1..lines.len())
        .filter(|&i| lines[i].split_whitespace().count() == 1)
        .collect();
    assert_eq!(starts.len(), 120);
    let mut damaged: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if i == starts[9] + 2 || i == starts[79] {
            continue;
        }
        damaged.push(line.to_string());
        if i == starts[39] + 1 {
            damaged.push("0.2 0.3 0.5".to_string());
        }
    }
    let file = scratch.write("damaged.in", damaged.join("\n") + "\n");
    let expected: Vec<String> = text("rps-random120.out10")
        .lines()
        .enumerate()
        .map(|(i, answer)| match i {
            9 => format!("error: {file}: case 10 ("),
            39 => format!("error: {file}: case 40 ("),
            79 => format!("error: {file}: case 80 ("),
            _ => answer.to_string(),
        })
        .collect();
    let expected = expected.join("\n") + "\n";
    let whole = common::run(&["rps", &file]);
    assert_eq!(whole.code(), Some(1), "{whole:?}");
    assert_prints(whole.stdout_str(), &expected, "rps FILE");
    let (out, code, err) = through_bash(&format!("cat '{file}' | \"$PATIENCE\" rps"), None);
    assert_eq!(code, Some(1), "{err}");
    assert_prints(&out, &expected.replace(&format!("{file}: "), ""), "a pipe");
    let parts: String = (0..3)
        .map(|k| {
            let shard = format!("{k}/3");
            common::run(&["rps", "--shard", &shard, &file])
                .stdout_str()
                .to_string()
        })
        .collect();
    assert_eq!(parts, whole.stdout_str(), "--shard K/3 of the damaged file");

    let mut typed = common::patience().args(&["rps"]).typed();
    typed.type_in(b"2\n0\n1 0 0\n");
    assert_eq!(typed.next_line(HANG_LIMIT), "1.0000000000\n");
    typed.type_in(b"0\n1 0 0\n");
    assert_eq!(typed.next_line(HANG_LIMIT), "1.0000000000\n");
    typed.close_input();
    let (rest, code, _) = typed.finish("rps typed into");
    assert_eq!((rest.as_str(), code), ("", Some(0)));
}
