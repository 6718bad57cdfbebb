//! Long jobs, through the binaries: `--output FILE`, `--resume`, `--progress log` and `-v`.
//!
//! `solve`, `client` (one daemon and two) and `rps` are stopped at several points of a
//! mixed-layout input (blank lines, one-line deals, CRLF and lower case, positions, bad deals; for
//! rps, blank lines, CRLF and bad cases) by SIGKILL, SIGTERM, SIGINT or a lost daemon, and resumed
//! until done: the file then equals what one uninterrupted run prints, byte for byte, and that run
//! is itself checked against the reference answers. The input is typed on standard input, so each
//! stop comes at a known point: once the file holds the answers of what was typed (an event, not
//! a timer), with part of the next item typed. Resumes that cannot be right are refused.

use std::cell::RefCell;
use std::io::Write as _;
use std::path::Path;

use crate::common::{
    Daemon, Scratch, Typed, complete_lines, doc_examples, doc_section, patience, run, text,
    wait_for_lines,
};

/// A position worth exactly 2/3 (docs/solving.md works it out by hand).
const POSITION: &str = "7S 6S / 6C 6H / 7C 6D / / / / / /";

/// An input as items, each with the answer line a correct run prints for it (`None`: an
/// `error:` line), from the reference answers.
struct Mixed {
    /// Text before the first item (an rps file's count).
    head: String,
    items: Vec<String>,
    expected: Vec<Option<String>>,
}

impl Mixed {
    fn text(&self) -> String {
        self.typed(self.items.len(), 0.0)
    }

    /// The head, the first `whole` items, and `part` of the next one's bytes.
    fn typed(&self, whole: usize, part: f64) -> String {
        let mut text = self.head.clone();
        for item in &self.items[..whole] {
            text.push_str(item);
        }
        if let Some(next) = self.items.get(whole) {
            let cut = ((next.len() as f64 * part) as usize).min(next.len().saturating_sub(1));
            let cut = (0..=cut)
                .rev()
                .find(|&i| next.is_char_boundary(i))
                .unwrap_or(0);
            text.push_str(&next[..cut]);
        }
        text
    }

    /// Checks an uninterrupted run's output against the references, line by line.
    fn check(&self, out: &str) {
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.len(),
            self.expected.len(),
            "one line per item:\n{out}"
        );
        for (i, (line, expected)) in lines.iter().zip(&self.expected).enumerate() {
            match expected {
                Some(want) => assert_eq!(line, want, "item {}", i + 1),
                None => assert!(line.starts_with("error: "), "item {}: {line}", i + 1),
            }
        }
    }
}

/// `random1000.in`'s deals in every layout the reader takes, with the 2/3 position and two kinds
/// of bad deal in between: `count` items, the deals' answers from `random1000.out6`.
fn mixed_deals(count: usize) -> Mixed {
    let corpus = text("random1000.in");
    let lines: Vec<&str> = corpus.lines().filter(|l| !l.trim().is_empty()).collect();
    let deals: Vec<&[&str]> = lines.chunks(9).collect();
    let answers = text("random1000.out6");
    let answers: Vec<&str> = answers.lines().collect();
    let (mut items, mut expected) = (Vec::new(), Vec::new());
    let mut next = 0;
    for i in 0..count {
        let deal = deals[next % deals.len()];
        let answer = Some(answers[next % answers.len()].to_string());
        let (item, answer) = match i % 7 {
            0 => (format!("{}\n", deal.join("\n")), answer),
            1 => (
                format!("\n\n{}\n\n{}\n", deal[..4].join("\n"), deal[4..].join("\n")),
                answer,
            ),
            2 => (format!("{}\n", deal.join(" ")), answer),
            3 => (
                format!(
                    "{}\r\n",
                    deal.join("\r\n").to_lowercase().replace(' ', "\t")
                ),
                answer,
            ),
            4 => (format!("{POSITION}\n"), Some("0.666667".to_string())),
            // A card twice: the last one is the first again.
            5 => {
                let cards = deal.join(" ");
                let (head, _) = cards.rsplit_once(' ').unwrap();
                (format!("{head} {}\n", &deal[0][..2]), None)
            }
            // A typo in a pile line: the framing holds, only this deal is bad.
            _ => {
                let mut piles: Vec<String> = deal.iter().map(|l| l.to_string()).collect();
                piles[2] = piles[2].replacen(&piles[2][..2], "QX", 1);
                (format!("{}\n", piles.join("\n")), None)
            }
        };
        if !matches!(i % 7, 4..) {
            next += 1;
        }
        items.push(item);
        expected.push(answer);
    }
    Mixed {
        head: String::new(),
        items,
        expected,
    }
}

/// `rps-random120.in`'s cases with blank lines, CRLF and extra spaces, and three kinds of bad
/// case between them; the count first; the answers from `rps-random120.out10`.
fn mixed_cases() -> Mixed {
    let corpus = text("rps-random120.in");
    let mut lines = corpus.lines().filter(|l| !l.trim().is_empty());
    let count: usize = lines.next().unwrap().trim().parse().unwrap();
    let answers = text("rps-random120.out10");
    let answers: Vec<&str> = answers.lines().collect();
    let (mut items, mut expected) = (Vec::new(), Vec::new());
    for (i, answer) in answers.iter().enumerate().take(count.min(60)) {
        let n: usize = lines.next().unwrap().trim().parse().unwrap();
        let players: Vec<&str> = (0..=n).map(|_| lines.next().unwrap()).collect();
        let item = match i % 3 {
            0 => format!("{n}\n{}\n", players.join("\n")),
            1 => format!("\n{n}\r\n{}\r\n\n", players.join("\r\n")),
            _ => format!("  {n}  \n{}\n", players.join("\n").replace(' ', "   ")),
        };
        items.push(item);
        expected.push(Some(answer.to_string()));
        if i % 10 == 4 {
            // Three numbers that do not sum to 1.
            items.push("1\n0.5 0.5 0.5\n0.2 0.4 0.4\n".into());
            expected.push(None);
        } else if i % 10 == 7 {
            // More players than the game allows, framed all the same.
            let over: String = (0..17).map(|_| "0.2 0.4 0.4\n").collect();
            items.push(format!("16\n{over}"));
            expected.push(None);
        } else if i % 10 == 9 {
            items.push("1\n0.2 abc 0.4\n0.2 0.4 0.4\n".into());
            expected.push(None);
        }
    }
    Mixed {
        head: format!("{}\n", items.len()),
        items,
        expected,
    }
}

/// How a run is stopped.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Kill,
    /// SIGKILL, then half a line appended to the file, as a write cut short would leave.
    KillMidLine,
    Term,
    Int,
    /// Every daemon is killed (SIGKILL); the client, with nothing to send to, gives up (status
    /// 2).
    DaemonsLost,
    /// One of the daemons is killed (SIGKILL); the client goes on with the others, sending them
    /// what the lost one held, until it is itself killed (SIGKILL) further on.
    OneDaemonLost,
}

/// Runs `args` (a command reading standard input, with `--output OUT --resume`) once per stop,
/// each stopped at its fraction of `input` (a batch is handed on when the input has nothing more
/// buffered, so the items typed whole are all answered before the next is typed), then once more to the end; returns the file and the
/// last run's exit code and standard error. `args` is asked anew for each run (the daemons may
/// change); `lose` kills the daemons a `DaemonsLost` or `OneDaemonLost` stop loses.
fn resume_until_done(
    input: &Mixed,
    out: &Path,
    stops: &[(f64, Stop)],
    args: &dyn Fn() -> Vec<String>,
    lose: &mut dyn FnMut(Stop),
) -> (Vec<u8>, Option<i32>, String) {
    for &(at, stop) in stops {
        let whole = (input.items.len() as f64 * at) as usize;
        assert!(
            complete_lines(out) < whole,
            "stops too close together: {at}"
        );
        let mut typed: Typed = patience().args(&as_strs(&args())).typed();
        // Whole items first, all answered once the file has their lines; then half of the next
        // one, which the run is reading when it is stopped.
        let head = input.typed(whole, 0.0);
        typed.type_in(head.as_bytes());
        wait_for_lines(out, whole, &mut typed.child);
        typed.type_in(&input.typed(whole, 0.5).as_bytes()[head.len()..]);
        match stop {
            Stop::Kill | Stop::KillMidLine => {
                typed.child.kill().unwrap();
                let status = typed.child.wait().unwrap();
                assert_eq!(status.code(), None, "killed by a signal");
                if matches!(stop, Stop::KillMidLine) {
                    let mut file = std::fs::OpenOptions::new().append(true).open(out).unwrap();
                    file.write_all(b"0.12").unwrap();
                }
            }
            Stop::Term | Stop::Int => {
                let (name, code) = match stop {
                    Stop::Term => ("TERM", 143),
                    _ => ("INT", 130),
                };
                signal(typed.child.id(), name);
                let (_, status, errors) = typed.finish("a run stopped by a signal");
                assert_eq!(status, Some(code), "{errors}");
                let lines = complete_lines(out);
                assert!(
                    errors.contains(&format!(
                        "stopped with {lines} answers in {}; the same command with --resume goes \
                         on from there",
                        out.display()
                    )),
                    "{errors}"
                );
            }
            Stop::OneDaemonLost => {
                lose(stop);
                // The rest of the item being read, and more: the daemons left answer them all,
                // those sent to the lost one included.
                let more = whole + 20;
                typed.type_in(&input.typed(more, 0.0).as_bytes()[input.typed(whole, 0.5).len()..]);
                wait_for_lines(out, more, &mut typed.child);
                // Its call to the lost daemon broke: the client saw it, and went on without it.
                let warned = typed.error_line("patience: warning: ");
                assert!(warned.contains(" failed: "), "{warned}");
                typed.child.kill().unwrap();
                let status = typed.child.wait().unwrap();
                assert_eq!(status.code(), None, "killed by a signal");
            }
            Stop::DaemonsLost => {
                lose(stop);
                // More input, so that the client has a chunk to send and no daemon to take it.
                typed.type_in(
                    &input.typed(whole + 5, 0.0).as_bytes()[input.typed(whole, 0.5).len()..],
                );
                let (_, status, errors) = typed.finish("a client whose daemon is gone");
                assert_eq!(status, Some(2), "{errors}");
                assert!(errors.contains("every daemon failed"), "{errors}");
            }
        }
        // A stop never leaves anything but answers, a partial last line at most.
        let bytes = std::fs::read(out).unwrap();
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        assert!(
            bytes.len() - complete <= 4,
            "more than a torn line after the last answer"
        );
    }
    let last = patience()
        .args(&as_strs(&args()))
        .stdin(input.text())
        .output();
    (
        std::fs::read(out).unwrap(),
        last.code(),
        last.stderr_str().to_string(),
    )
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The stops every command goes through: each kind, and a torn line, at five points.
const STOPS: [(f64, Stop); 5] = [
    (0.1, Stop::Kill),
    (0.3, Stop::Term),
    (0.5, Stop::KillMidLine),
    (0.7, Stop::Int),
    (0.9, Stop::Kill),
];

/// The run every resumed one must equal: `args` (without `--output`) on the whole input at once,
/// checked against the references first.
fn uninterrupted(input: &Mixed, args: &[&str]) -> Vec<u8> {
    let out = patience().args(args).stdin(input.text()).output();
    assert_eq!(out.code(), Some(1), "bad items give status 1: {out:?}");
    input.check(out.stdout_str());
    out.stdout
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn solve_stopped_anywhere_and_resumed_writes_what_one_run_writes() {
    let dir = Scratch::new("resume-solve");
    let input = mixed_deals(420);
    let expected = uninterrupted(&input, &["solve", "-"]);
    let out = dir.join("answers.txt");
    let args = || {
        ["solve", "--output", &path_arg(&out), "--resume", "-"]
            .map(String::from)
            .to_vec()
    };
    let (file, code, errors) = resume_until_done(&input, &out, &STOPS, &args, &mut |_| {});
    assert_eq!(code, Some(1), "the bad deals, as in one run: {errors}");
    assert_eq!(
        String::from_utf8(file).unwrap(),
        String::from_utf8(expected).unwrap()
    );
}

/// JSON lines carry their index, and the analysis: both continue across resumes.
#[test]
fn a_json_run_with_analysis_resumes_with_the_right_indexes() {
    let dir = Scratch::new("resume-json");
    let input = mixed_deals(150);
    let flags = ["--format", "json", "--moves", "--exact"];
    let whole = patience()
        .args(&["solve"])
        .args(&flags)
        .arg("-")
        .stdin(input.text())
        .output();
    assert_eq!(whole.code(), Some(1));
    for (i, line) in whole.stdout_str().lines().enumerate() {
        assert!(line.starts_with(&format!("{{\"index\":{i},")), "{line}");
    }
    let out = dir.join("answers.jsonl");
    let args = || {
        let mut args = vec!["solve".to_string()];
        args.extend(flags.map(String::from));
        args.extend(["--output", &path_arg(&out), "--resume", "-"].map(String::from));
        args
    };
    let stops = [(0.2, Stop::Kill), (0.6, Stop::KillMidLine)];
    let (file, code, _) = resume_until_done(&input, &out, &stops, &args, &mut |_| {});
    assert_eq!(code, Some(1));
    assert_eq!(file, whole.stdout);
}

#[test]
fn rps_stopped_anywhere_and_resumed_writes_what_one_run_writes() {
    let dir = Scratch::new("resume-rps");
    let input = mixed_cases();
    let expected = uninterrupted(&input, &["rps", "-"]);
    let out = dir.join("answers.txt");
    let args = || {
        ["rps", "--output", &path_arg(&out), "--resume", "-"]
            .map(String::from)
            .to_vec()
    };
    let (file, code, errors) = resume_until_done(&input, &out, &STOPS, &args, &mut |_| {});
    assert_eq!(code, Some(1), "{errors}");
    assert_eq!(file, expected);
}

/// One daemon, and a stop where it is the daemon that is lost: the client gives up with what it
/// has, and the next run, on a new daemon (another address: the record does not hold them),
/// goes on from there.
#[test]
fn client_on_one_daemon_stopped_anywhere_and_resumed_writes_what_solve_writes() {
    let dir = Scratch::new("resume-client");
    let input = mixed_deals(420);
    let expected = uninterrupted(&input, &["solve", "-"]);
    let out = dir.join("answers.txt");
    let daemon = RefCell::new(Daemon::start(&[]));
    let args = || client_args(&daemon.borrow().addr, 16, &out);
    let stops = [
        (0.1, Stop::Kill),
        (0.3, Stop::DaemonsLost),
        (0.5, Stop::KillMidLine),
        (0.7, Stop::Term),
        (0.9, Stop::Kill),
    ];
    let mut lose = |_| replace(&mut daemon.borrow_mut());
    let (file, code, errors) = resume_until_done(&input, &out, &stops, &args, &mut lose);
    assert_eq!(code, Some(1), "{errors}");
    assert_eq!(
        String::from_utf8(file).unwrap(),
        String::from_utf8(expected).unwrap()
    );
}

/// Two daemons share the work. The client is killed (SIGKILL) on its own, after one daemon was
/// killed under it (it went on with the other), and mid-line; both daemons are killed under it
/// once (it gives up); and it is stopped by SIGTERM. Each next run has the daemons of the
/// moment. The summary of the last run names both daemons and their shares.
#[test]
fn client_on_two_daemons_stopped_anywhere_and_resumed_writes_what_solve_writes() {
    let dir = Scratch::new("resume-client2");
    let input = mixed_deals(420);
    let expected = uninterrupted(&input, &["solve", "-"]);
    let out = dir.join("answers.txt");
    let daemons = RefCell::new([Daemon::start(&[]), Daemon::start(&[])]);
    let args = || {
        let daemons = daemons.borrow();
        let mut args = client_args(&format!("{},{}", daemons[0].addr, daemons[1].addr), 8, &out);
        args.insert(1, "-v".into());
        args
    };
    let stops = [
        (0.1, Stop::Kill),
        (0.3, Stop::OneDaemonLost),
        (0.5, Stop::KillMidLine),
        (0.7, Stop::DaemonsLost),
        (0.9, Stop::Term),
    ];
    let mut lose = |stop| {
        let mut daemons = daemons.borrow_mut();
        match stop {
            Stop::OneDaemonLost => replace(&mut daemons[0]),
            _ => daemons.iter_mut().for_each(replace),
        }
    };
    let (file, code, errors) = resume_until_done(&input, &out, &stops, &args, &mut lose);
    assert_eq!(code, Some(1), "{errors}");
    assert_eq!(
        String::from_utf8(file).unwrap(),
        String::from_utf8(expected).unwrap()
    );
    let summary = errors
        .lines()
        .find(|l| l.starts_with("patience: summary: 420 deals: "))
        .unwrap_or_else(|| panic!("no summary: {errors}"));
    for daemon in daemons.borrow().iter() {
        assert!(
            summary.contains(&format!("{} ", daemon.addr.trim_end_matches('/'))),
            "{summary}"
        );
    }
    assert!(summary.contains("; resent "), "{summary}");
}

/// `client` on `addrs`, resuming `out` from standard input: it gives up as soon as every daemon
/// has failed, and waits little for late failures once done.
fn client_args(addrs: &str, batch: usize, out: &Path) -> Vec<String> {
    [
        "client",
        "--addr",
        addrs,
        "--give-up-after",
        "0",
        "--late-failures",
        "50ms",
        "--batch",
        &batch.to_string(),
        "--output",
        &path_arg(out),
        "--resume",
        "-",
    ]
    .map(String::from)
    .to_vec()
}

/// Kills `daemon` (SIGKILL) and puts a new one in its place, started first so that it cannot
/// take the lost one's port, which a client still running must find dead.
fn replace(daemon: &mut Daemon) {
    let new = Daemon::start(&[]);
    std::mem::replace(daemon, new).kill();
}

/// What a file written one way is refused to be resumed with, each in words, exit status 2, and
/// the file (and its partial last line) left as it was.
#[test]
fn a_resume_with_other_flags_or_inputs_is_refused() {
    let dir = Scratch::new("resume-refused");
    let deals = dir.write("deals.in", mixed_deals(40).text());
    let other = dir.write("other.in", mixed_deals(40).text());
    let out = path_arg(&dir.join("out.txt"));
    let first = run(&["solve", "--output", &out, &deals]);
    assert_eq!(first.code(), Some(1), "{first:?}");
    let mut kept = std::fs::read(&out).unwrap();
    kept.truncate(kept.len() - 3);
    std::fs::write(&out, &kept).unwrap();
    let refused = [
        (
            vec!["solve", "--precision", "9"],
            "--precision 6, where this run has --precision 9",
        ),
        (
            vec!["solve", "--format", "json"],
            "--format text, where this run has --format json",
        ),
        (
            vec!["rps", "--precision", "6"],
            "answers for deals, where this run has answers for cases",
        ),
    ];
    for (command, words) in refused {
        let mut args = command.clone();
        args.extend(["--output", &out, "--resume", &deals]);
        let got = run(&args);
        assert_eq!(got.code(), Some(2), "{args:?}: {got:?}");
        assert!(
            got.stderr_str().contains(words),
            "{args:?}: {}",
            got.stderr_str()
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            kept,
            "{args:?} touched the file"
        );
    }
    let got = run(&["solve", "--output", &out, "--resume", &other]);
    assert_eq!(got.code(), Some(2));
    assert!(
        got.stderr_str().contains(&format!(
            "the inputs {deals}, where this run has the inputs {other}"
        )),
        "{}",
        got.stderr_str()
    );
    // JSON with other analysis.
    let json = path_arg(&dir.join("out.jsonl"));
    assert_eq!(
        run(&["solve", "--format", "json", "--output", &json, &deals]).code(),
        Some(1)
    );
    let got = run(&[
        "solve", "--format", "json", "--exact", "--output", &json, "--resume", &deals,
    ]);
    assert_eq!(got.code(), Some(2));
    assert!(
        got.stderr_str()
            .contains("no --exact, where this run has --exact"),
        "{}",
        got.stderr_str()
    );
    // A file whose record is gone: how it was written is unknown.
    std::fs::remove_file(format!("{json}.resume.json")).unwrap();
    let got = run(&[
        "solve", "--format", "json", "--output", &json, "--resume", &deals,
    ]);
    assert_eq!(got.code(), Some(2));
    assert!(
        got.stderr_str().contains(".resume.json is missing"),
        "{}",
        got.stderr_str()
    );
    // The output named as an input too would be emptied before it is read.
    let got = run(&["solve", "--output", &deals, &deals]);
    assert_eq!(got.code(), Some(2));
    assert!(
        got.stderr_str().contains("is also an input"),
        "{}",
        got.stderr_str()
    );
    assert_eq!(
        std::fs::read_to_string(&deals).unwrap(),
        mixed_deals(40).text()
    );
}

/// A file with more answers than the input has items: refused, and left as it was.
#[test]
fn a_file_longer_than_the_input_is_refused() {
    let dir = Scratch::new("resume-longer");
    let input = mixed_deals(50);
    let deals = dir.write("deals.in", input.text());
    let out = path_arg(&dir.join("out.txt"));
    assert_eq!(run(&["solve", "--output", &out, &deals]).code(), Some(1));
    let mut file = std::fs::read(&out).unwrap();
    file.extend_from_slice(b"0.5");
    std::fs::write(&out, &file).unwrap();
    // The same file name, fewer deals in it.
    let shorter = Mixed {
        items: input.items[..30].to_vec(),
        ..mixed_deals(0)
    };
    std::fs::write(&deals, shorter.text()).unwrap();
    let got = run(&["solve", "--output", &out, "--resume", &deals]);
    assert_eq!(got.code(), Some(2), "{got:?}");
    assert!(
        got.stderr_str().contains(&format!(
            "cannot resume {out}: it holds 50 answers, but the input has only 30 deals"
        )),
        "{}",
        got.stderr_str()
    );
    assert_eq!(std::fs::read(&out).unwrap(), file);
    // With exactly as many, the run has nothing to do: it only cuts the partial line, and says
    // how the whole run went (the bad deals among those in the file).
    std::fs::write(&deals, input.text()).unwrap();
    let got = run(&["solve", "--output", &out, "--resume", &deals]);
    assert_eq!(got.code(), Some(1), "{got:?}");
    assert_eq!(std::fs::read(&out).unwrap(), file[..file.len() - 3]);
}

/// Outside a terminal, `--progress log` prints lines while the run goes and a summary at its
/// end, shaped as docs/long-jobs.md shows them.
#[test]
fn progress_log_lines_show_in_a_run_without_a_terminal() {
    let dir = Scratch::new("progress-log");
    let input = mixed_deals(140);
    let out = path_arg(&dir.join("out.txt"));
    let mut typed = patience()
        .args(&[
            "solve",
            "--progress",
            "log",
            "--progress-every",
            "20ms",
            "--output",
            &out,
            "-",
        ])
        .typed();
    typed.type_in(input.typed(70, 0.0).as_bytes());
    wait_for_lines(Path::new(&out), 70, &mut typed.child);
    // The run waits for more input, and says how far it is, over and over.
    let line = typed.error_line("patience: progress: ");
    assert_eq!(
        shape(&line),
        "patience: progress: N deals, N bad, N deals/s",
        "{line}"
    );
    typed.type_in(&input.text().as_bytes()[input.typed(70, 0.0).len()..]);
    typed.close_input();
    let summary = typed.error_line("patience: summary: ");
    assert_eq!(
        shape(&summary),
        "patience: summary: N deals: N answered, N bad; N in Ns (N deals/s)",
        "{summary}"
    );
    assert!(
        summary.starts_with("patience: summary: 140 deals: 100 answered, 40 bad;"),
        "{summary}"
    );
    let (_, code, _) = typed.finish("a run with --progress log");
    assert_eq!(code, Some(1));

    // A file of known size: the total, the share done and the time left too, as the docs show.
    let deals = dir.write(
        "big.in",
        run(&["gen", "--count", "20000", "--seed", "7"]).stdout,
    );
    let got = run(&[
        "solve",
        "--progress",
        "log",
        "--progress-every",
        "1ms",
        "--output",
        &out,
        &deals,
    ]);
    assert_eq!(got.code(), Some(0));
    let documented = doc_section("docs/long-jobs.md", "## Progress in logs");
    let shapes: Vec<String> = documented
        .lines()
        .filter(|l| l.starts_with("patience: "))
        .map(shape)
        .collect();
    let full = "patience: progress: N of ~N deals (N%), N bad, N deals/s, about Ns left";
    assert!(shapes.iter().any(|s| s == full), "{shapes:?}");
    assert!(
        got.stderr_str().lines().any(|l| shape(l) == full),
        "{}",
        got.stderr_str()
    );
    let summary = got.stderr_str().lines().last().unwrap();
    assert!(
        shapes.contains(&shape(summary)),
        "{summary} not in {shapes:?}"
    );
}

/// A line with every number (and a duration's decimals) as `N`.
fn shape(line: &str) -> String {
    let mut shaped = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                chars.next();
            }
            shaped.push('N');
        } else {
            shaped.push(c);
        }
    }
    shaped
}

/// docs/long-jobs.md's examples, run in a directory of their own with the repository's test
/// data at hand.
#[test]
fn the_long_jobs_page_examples_run_as_shown() {
    let dir = Scratch::for_docs("long-jobs-doc");
    doc_examples("docs/long-jobs.md", "## Resuming")
        .in_dir(dir.path())
        .at_least(5)
        .run();
    doc_examples("docs/long-jobs.md", "## When a resume is refused")
        .in_dir(dir.path())
        .at_least(2)
        .run();
    // The README's own directory: its file has the page's name.
    let readme = Scratch::for_docs("long-jobs-readme");
    doc_examples("README.md", "## Long jobs")
        .in_dir(readme.path())
        .at_least(4)
        .run();
}

/// The Job in deploy/kubernetes/job: its container's command, run here with the Service's name
/// for a daemon of the test's and the volume for a directory. A pod that died part-way (its file
/// cut short, mid-line) is restarted by the Job with the same command, which goes on from there
/// and writes what one run writes; a pod restarted after the end finds nothing to do. Bad deals
/// (status 1) are a success for the Job: their `error:` lines are in the file, and running again
/// would not mend them. The README and docs/long-jobs.md quote that command as job.yaml has it.
#[test]
fn the_kubernetes_job_resumes_where_its_pod_stopped() {
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/job/job.yaml"),
    )
    .unwrap();
    let script = job_script(&manifest);
    // The pages quote the command as the manifest has it (the README the client's part alone).
    let words = |text: &str| {
        text.replace("\\\n", " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let client = words(script.split(" || ").next().unwrap());
    assert!(
        words(&doc_section("README.md", "## Long jobs")).contains(&format!("`{client}`")),
        "README.md's Long jobs quotes another command than job.yaml's: {client}"
    );
    assert!(
        words(&doc_section("docs/long-jobs.md", "## A Kubernetes Job")).contains(&words(&script)),
        "docs/long-jobs.md quotes another command than job.yaml's: {script}"
    );
    let daemon = Daemon::start(&[]);
    let dir = Scratch::new("kubernetes-job");
    let input = mixed_deals(420);
    let deals = dir.write("deals.in", input.text());
    let expected = run(&["solve", &deals]);
    input.check(expected.stdout_str());
    let host = daemon
        .addr
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let script = script
        .replace("dns:///patience-headless:50051", &format!("dns:///{host}"))
        .replace("/data/", &format!("{}/", dir.path().display()));
    assert!(!script.contains("/data/"), "{script}");
    let path = crate::common::path_with_exe();
    let pod = || {
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("PATH", &path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let errors = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "the Job succeeds: {errors}");
        assert!(
            errors.contains("patience: summary: 420 deals: "),
            "--progress log: {errors}"
        );
        errors
    };
    let out = dir.join("deals.out");
    pod();
    assert_eq!(std::fs::read(&out).unwrap(), expected.stdout);
    // A pod that died part-way.
    let mut cut = expected.stdout.clone();
    let keep = cut
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(150)
        .unwrap()
        .0
        + 5;
    cut.truncate(keep);
    std::fs::write(&out, &cut).unwrap();
    let errors = pod();
    assert!(errors.contains("151 were already in"), "{errors}");
    assert_eq!(std::fs::read(&out).unwrap(), expected.stdout);
    // One restarted after the end.
    let errors = pod();
    assert!(errors.contains("420 were already in"), "{errors}");
    assert_eq!(std::fs::read(&out).unwrap(), expected.stdout);
}

/// The shell script of the Job's container: the item after `args:` (`- >-` and its indented
/// lines, folded into one line as YAML does).
pub(crate) fn job_script(manifest: &str) -> String {
    let mut lines = manifest.lines().skip_while(|l| l.trim() != "args:").skip(1);
    let first = lines.next().expect("an args: list");
    assert_eq!(first.trim(), "- >-", "the script is one folded item");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let body: Vec<&str> = lines
        .take_while(|l| indent(l) > indent(first))
        .map(str::trim)
        .collect();
    assert!(!body.is_empty(), "an empty script");
    body.join(" ")
}
