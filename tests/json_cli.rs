//! `patience solve --format json` and the analysis flags, run as a user would. Probabilities are
//! checked against the reference's `.out15` files, fractions against hand-worked positions, lines
//! by replaying them with the rules; `--format text` must stay byte-identical to the default.

use crate::common;

use common::{Output, answers, data, patience};
use serde_json::Value;

/// `patience solve ARGS` with `input` on standard input.
fn solve(args: &[&str], input: &[u8]) -> Output {
    patience().arg("solve").args(args).stdin(input).output()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Replays a JSON line of moves on the piles of a `/` position by the rules; true if it clears.
fn replays(position: &str, line: &Value) -> bool {
    let mut piles: Vec<Vec<String>> = position
        .split('/')
        .map(|g| g.split_whitespace().map(str::to_uppercase).collect())
        .collect();
    for m in line.as_array().expect("a list of moves") {
        let a = m["piles"][0].as_u64().expect("pile") as usize;
        let b = m["piles"][1].as_u64().expect("pile") as usize;
        let rank = m["rank"].as_str().expect("rank");
        if !(1 <= a && a < b && b <= 9) {
            return false;
        }
        for p in [a, b] {
            match piles[p - 1].pop() {
                Some(card) if card.starts_with(rank) => {}
                _ => return false,
            }
        }
    }
    piles.iter().all(Vec::is_empty)
}

#[test]
fn json_lines_carry_index_probability_errors_and_the_analysis_asked_for() {
    let two_thirds = "7S 6S / 6C 6H / 7C 6D / / / / / /";
    let mut input = std::fs::read(data("sample.in")).expect("sample");
    input.extend_from_slice(format!("{two_thirds}\n6S / 6C / 7S\n").as_bytes());
    let out = solve(
        &["--format", "json", "--exact", "--moves", "--line"],
        &input,
    );
    assert_eq!(out.status.code(), Some(1), "a bad deal exits 1");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3);

    let sample = &lines[0];
    assert_eq!(sample["index"], 0);
    let p = sample["probability"].as_f64().expect("a probability");
    assert!((p - answers("sample.out15")[0]).abs() < 1e-12, "{p}");
    assert_eq!(sample["winnable"], true);
    let moves = sample["moves"].as_array().expect("moves");
    let average = moves
        .iter()
        .map(|m| m["probability"].as_f64().expect("odds"))
        .sum::<f64>()
        / moves.len() as f64;
    assert!((average - p).abs() < 1e-12);
    assert_eq!(sample["line"].as_array().map(Vec::len), Some(18));
    let (n, d) = sample["exact"]
        .as_str()
        .and_then(|f| f.split_once('/'))
        .expect("a fraction");
    let (n, d): (f64, f64) = (n.parse().expect("digits"), d.parse().expect("digits"));
    assert!((n / d - p).abs() < 1e-12);

    let gadget = &lines[1];
    assert_eq!(gadget["index"], 1);
    assert_eq!(gadget["exact"], "2/3");
    assert!(replays(two_thirds, &gadget["line"]), "{}", gadget["line"]);

    let bad = &lines[2];
    assert_eq!(bad["index"], 2);
    assert!(bad.get("probability").is_none());
    let error = bad["error"].as_str().expect("an error message");
    assert!(
        error.contains("deal 3 (line 11)") && error.contains("3 piles"),
        "{error}"
    );
}

#[test]
fn plain_json_has_no_optional_fields_and_text_is_unchanged() {
    let input = std::fs::read(data("random1000.in")).expect("corpus");
    let expected = answers("random1000.out15");
    let json = solve(&["--format", "json"], &input);
    assert!(json.status.success());
    let lines = json_lines(&json);
    assert_eq!(lines.len(), expected.len());
    for (i, (line, want)) in lines.iter().zip(&expected).enumerate() {
        assert_eq!(line["index"], i);
        let p = line["probability"].as_f64().expect("a probability");
        assert!((p - want).abs() < 1e-12, "deal {}: {p} vs {want}", i + 1);
        assert_eq!(line["winnable"], *want > 0.0, "deal {}", i + 1);
        for absent in ["exact", "moves", "line", "error"] {
            assert!(line.get(absent).is_none(), "deal {}: {absent}", i + 1);
        }
    }
    let default = solve(&[], &input);
    let text = solve(&["--format", "text"], &input);
    assert!(default.status.success());
    assert_eq!(default.stdout, text.stdout);
}

#[test]
fn analysis_flags_without_json_are_a_usage_error() {
    let input = std::fs::read(data("sample.in")).expect("sample");
    let out = solve(&["--moves"], &input);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--format json"), "{err}");
}

/// The JSON examples of `docs/solving.md` (the sample deal with `--exact --moves`, a three-pile
/// position with `--line`) print exactly what it shows; their values are checked against the
/// reference above.
#[test]
fn the_documented_json_examples_print_what_the_docs_say() {
    common::doc_examples("docs/solving.md", "## Beyond the probability")
        .at_least(2)
        .run();
}
