//! The `patience` binary, run as a user would: `solve` on files and standard input, its error lines
//! and exit statuses, its worker counts, broken pipes, and `gen`.
//!
//! Expected probabilities come only from `tests/data/*.out6` / `*.out9` or, for generated deals,
//! from `reference-solve` when it is available (see `tests/data/README.md`).

use crate::common;

use std::collections::HashSet;
use std::process::Command;

use common::{
    Scratch, answers, assert_answers, data, parse_number, patience, survives_a_closed_pipe, text,
};
use patience::deal::{CARDS, Card, Deal, PILE_HEIGHT, PILES};

/// A printed 9-decimal value is within 5e-10 of ours and the reference within 5e-10 of the exact
/// one; the engine itself must be within 1e-9 of exact, which leaves at most 1e-9 + 5e-10 between
/// two printed 9-decimal values.
const NINE_DECIMALS: f64 = 1e-9 + 5e-10;

/// The deals of a reference file as their nine text lines each, exactly as written there.
fn deal_texts(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(data(name)).expect("reference input");
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len() % PILES, 0);
    lines.chunks(PILES).map(<[String]>::to_vec).collect()
}

/// True when `text` contains `word` followed by the number `n` (and not by a longer number).
fn mentions(text: &str, word: &str, n: u64) -> bool {
    let needle = format!("{word} {n}");
    text.match_indices(&needle).any(|(at, _)| {
        !text[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

#[test]
fn solves_the_sample_file() {
    let out = patience().arg("solve").arg(data("sample.in")).output();
    assert_eq!(out.stdout_str(), "0.589314\n");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stderr_str(), "");
}

/// The README's quick start, `cargo run --release -- solve FILE  # prints P`, is this build's
/// `patience solve FILE` printing P, and P is the reference's (`tests/data/sample.out6`). Its
/// other command is the suite's own, `cargo test --release`, word for word.
#[test]
fn the_readme_quick_start_prints_what_it_says() {
    let quick = common::doc_section("README.md", "## Quick start");
    let run = "cargo run --release -- ";
    let line = quick
        .lines()
        .find(|l| l.starts_with(run))
        .unwrap_or_else(|| panic!("no `{run}` line in {quick}"));
    let (command, said) = line
        .split_once("# prints ")
        .unwrap_or_else(|| panic!("{line:?} does not say what it prints"));
    assert_eq!(said.trim(), text("sample.out6").trim(), "{line}");
    let out = patience()
        .args(&command[run.len()..].split_whitespace().collect::<Vec<_>>())
        .output();
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout_str(), format!("{}\n", said.trim()));
    assert!(
        quick
            .lines()
            .any(|l| l.split('#').next().map(str::trim) == Some("cargo test --release")),
        "the quick start has no `cargo test --release`: {quick}"
    );
}

/// The README's `solve` example prints the reference's 9 decimals (`tests/data/sample.out9`), and
/// the bad-deal example of `docs/solving.md` prints the error lines worked out by reading
/// `tests/data/bad-deals.in`: deal 2's `QX` at line 11; deal 3's second `9S` at line 20; deal 5,
/// whose ninth line is blank, skipped as lines 37-44 (its nine lines would take line 46, the next
/// deal's first pile, which holds its `JD` again) and the deal at line 46 read whole; deal 7's
/// three cards at line 63. Its good deals are the UVa sample and random1000's third and fifth,
/// answered as the reference answers them. The bad deals make the exit status 1, as the doc says.
#[test]
fn the_documented_solve_examples_print_what_the_docs_say() {
    assert!(
        common::doc_section("README.md", "## Solving deals").contains(text("sample.out9").trim()),
        "the README's example is not sample.out9's value"
    );
    common::doc_examples("README.md", "## Solving deals").run();
    common::doc_examples("docs/solving.md", "## Bad deals").run();
    let out = patience()
        .arg("solve")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/bad-deals.in"
        ))
        .output();
    assert_eq!(out.code(), Some(1), "{out:?}");
    let random = text("random1000.out6");
    let random: Vec<&str> = random.lines().collect();
    let answered: Vec<&str> = out
        .stdout_str()
        .lines()
        .filter(|l| !l.starts_with("error:"))
        .collect();
    assert_eq!(
        answered,
        [text("sample.out6").trim(), random[2], random[4]],
        "{out:?}"
    );
}

#[test]
fn reads_standard_input() {
    let sample = std::fs::read(data("sample.in")).unwrap();
    for args in [&[][..], &["-"][..]] {
        let out = patience().arg("solve").args(args).stdin(&sample).output();
        assert_eq!(out.stdout_str(), "0.589314\n", "solve {args:?}");
        assert_eq!(out.status.code(), Some(0), "solve {args:?}: {out:?}");
    }

    // Files and standard input mixed, answered in the order given.
    let extra = std::fs::read(data("extra12.in")).unwrap();
    let out = patience()
        .args(&["solve", "--precision", "9"])
        .arg(data("sample.in"))
        .arg("-")
        .arg(data("sample.in"))
        .stdin(&extra)
        .output();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut expected = answers("sample.out9");
    expected.extend(answers("extra12.out9"));
    expected.extend(answers("sample.out9"));
    assert_answers(out.stdout_str(), &expected, 9, NINE_DECIMALS);

    // No trailing newline after the last pile.
    let out = patience()
        .arg("solve")
        .stdin(sample.trim_ascii_end())
        .output();
    assert_eq!(out.stdout_str(), "0.589314\n");
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // Nothing in, nothing out.
    let out = patience().arg("solve").stdin(b"").output();
    assert_eq!(out.stdout_str(), "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // A bad deal on standard input: its error line names no file.
    let out = patience().arg("solve").stdin(b"AS KS\n").output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let line = out.stdout_str().trim_end();
    assert!(line.starts_with("error: deal 1"), "{line:?}");
}

#[test]
fn prints_the_requested_precision() {
    for name in ["sample", "extra12", "random1000"] {
        let out = patience()
            .args(&["solve", "--precision", "9"])
            .arg(data(&format!("{name}.in")))
            .output();
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        assert_answers(
            out.stdout_str(),
            &answers(&format!("{name}.out9")),
            9,
            NINE_DECIMALS,
        );
    }

    // No decimals: a whole number within half a unit (plus the reference's rounding).
    let out = patience()
        .args(&["solve", "--precision", "0"])
        .arg(data("extra12.in"))
        .output();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_answers(
        out.stdout_str(),
        &answers("extra12.out9"),
        0,
        0.5 + 5e-10 + 1e-12,
    );
    for line in out.stdout_str().lines() {
        assert!(line == "0" || line == "1", "{line:?}");
    }
}

/// One entry of a hand-made input file, with what its output line must be.
enum Expect {
    /// Answered: index of the deal in the picked `random1000` deals.
    Answer(usize),
    /// An error line; the deal must be named, the line (relative to the entry's first line) too,
    /// and each of these fragments must appear.
    Error { line: u64, says: Vec<String> },
}

struct Entry {
    bytes: Vec<u8>,
    expect: Expect,
}

fn lines_of(pile_lines: &[String], eol: &str) -> Vec<u8> {
    pile_lines
        .iter()
        .map(|l| format!("{l}{eol}"))
        .collect::<String>()
        .into_bytes()
}

/// Replaces the `position`-th token (1-based) of pile `pile` (1-based).
fn with_token(deal: &[String], pile: usize, position: usize, token: &str) -> Vec<String> {
    let mut deal = deal.to_vec();
    let mut tokens: Vec<&str> = deal[pile - 1].split_whitespace().collect();
    tokens[position - 1] = token;
    deal[pile - 1] = tokens.join(" ");
    deal
}

fn token_at(deal: &[String], pile: usize, position: usize) -> String {
    deal[pile - 1]
        .split_whitespace()
        .nth(position - 1)
        .unwrap()
        .to_string()
}

fn bad(bytes: Vec<u8>, line: u64, says: &[&str]) -> Entry {
    Entry {
        bytes,
        expect: Expect::Error {
            line,
            says: says.iter().map(|s| s.to_string()).collect(),
        },
    }
}

fn good(bytes: Vec<u8>, deal: usize) -> Entry {
    Entry {
        bytes,
        expect: Expect::Answer(deal),
    }
}

#[test]
fn bad_deals_cost_only_their_own_line() {
    let all_deals = deal_texts("random1000.in");
    let reference = answers("random1000.out9");
    // Deals with clearly non-zero answers, so that a deal answered in place of another (a framing
    // mistake) cannot pass by sharing a common answer such as 0.
    let picked: Vec<usize> = (0..all_deals.len())
        .filter(|&i| reference[i] > 0.01)
        .take(16)
        .collect();
    let deals: Vec<Vec<String>> = picked.iter().map(|&i| all_deals[i].clone()).collect();
    let plain = |i: usize| lines_of(&deals[i], "\n");

    let three_cards = {
        let mut d = deals[3].to_vec();
        d[3] = d[3]
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        d
    };
    let five_cards = {
        let mut d = deals[5].to_vec();
        d[5] = format!("{} {}", d[5], token_at(&d, 6, 1));
        d
    };
    let first_card = token_at(&deals[7], 1, 1);
    let duplicate = with_token(&deals[7], 9, 4, &first_card);
    let blank_lines = {
        let mut text = String::from("\n \t\n");
        for l in &deals[9] {
            text.push_str(l);
            text.push_str("\n\n   \n");
        }
        text.into_bytes()
    };
    let one_line = format!("{}\n", deals[10].join(" ")).into_bytes();
    let one_line_bad = format!("{}\n", with_token(&deals[11], 9, 4, "ZZ").join(" ")).into_bytes();
    // Text beyond ASCII is still text: a bad token like any other (bytes that are not UTF-8
    // make the file unreadable instead; see a_file_that_is_not_text_is_refused_once_naming_its_line).
    let not_ascii = {
        let mut bytes = "Ä".as_bytes().to_vec();
        bytes.extend_from_slice(&plain(12)[1..]);
        bytes
    };
    let messy = deals[13]
        .iter()
        .map(|l| format!("\t{}\t \r\n\r\n", l.to_lowercase().replace(' ', " \t ")))
        .collect::<String>()
        .into_bytes();
    let truncated = lines_of(&deals[15][..5], "\n");

    let entries = vec![
        good(plain(0), 0),
        bad(
            lines_of(&with_token(&deals[1], 3, 2, "QX"), "\n"),
            3,
            &["pile 3, position 2", "\"QX\""],
        ),
        good(plain(2), 2),
        bad(lines_of(&three_cards, "\n"), 4, &["pile 4", "3 cards"]),
        good(
            lines_of(
                &deals[4]
                    .iter()
                    .map(|l| l.to_lowercase())
                    .collect::<Vec<_>>(),
                "\n",
            ),
            4,
        ),
        bad(lines_of(&five_cards, "\n"), 6, &["pile 6", "5 cards"]),
        good(lines_of(&deals[6], "\r\n"), 6),
        bad(
            lines_of(&duplicate, "\n"),
            9,
            &[
                &first_card,
                "twice",
                "pile 1, position 1",
                "pile 9, position 4",
            ],
        ),
        good(
            lines_of(
                &deals[8]
                    .iter()
                    .map(|l| format!("\t{}\t", l.replace(' ', "\t")))
                    .collect::<Vec<_>>(),
                "\n",
            ),
            8,
        ),
        good(blank_lines, 9),
        good(one_line, 10),
        bad(one_line_bad, 1, &["pile 9, position 4", "\"ZZ\""]),
        bad(not_ascii, 1, &["pile 1, position 1"]),
        good(messy, 13),
        good(plain(14), 14),
        // Cut after five piles: the end of the file comes where the sixth pile should.
        bad(truncated, 5, &["20 cards"]),
    ];

    let dir = Scratch::new("bad_deals");
    let path = dir.join("mixed.in");
    let mut file = Vec::new();
    let mut first_lines = Vec::new();
    for entry in &entries {
        first_lines.push(file.iter().filter(|&&b| b == b'\n').count() as u64 + 1);
        file.extend_from_slice(&entry.bytes);
    }
    std::fs::write(&path, &file).unwrap();

    let out = patience()
        .args(&["solve", "--precision", "9"])
        .arg(&path)
        .output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stderr_str(), "", "bad deals are reported on stdout");
    let lines: Vec<&str> = out.stdout_str().lines().collect();
    assert_eq!(
        lines.len(),
        entries.len(),
        "one line per deal:\n{}",
        out.stdout_str()
    );
    for (n, ((entry, line), first)) in entries.iter().zip(&lines).zip(&first_lines).enumerate() {
        let deal_no = n as u64 + 1;
        match &entry.expect {
            Expect::Answer(i) => {
                let want = reference[picked[*i]];
                let got = parse_number(line);
                assert!(
                    (got - want).abs() <= NINE_DECIMALS,
                    "deal {deal_no}: printed {line}, reference {want}"
                );
            }
            Expect::Error { line: at, says } => {
                assert!(line.starts_with("error: "), "deal {deal_no}: {line:?}");
                assert!(
                    line.contains(&path.display().to_string()),
                    "deal {deal_no}: the file is not named: {line:?}"
                );
                assert!(
                    mentions(line, "deal", deal_no),
                    "deal {deal_no}: the deal number is not named: {line:?}"
                );
                let at = first + at - 1;
                assert!(
                    mentions(line, "line", at),
                    "deal {deal_no}: expected line {at}: {line:?}"
                );
                for s in says {
                    assert!(
                        line.contains(s.as_str()),
                        "deal {deal_no}: no {s:?} in {line:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_missing_file_is_reported_and_the_others_are_answered() {
    let dir = Scratch::new("missing");
    let missing = dir.join("no-such-deals.in");
    let out = patience()
        .args(&["solve", "--precision", "9"])
        .arg(data("sample.in"))
        .arg(&missing)
        .arg(data("extra12.in"))
        .output();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        out.stderr_str().contains("no-such-deals.in"),
        "stderr does not name the file: {:?}",
        out.stderr_str()
    );
    let mut expected = answers("sample.out9");
    expected.extend(answers("extra12.out9"));
    assert_answers(out.stdout_str(), &expected, 9, NINE_DECIMALS);

    // Alone.
    let out = patience().arg("solve").arg(&missing).output();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout_str(), "");
    assert!(out.stderr_str().contains("no-such-deals.in"), "{out:?}");

    // A path that opens but cannot be read as a file (a directory) is trouble too.
    let out = patience()
        .arg("solve")
        .arg(dir.path())
        .arg(data("sample.in"))
        .output();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout_str(), "0.589314\n");
    assert!(!out.stderr_str().is_empty(), "{out:?}");
}

#[test]
fn worker_counts_do_not_change_the_output() {
    let outputs: Vec<(String, Vec<u8>)> = [&["1"][..], &["2"], &["4"], &[]]
        .iter()
        .map(|w| {
            let mut cmd = patience();
            cmd.args(&["solve", "--precision", "9"]);
            if let Some(n) = w.first() {
                cmd.args(&["--workers", n]);
            }
            let out = cmd.arg(data("random1000.in")).output();
            assert_eq!(out.status.code(), Some(0), "workers {w:?}: {out:?}");
            (format!("{w:?}"), out.stdout)
        })
        .collect();
    for (w, out) in &outputs[1..] {
        assert!(
            *out == outputs[0].1,
            "--workers {w} differs from --workers 1"
        );
    }
    assert_answers(
        std::str::from_utf8(&outputs[0].1).unwrap(),
        &answers("random1000.out9"),
        9,
        NINE_DECIMALS,
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["solve", "--no-such-flag"][..],
        &["solve", "--precision", "x"],
        &["solve", "--precision", "-1"],
        &["solve", "--workers", "0"],
        &["gen"],
        &["no-such-command"],
        &[],
    ] {
        let out = patience().args(args).arg(data("sample.in")).output();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(!out.stderr_str().is_empty(), "{args:?}: {out:?}");
        assert_eq!(out.stdout_str(), "", "{args:?}");
    }
}

fn generate(count: u64, seed: u64) -> Vec<u8> {
    let out = patience()
        .args(&[
            "gen",
            "--count",
            &count.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .output();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stderr_str(), "");
    out.stdout
}

/// The deals of a generated file, checked line by line against the format.
fn generated_deals(bytes: &[u8]) -> Vec<Deal> {
    let text = std::str::from_utf8(bytes).expect("UTF-8 deals");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len() % PILES, 0, "9 lines per deal");
    lines
        .chunks(PILES)
        .map(|pile_lines| {
            let mut cards = HashSet::new();
            for line in pile_lines {
                let tokens: Vec<&str> = line.split(' ').collect();
                assert_eq!(tokens.len(), PILE_HEIGHT, "{line:?}");
                for token in tokens {
                    assert_eq!(token.len(), 2, "{line:?}");
                    assert_eq!(token, token.to_uppercase(), "{line:?}");
                    cards.insert(token.parse::<Card>().expect("a card"));
                }
            }
            assert_eq!(
                cards.len(),
                CARDS,
                "36 distinct cards:\n{}",
                pile_lines.join("\n")
            );
            Deal::parse(&pile_lines.join("\n")).expect("a valid deal")
        })
        .collect()
}

#[test]
fn gen_is_deterministic_per_seed_and_writes_valid_deals() {
    let a = generate(50, 7);
    assert_eq!(a, generate(50, 7), "same seed, different deals");
    assert_ne!(a, generate(50, 8), "another seed, same deals");
    let deals = generated_deals(&a);
    assert_eq!(deals.len(), 50);
    assert_eq!(deals.iter().collect::<HashSet<_>>().len(), 50);
    // A shorter run of the same seed is a prefix of the longer one.
    assert!(a.starts_with(&generate(10, 7)));
    assert_eq!(generate(0, 7), b"");
    // Without a seed, two runs differ.
    let unseeded = |_| {
        let out = patience().args(&["gen", "--count", "5"]).output();
        assert_eq!(out.status.code(), Some(0));
        out.stdout
    };
    assert_ne!(unseeded(0), unseeded(1));
}

#[test]
fn generated_deals_are_solved_like_the_reference() {
    let Some(reference) = common::reference("reference-solve") else {
        return;
    };
    let dir = Scratch::new("gen_reference");
    let path = dir.join("generated.in");
    let mut deals = generate(50, 7);
    deals.extend(generate(450, 1637));
    std::fs::write(&path, &deals).unwrap();

    let theirs = Command::new(&reference)
        .args(["--digits", "9"])
        .arg(&path)
        .output()
        .expect("run reference-solve");
    assert!(theirs.status.success(), "{theirs:?}");
    let expected: Vec<f64> = std::str::from_utf8(&theirs.stdout)
        .unwrap()
        .lines()
        .map(parse_number)
        .collect();
    assert_eq!(expected.len(), 500, "reference-solve answered every deal");

    let ours = patience()
        .args(&["solve", "--precision", "9"])
        .arg(&path)
        .output();
    assert_eq!(ours.status.code(), Some(0), "{ours:?}");
    assert_answers(ours.stdout_str(), &expected, 9, NINE_DECIMALS);
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    // 100,000 deals answer in 900 kB, far more than a pipe holds, so `solve` is certain to write
    // into the closed pipe.
    let dir = Scratch::new("broken_pipe");
    let path = dir.join("big.in");
    std::fs::write(&path, generate(100_000, 3)).unwrap();
    survives_a_closed_pipe(patience().arg("solve").arg(&path));
    survives_a_closed_pipe(patience().args(&["gen", "--count", "1000000", "--seed", "1"]));
}

#[test]
fn quiet_is_accepted_and_nothing_but_results_is_printed() {
    // Standard error is a pipe here, so there is no bar with or without --quiet: stderr stays
    // empty either way, and the results are the same.
    for flag in ["--quiet", "-q"] {
        let out = patience()
            .args(&["solve", flag])
            .arg(data("sample.in"))
            .output();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(out.stdout_str(), "0.589314\n");
        assert_eq!(out.stderr_str(), "");
    }
}

/// A file that is not text (here a line of 3 MB, as a binary or a file without newlines has)
/// ends the run with an error naming the line, after the answers before it, instead of reading
/// the line whole into memory.
#[test]
fn a_line_too_long_ends_the_run_with_an_error_naming_it() {
    let mut input = std::fs::read(data("sample.in")).unwrap();
    input.extend(std::iter::repeat_n(b'x', 3_000_000));
    let out = patience().arg("solve").stdin(&input).output();
    assert_eq!(out.stdout_str(), "0.589314\n");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        out.stderr_str()
            .contains("line 10 is longer than 1048576 bytes"),
        "{}",
        out.stderr_str()
    );
}

/// Rough edge 4: a number flag given something it cannot take says what it takes, in words, not
/// in the words of Rust's integer parser ("number would be zero for non-zero type").
#[test]
fn number_flags_say_what_they_take() {
    let sample = data("sample.in");
    let rps = data("rps-sample.in");
    for (args, flag, takes) in [
        (
            &["solve", "--workers", "0", &sample][..],
            "--workers",
            "at least 1",
        ),
        (&["rps", "--workers", "0", &rps], "--workers", "at least 1"),
        (&["serve", "--workers", "0"], "--workers", "at least 1"),
        (
            &["serve", "--max-connections", "0"],
            "--max-connections",
            "at least 1",
        ),
        (
            &["solve", "--workers", "many", &sample],
            "--workers",
            "at least 1",
        ),
        (
            &["solve", "--precision", "18", &sample],
            "--precision",
            "from 0 to 17",
        ),
        (
            &["rps", "--precision=-1", &rps],
            "--precision",
            "from 0 to 17",
        ),
        (
            &["client", "--batch", "0", &sample],
            "--batch",
            "from 1 to 10000",
        ),
        (
            &["rps", "--batch", "10001", &rps],
            "--batch",
            "from 1 to 10000",
        ),
        (
            &["serve", "--max-in-flight", "lots"],
            "--max-in-flight",
            "a whole number",
        ),
        (
            &["serve", "--max-message-bytes", "4MiB"],
            "--max-message-bytes",
            "a whole number",
        ),
        (
            &["serve", "--max-concurrent-streams", "4294967296"],
            "--max-concurrent-streams",
            "at most 4294967295",
        ),
        (&["gen", "--count", "1e3"], "--count", "a whole number"),
    ] {
        let out = patience().args(args).output();
        let stderr = out.stderr_str();
        assert_eq!(out.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
        assert!(stderr.contains(takes), "{args:?}: {stderr}");
        for raw in [
            "non-zero type",
            "invalid digit",
            "is not in",
            "too large",
            "too small",
        ] {
            assert!(!stderr.contains(raw), "{args:?}: {stderr}");
        }
        assert_eq!(out.stdout_str(), "", "{args:?}");
    }
}

/// Rough edge 7: a card twice in a position (the `/` form) is a position's mistake: no word of a
/// 36-card deck, which a position need not be.
#[test]
fn a_duplicate_card_in_a_position_is_worded_for_a_position() {
    let out = patience()
        .arg("solve")
        .stdin("7S 6S / 6C 7S / / / / / / /\n")
        .output();
    assert_eq!(out.code(), Some(1), "{out:?}");
    let line = out.stdout_str();
    assert!(
        line.starts_with(
            "error: deal 1 (line 1): 7S appears twice, at pile 1, position 1 and at pile 2, \
             position 2"
        ),
        "{line}"
    );
    assert!(line.contains("position"), "{line}");
    assert!(!line.contains("36-card"), "{line}");
    // A full deal keeps the deck's wording.
    let sample = std::fs::read_to_string(data("sample.in")).unwrap();
    let out = patience()
        .arg("solve")
        .stdin(sample.replacen("6H", "AS", 1))
        .output();
    assert!(out.stdout_str().contains("36-card deck"), "{out:?}");
}

/// Rough edge 8: a file that is not text (here a NUL byte, then bytes that are not UTF-8) is
/// refused once, naming the file and the line where the text stops, exit status 2; the deals
/// before it are answered. It used to print an `error:` line per line of garbage.
#[test]
fn a_file_that_is_not_text_is_refused_once_naming_its_line() {
    let scratch = Scratch::new("binary");
    let sample = std::fs::read(data("sample.in")).unwrap();
    let mut garbage = Vec::new();
    for i in 0..20_000u32 {
        garbage.extend_from_slice(&i.to_le_bytes());
        garbage.push(b'\n');
    }
    for (name, bad_line) in [
        ("nul.bin", b"AS 9S\0 6C KS\n".to_vec()),
        ("latin1.bin", b"AS 9S 6C K\xd6\n".to_vec()),
    ] {
        let mut bytes = sample.clone();
        bytes.extend_from_slice(b"\n");
        bytes.extend_from_slice(&bad_line);
        bytes.extend_from_slice(&garbage);
        let path = scratch.write(name, &bytes);
        let out = patience().args(&["solve", &path]).output();
        let stderr = out.stderr_str();
        let stdout = out.stdout_str();
        let head: String = stdout.lines().take(3).collect::<Vec<_>>().join("\n");
        assert_eq!(
            out.code(),
            Some(2),
            "{name}: {} lines, starting {head}; {stderr}",
            stdout.lines().count()
        );
        assert_eq!(stdout, "0.589314\n", "{name}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains(&path), "{name}: {stderr}");
        assert!(stderr.contains("line 11"), "{name}: {stderr}");
        assert!(stderr.contains("not text"), "{name}: {stderr}");
    }
}
