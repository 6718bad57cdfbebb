//! `patience rps` run as a user would: answers against the seed's, error lines in place, exit
//! statuses, standard input, precision, JSON, worker counts, and the documentation's examples.
//!
//! Expected probabilities come only from `tests/data/rps-*.out10` / `.out15` (printed by
//! `reference-rps`, seed 004), from `reference-rps` itself when it is available, or from cases
//! worked by hand. Expected error lines are the reader's messages as its docs specify them.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{
    Output, Scratch, assert_answers, data, doc_examples, parse_number, patience, rps_answers,
    rps_random_cases, survives_a_closed_pipe, text,
};

/// Against `.out10`: 1e-9 for the engine, plus the reference's rounding to 10 decimals.
const TEN_DECIMALS: f64 = 1e-9 + 5e-11;

/// Against `.out15`: the seed's own error in its 15th decimal is up to 8.4e-14 (see
/// `tests/data/README.md`), so 1e-12 leaves room and still checks every printed digit we claim.
const FIFTEEN_DECIMALS: f64 = 1e-12;

/// `patience rps ARGS FILES...`, expected to answer every case.
fn rps_ok(args: &[&str], files: &[String]) -> Output {
    let out = patience()
        .arg("rps")
        .args(args)
        .args(&files_as_str(files))
        .output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "rps {args:?} {files:?}: {out:?}"
    );
    assert_eq!(out.stderr_str(), "", "rps {args:?} {files:?}");
    out
}

fn files_as_str(files: &[String]) -> Vec<&str> {
    files.iter().map(String::as_str).collect()
}

/// The cases of `rps-sample.in`, each as its own lines of text, exactly as written there.
fn sample_cases() -> Vec<String> {
    let text = text("rps-sample.in");
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let count: usize = parse_number(lines.next().expect("a count")) as usize;
    let cases: Vec<String> = (0..count)
        .map(|_| {
            let start = lines.next().expect("a start line");
            let n: usize = start.trim().parse().expect("n");
            let mut case = format!("{start}\n");
            for _ in 0..=n {
                case.push_str(lines.next().expect("a player's line"));
                case.push('\n');
            }
            case
        })
        .collect();
    assert_eq!(cases.len(), 6);
    cases
}

/// A case file: the count `count`, then the cases' text.
fn case_file(count: usize, cases: &[String]) -> String {
    format!("{count}\n{}", cases.concat())
}

/// The line (1-based) where case `k` (0-based) of a file of `cases` starts, the count being line 1.
fn start_line(cases: &[String], k: usize) -> u64 {
    2 + cases[..k]
        .iter()
        .map(|c| c.lines().count() as u64)
        .sum::<u64>()
}

/// The `.out10` lines of a reference file, as text.
fn out10(name: &str) -> Vec<String> {
    text(&format!("{name}.out10"))
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs the sample with its third case (n = 2) replaced by `bad`, from a file, and checks that
/// the output is the reference's with that one line replaced by `error: FILE: case 3 (line L):
/// MESSAGE`, L being the case's start line plus `offset`; and exit status 1.
fn assert_third_case_bad(bad: &str, offset: u64, message: &str) {
    let mut cases = sample_cases();
    cases[2] = bad.to_string();
    let dir = Scratch::new("rps_bad");
    let path = dir.write("bad.in", case_file(cases.len(), &cases));
    let out = patience().arg("rps").arg(&path).output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let mut expected = out10("rps-sample");
    let line = start_line(&cases, 2) + offset;
    expected[2] = format!("error: {path}: case 3 (line {line}): {message}");
    assert_eq!(out.stdout_str(), expected.join("\n") + "\n");
    assert_eq!(
        out.stderr_str(),
        "",
        "a bad case is reported on standard output only"
    );
}

#[test]
fn the_sample_is_answered_within_1e9_of_the_reference() {
    let out = rps_ok(&[], &[data("rps-sample.in")]);
    assert_answers(
        out.stdout_str(),
        &rps_answers("rps-sample.out10"),
        10,
        TEN_DECIMALS,
    );
}

#[test]
fn random120_is_answered_within_1e9_of_the_reference() {
    let out = rps_ok(&[], &[data("rps-random120.in")]);
    assert_answers(
        out.stdout_str(),
        &rps_answers("rps-random120.out10"),
        10,
        TEN_DECIMALS,
    );
}

#[test]
fn the_default_output_is_the_references_digit_for_digit() {
    for name in ["rps-sample", "rps-random120"] {
        let out = rps_ok(&[], &[data(&format!("{name}.in"))]);
        assert_eq!(
            out.stdout_str(),
            text(&format!("{name}.out10")),
            "{name}: not byte-identical to reference-rps"
        );
    }
}

#[test]
fn precision_15_is_within_1e12_of_the_references_15_decimals() {
    for name in ["rps-sample", "rps-random120"] {
        let out = rps_ok(&["--precision", "15"], &[data(&format!("{name}.in"))]);
        assert_answers(
            out.stdout_str(),
            &rps_answers(&format!("{name}.out15")),
            15,
            FIFTEEN_DECIMALS,
        );
    }
}

#[test]
fn precision_sets_the_number_of_decimals() {
    let expected = rps_answers("rps-sample.out15");
    for (precision, decimals) in [("0", 0), ("3", 3), ("17", 17)] {
        let out = rps_ok(&["--precision", precision], &[data("rps-sample.in")]);
        // Half a unit of the last decimal printed, plus the reference's own error.
        let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + FIFTEEN_DECIMALS;
        assert_answers(out.stdout_str(), &expected, decimals, tolerance);
    }
}

fn reference_lines(reference: &Path, digits: &str, path: &str) -> Vec<String> {
    let out = Command::new(reference)
        .args(["--digits", digits, path])
        .output()
        .expect("run reference-rps");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn generated_cases_print_the_references_digits_where_it_prints_a_number() {
    let Some(reference) = common::reference("reference-rps") else {
        return;
    };
    let dir = Scratch::new("rps_reference");
    let path = dir.write("generated.in", rps_random_cases(160, None, 2145));
    let ten = reference_lines(&reference, "10", &path);
    let fifteen = reference_lines(&reference, "15", &path);
    let ours = rps_ok(&[], std::slice::from_ref(&path));
    let ours: Vec<&str> = ours.stdout_str().lines().collect();
    assert_eq!(ours.len(), 160);
    assert_eq!(ten.len(), 160, "reference-rps answered every case");
    let mut compared = 0;
    for (i, ((ours, ten), fifteen)) in ours.iter().zip(&ten).zip(&fifteen).enumerate() {
        let Ok(exact) = fifteen.parse::<f64>() else {
            continue;
        };
        if !exact.is_finite() {
            // The seed's division by zero (nan or inf): its value says nothing.
            continue;
        }
        // Where the seed's own error (below 1e-13) could tip the 10th decimal, compare values.
        let scaled = exact * 1e10;
        if (scaled - scaled.floor() - 0.5).abs() < 1e-2 {
            assert!(
                (parse_number(ours) - exact).abs() <= TEN_DECIMALS,
                "case {}",
                i + 1
            );
            continue;
        }
        assert_eq!(ours, ten, "case {}", i + 1);
        compared += 1;
    }
    assert!(
        compared >= 140,
        "only {compared} cases compared digit for digit"
    );
}

#[test]
fn maze_alone_always_showing_rock_wins_surely_where_the_seed_prints_nan() {
    // Fat brother shows scissors: rock beats it, and Maze is the only one left.
    let out = patience().arg("rps").stdin("1\n0\n1 0 0\n").output();
    assert_eq!(out.stdout_str(), "1.0000000000\n", "{out:?}");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_game_that_can_only_draw_is_worth_0() {
    // Rock, paper and scissors always show, whatever Fat brother does: the game never ends.
    let out = patience()
        .arg("rps")
        .stdin("1\n2\n1 0 0\n0 1 0\n0 0 1\n")
        .output();
    assert_eq!(out.stdout_str(), "0.0000000000\n", "{out:?}");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn probabilities_that_do_not_sum_to_1_cost_their_case_only() {
    assert_third_case_bad(
        "2\n0.100 0.200 0.600\n0.538 0.154 0.308\n0.200 0.700 0.100\n",
        1,
        "Maze's probabilities sum to 0.9; they must sum to 1 (within 0.005)",
    );
}

#[test]
fn a_negative_probability_costs_its_case_only() {
    assert_third_case_bad(
        "2\n0.100 0.200 0.700\n0.538 -0.154 0.308\n0.200 0.700 0.100\n",
        2,
        "player 1's paper: \"-0.154\" is not a probability (want a number from 0 to 1)",
    );
}

#[test]
fn a_token_that_is_not_a_number_costs_its_case_only() {
    assert_third_case_bad(
        "2\n0.100 0.200 0.700\n0.538 0.154 0.308\n0.2OO 0.700 0.100\n",
        3,
        "player 2's rock: \"0.2OO\" is not a number",
    );
}

#[test]
fn more_than_15_other_players_cost_their_case_only() {
    let bad = format!("16\n{}", "0.333 0.333 0.334\n".repeat(17));
    assert_third_case_bad(&bad, 0, "16 other players; at most 15 are supported");
}

#[test]
fn a_truncated_file_answers_the_cases_before_and_ends_with_an_error_line() {
    // Six cases announced; the fifth (n = 4) stops after Maze's line, the sixth is missing.
    let cases = sample_cases();
    let fifth: String = cases[4].lines().take(2).map(|l| format!("{l}\n")).collect();
    let mut file = case_file(6, &cases[..4]);
    file.push_str(&fifth);
    let last_line = file.lines().count();
    let dir = Scratch::new("rps_truncated");
    let path = dir.write("truncated.in", &file);

    let out = patience().arg("rps").arg(&path).output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let mut expected = out10("rps-sample")[..4].to_vec();
    expected.push(format!(
        "error: {path}: case 5: the input ends after line {last_line}, before player 1's line; \
         6 cases were announced"
    ));
    assert_eq!(out.stdout_str(), expected.join("\n") + "\n");
}

#[test]
fn a_missing_file_exits_2_and_the_other_files_are_answered() {
    let dir = Scratch::new("rps_missing");
    let missing = dir.join("no-such-cases.in");
    let out = patience()
        .arg("rps")
        .arg(data("rps-sample.in"))
        .arg(&missing)
        .arg(data("rps-sample.in"))
        .output();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        out.stderr_str().contains("no-such-cases.in"),
        "stderr does not name the file: {:?}",
        out.stderr_str()
    );
    assert_eq!(out.stdout_str(), text("rps-sample.out10").repeat(2));
}

#[test]
fn several_files_are_answered_in_order_each_with_its_own_count() {
    let out = rps_ok(
        &[],
        &[
            data("rps-sample.in"),
            data("rps-random120.in"),
            data("rps-sample.in"),
        ],
    );
    let sample = text("rps-sample.out10");
    assert_eq!(
        out.stdout_str(),
        format!("{sample}{}{sample}", text("rps-random120.out10"))
    );
}

#[test]
fn standard_input_is_read_without_files_and_for_a_dash() {
    let sample = text("rps-sample.in");
    for args in [&[][..], &["-"][..]] {
        let out = patience().arg("rps").args(args).stdin(&sample).output();
        assert_eq!(out.status.code(), Some(0), "rps {args:?}: {out:?}");
        assert_eq!(out.stdout_str(), text("rps-sample.out10"), "rps {args:?}");
    }
    // Between files, in the order given.
    let out = patience()
        .arg("rps")
        .arg(data("rps-random120.in"))
        .arg("-")
        .stdin(&sample)
        .output();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        out.stdout_str(),
        text("rps-random120.out10") + &text("rps-sample.out10")
    );
}

#[test]
fn a_bad_case_on_standard_input_names_no_file() {
    let out = patience()
        .arg("rps")
        .stdin("2\n0\n0.5 0.5 0.5\n0\n1 0 0\n")
        .output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stdout_str(),
        "error: case 1 (line 3): Maze's probabilities sum to 1.5; they must sum to 1 \
         (within 0.005)\n1.0000000000\n"
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    // 200,000 cases answer in 2 MB, far more than a pipe holds, so `rps` is certain to write
    // into the closed pipe.
    let dir = Scratch::new("rps_broken_pipe");
    let path = dir.join("big.in");
    std::fs::write(&path, rps_random_cases(200_000, Some(0), 5)).unwrap();
    survives_a_closed_pipe(patience().arg("rps").arg(&path));
}

#[test]
fn json_prints_one_object_per_case_and_line() {
    let mut cases = sample_cases();
    cases[1] = "1\n0.200 0.400 0.400\n0.545 0.091 x\n".to_string();
    let input = case_file(cases.len(), &cases);
    let text_out = patience().arg("rps").stdin(&input).output();
    let out = patience()
        .args(&["rps", "--format", "json"])
        .stdin(&input)
        .output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let expected = rps_answers("rps-sample.out15");
    let lines: Vec<&str> = out.stdout_str().lines().collect();
    let text_lines: Vec<&str> = text_out.stdout_str().lines().collect();
    assert_eq!(lines.len(), 6);
    for (i, line) in lines.iter().enumerate() {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let object = value.as_object().expect("an object");
        assert_eq!(object["index"], i as u64, "{line}");
        assert_eq!(object.len(), 2, "index and one more field: {line}");
        if i == 1 {
            // The same message as the text format's error line.
            let message = object["error"].as_str().expect("an error message");
            assert_eq!(format!("error: {message}"), text_lines[1]);
            assert!(
                message.starts_with("case 2 (line 6): player 1's scissors"),
                "{message}"
            );
        } else {
            let p = object["probability"].as_f64().expect("a probability");
            assert!((p - expected[i]).abs() <= FIFTEEN_DECIMALS, "{line}");
        }
    }
}

#[test]
fn one_and_two_workers_print_the_same_bytes() {
    let dir = Scratch::new("rps_workers");
    let generated = dir.write("generated.in", rps_random_cases(800, None, 4));
    let files = [data("rps-random120.in"), generated];
    let one = rps_ok(&["--workers", "1"], &files);
    let two = rps_ok(&["--workers", "2"], &files);
    assert!(
        one.stdout == two.stdout,
        "--workers 2 differs from --workers 1"
    );
    assert_eq!(one.stdout_str().lines().count(), 920);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["rps", "--no-such-flag"][..],
        &["rps", "--precision", "18"],
        &["rps", "--workers", "0"],
        &["rps", "--format", "xml"],
        &["rps", "--exact"],
    ] {
        let out = patience().args(args).arg(data("rps-sample.in")).output();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(!out.stderr_str().is_empty(), "{args:?}: {out:?}");
        assert_eq!(out.stdout_str(), "", "{args:?}");
    }
}

/// The examples of `docs/rps.md` (the sample file, an error line in place, JSON) and the README's
/// one print exactly what they show. What they show for the sample file is the seed's output
/// (`tests/data/rps-sample.out10`); the error lines and the JSON case are worked by hand (the sums
/// named are 0.2 + 0.3 + 0.4 and 0.5 * 3; Maze alone showing rock wins surely).
#[test]
fn the_documented_examples_print_what_the_docs_say() {
    let seed = text("rps-sample.out10");
    for (doc, heading) in [
        ("docs/rps.md", "## The command"),
        ("README.md", "## The second game"),
    ] {
        let shown = common::doc_section(doc, heading);
        let example = "$ patience rps tests/data/rps-sample.in\n";
        assert!(
            shown.contains(&format!("{example}{seed}```")),
            "{doc}: the sample's example is not the seed's output"
        );
    }
    doc_examples("docs/rps.md", "## The command")
        .at_least(3)
        .run();
    doc_examples("README.md", "## The second game").run();
}

/// `patience rps` in-process and through daemons, on the same files: every byte and the exit
/// status must match.
fn assert_same_through_daemons(addrs: &[&str], args: &[&str], files: &[String]) {
    let local = patience()
        .arg("rps")
        .args(args)
        .args(&files_as_str(files))
        .output();
    let mut remote_cmd = patience();
    remote_cmd.arg("rps").args(args);
    for addr in addrs {
        remote_cmd.args(&["--addr", addr]);
    }
    let remote = remote_cmd.args(&files_as_str(files)).output();
    assert_eq!(remote.status.code(), local.status.code(), "{remote:?}");
    assert_eq!(remote.stdout_str(), local.stdout_str());
    assert_eq!(remote.stderr_str(), "", "{remote:?}");
}

#[test]
fn through_a_daemon_the_output_is_byte_identical_to_in_process() {
    let daemon = common::Daemon::start(&["--workers", "2"]);
    let files = [data("rps-random120.in"), data("rps-sample.in")];
    assert_same_through_daemons(&[&daemon.addr], &[], &files);
    assert_same_through_daemons(
        &[&daemon.addr],
        &["--format", "json", "--batch", "3"],
        &files,
    );
}

#[test]
fn through_two_daemons_bad_cases_keep_their_place_and_the_exit_status() {
    let a = common::Daemon::start(&["--workers", "1"]);
    let b = common::Daemon::start(&["--workers", "1"]);
    let mut cases = sample_cases();
    cases[2] = "2\n0.5 0.5 0.5\n1 0 0\n0 1 0\n".to_string();
    let dir = Scratch::new("rps_remote_bad");
    let path = dir.write("bad.in", case_file(cases.len(), &cases));
    let out = patience()
        .args(&["rps", "--addr", &a.addr, "--addr", &b.addr, "--batch", "1"])
        .arg(&path)
        .output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines: Vec<&str> = out.stdout_str().lines().collect();
    let expected = out10("rps-sample");
    assert_eq!(lines.len(), expected.len());
    for (i, (got, want)) in lines.iter().zip(&expected).enumerate() {
        if i == 2 {
            assert!(
                got.starts_with("error: ") && got.contains("case 3"),
                "{got}"
            );
        } else {
            assert_eq!(got, want, "case {}", i + 1);
        }
    }
}

#[test]
fn with_no_daemon_up_the_run_fails_with_status_2() {
    let addr = common::DEAD;
    let out = patience()
        .args(&["rps", "--addr", addr, "--give-up-after", "0"])
        .arg(data("rps-sample.in"))
        .output();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stderr_str().contains(addr), "{}", out.stderr_str());
}

/// Rough edge 8, for case files: a file that stops being text is refused once, naming the file
/// and the line, exit status 2, as `solve` does; the cases before it are answered.
#[test]
fn a_file_that_is_not_text_is_refused_once_naming_its_line() {
    let scratch = Scratch::new("rps-binary");
    // Two cases announced; the second's `n` line is a NUL and garbage follows.
    let mut bytes = b"2\n0\n1 0 0\n".to_vec();
    bytes.extend_from_slice(b"\0\x01\x02\n");
    for i in 0..20_000u32 {
        bytes.extend_from_slice(&i.to_le_bytes());
        bytes.push(b'\n');
    }
    let path = scratch.write("cases.bin", &bytes);
    let out = patience().args(&["rps", &path]).output();
    let head: String = out
        .stdout_str()
        .lines()
        .take(3)
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(out.code(), Some(2), "{head}; {}", out.stderr_str());
    // Maze alone, always rock: she is the last one left.
    assert_eq!(out.stdout_str(), "1.0000000000\n");
    let stderr = out.stderr_str();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&path), "{stderr}");
    assert!(stderr.contains("line 4"), "{stderr}");
    assert!(stderr.contains("not text"), "{stderr}");
}

/// Rough edge 6: the top-level help names both games and the subcommand of the second.
#[test]
fn the_top_level_help_names_both_games() {
    for args in [&["--help"][..], &["help"], &["-h"]] {
        let out = patience().args(args).output();
        assert_eq!(out.code(), Some(0), "{args:?}: {out:?}");
        let help = out.stdout_str();
        let about = help.lines().next().unwrap_or("");
        assert!(about.contains("Double Patience"), "{args:?}: {help}");
        assert!(about.contains("rock-paper-scissors"), "{args:?}: {help}");
        assert!(about.contains("FZU 2145"), "{args:?}: {help}");
        assert!(help.contains("\n  rps "), "{args:?}: {help}");
    }
}
