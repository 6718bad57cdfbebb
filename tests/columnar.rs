//! Parquet and Arrow as data teams read and write them: pyarrow and DuckDB (PyPI) read the
//! Parquet files and Arrow streams patience writes, and pyarrow writes the Parquet inputs it
//! reads (`tests/columnar.py`). Values are compared to the last bit with the text and JSON
//! answers, and at 6 decimals with the seed solver's (tests/data).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use common::{
    Columnar, Daemon, S3Server, Scratch, Table, columnar_python, data, patience, text,
    wait_for_blocking,
};
use serde_json::Value;

/// An answer as its columns hold it: index, id, the probability's bits, the error.
type Row = (u64, Option<String>, Option<u64>, Option<String>);

fn rows(table: &Table) -> Vec<Row> {
    table
        .rows
        .iter()
        .map(|row| {
            (
                row["index"].as_u64().unwrap(),
                row["id"].as_str().map(str::to_string),
                row["p"].as_u64(),
                row["error"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// The answers of `solve --format json` for `args`, as rows: each probability parsed from its
/// text with Rust's correctly rounded parser (the JSON lines print the shortest text that reads
/// back as the same double).
fn json_rows(args: &[&str]) -> Vec<Row> {
    let out = patience()
        .args(&["solve", "--format", "json"])
        .args(args)
        .output();
    assert!(matches!(out.code(), Some(0 | 1)), "{}", out.stderr_str());
    out.stdout_str()
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            let p = line.split("\"probability\":").nth(1).map(|rest| {
                let number: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
                    .collect();
                number.parse::<f64>().unwrap().to_bits()
            });
            (
                value["index"].as_u64().unwrap(),
                value["id"].as_str().map(str::to_string),
                p,
                value["error"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// `out` ended with status 2, its standard error saying `words`; `what` names the run.
fn refused(out: &common::Output, words: &str, what: &str) {
    assert_eq!(out.code(), Some(2), "{what}: {}", out.stderr_str());
    assert!(
        out.stderr_str().contains(words),
        "{what}: {}",
        out.stderr_str()
    );
}

fn python() -> Option<Columnar> {
    columnar_python()
}

/// random1000 and the hand-made bad deals: 1,000 solved, then good and bad ones mixed.
fn inputs() -> [String; 2] {
    [data("random1000.in"), data("bad-deals.in")]
}

#[test]
fn parquet_answers_are_the_json_answers_to_the_last_bit_as_pyarrow_and_duckdb_read_them() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-out");
    let out = scratch.join("answers.parquet").display().to_string();
    let [random, bad] = inputs();
    let run = patience()
        .args(&[
            "solve", "-q", "--format", "parquet", "--output", &out, &random, &bad,
        ])
        .output();
    // Some deals are bad: status 1, as with text.
    assert_eq!(run.code(), Some(1), "{}", run.stderr_str());
    let table = py.parquet(&out);
    let expected = json_rows(&[&random, &bad]);
    assert_eq!(rows(&table), expected);
    assert!(expected.iter().any(|row| row.3.is_some()), "a bad deal");
    // The first 1,000 at 6 decimals are the seed solver's answers.
    let reference = text("random1000.out6");
    for (line, row) in reference.lines().zip(&expected) {
        let p = f64::from_bits(row.2.unwrap());
        assert_eq!(format!("{p:.6}"), line, "index {}", row.0);
    }
    // The columns' types, and the engine in the file's metadata.
    assert_eq!(
        table.about["schema"],
        serde_json::json!({"index": "uint64", "id": "string", "probability": "double", "error": "string"})
    );
    assert_eq!(table.about["nullable"]["index"], false);
    let engine = format!("patience {}", env!("CARGO_PKG_VERSION"));
    assert_eq!(table.about["metadata"]["patience.engine"], engine.as_str());
    // DuckDB reads the same values, and averages them.
    let duck = py.duckdb(&out);
    assert_eq!(duck["count"].as_u64(), Some(expected.len() as u64));
    let bits: Vec<Option<u64>> = duck["probabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::as_u64)
        .collect();
    assert_eq!(bits, expected.iter().map(|row| row.2).collect::<Vec<_>>());
    let solved: Vec<f64> = expected
        .iter()
        .filter_map(|row| row.2.map(f64::from_bits))
        .collect();
    let mean = solved.iter().sum::<f64>() / solved.len() as f64;
    let avg = duck["avg"].as_f64().unwrap();
    assert!(
        (avg - mean).abs() < 1e-12,
        "DuckDB's avg {avg}, ours {mean}"
    );
}

#[test]
fn a_parquet_input_made_by_pyarrow_is_solved_as_its_text_is_ids_and_bad_rows_in_place() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-in");
    let input = scratch.join("deals.parquet").display().to_string();
    // Row groups of 300: the reader crosses them; a null deal and a bad one at the end.
    py.write_input(&data("random1000.in"), &input, 300);
    let out = patience().args(&["solve", &input]).output();
    assert_eq!(out.code(), Some(1), "{}", out.stderr_str());
    let mut expected = text("random1000.out6");
    expected.push_str(&format!("error: {input}: row 1001: no deal (null)\n"));
    expected.push_str(&format!(
        "error: {input}: row 1002: the deal has 2 cards; a deal has 36 (9 piles of 4)\n"
    ));
    assert_eq!(out.stdout_str(), expected);
    // The ids go on with the answers: in the JSON lines and in the Parquet rows.
    let json = json_rows(&[&input]);
    let answers = scratch.join("answers.parquet").display().to_string();
    let run = patience()
        .args(&[
            "solve", "-q", "--format", "parquet", "--output", &answers, &input,
        ])
        .output();
    assert_eq!(run.code(), Some(1), "{}", run.stderr_str());
    let parquet = rows(&py.parquet(&answers));
    assert_eq!(parquet, json);
    for (i, row) in parquet.iter().enumerate() {
        assert_eq!(row.0, i as u64);
        assert_eq!(row.1.as_deref(), Some(format!("deal-{i}").as_str()));
    }
    // After a text input that fails part-way (a NUL byte after its first deal), the ids stay with
    // their rows: the text's deal has none, the Parquet rows theirs.
    let mut broken = text("sample.in").into_bytes();
    broken.extend_from_slice(b"AS\0");
    let broken = scratch.write("broken.in", broken);
    let out = patience()
        .args(&["solve", "--format", "json", &broken, &input])
        .output();
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    let lines: Vec<Value> = out
        .stdout_str()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1 + json.len());
    assert_eq!(lines[0]["id"], Value::Null);
    for (i, line) in lines[1..].iter().enumerate() {
        assert_eq!(line["index"], i as u64 + 1);
        assert_eq!(line["id"], format!("deal-{i}").as_str());
    }
    // The same file as an object of a real S3 server.
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("tables");
    s3.put_file("tables", "in/deals.parquet", Path::new(&input));
    let from_s3 = s3
        .env(patience().args(&["solve", "s3://tables/in/deals.parquet"]))
        .output();
    assert_eq!(from_s3.code(), Some(1), "{}", from_s3.stderr_str());
    assert_eq!(
        from_s3.stdout_str(),
        expected.replace(&input, "s3://tables/in/deals.parquet")
    );
}

#[test]
fn a_cut_or_foreign_parquet_file_is_refused_in_words_with_status_2() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-bad");
    let input = scratch.join("deals.parquet").display().to_string();
    py.write_input(&data("random1000.in"), &input, 300);
    let bytes = std::fs::read(&input).unwrap();
    let cut = scratch.write("cut.parquet", &bytes[..bytes.len() / 2]);
    // Answers are Parquet, but not deals.
    let answers = scratch.join("answers.parquet").display().to_string();
    let run = patience()
        .args(&[
            "solve",
            "-q",
            "--format",
            "parquet",
            "--output",
            &answers,
            &data("sample.in"),
        ])
        .output();
    assert_eq!(run.code(), Some(0), "{}", run.stderr_str());
    let cases: [(&str, Vec<&str>, &str); 3] = [
        (&cut, vec![], "is not a Parquet file patience reads"),
        (
            &answers,
            vec![],
            "has no column `deal` (its columns: index, id, probability, error)",
        ),
        (
            &data("sample.in"),
            vec!["--input-format", "parquet"],
            "is not a Parquet file patience reads",
        ),
    ];
    for (file, flags, words) in cases {
        let out = patience()
            .args(&["solve"])
            .args(&flags)
            .args(&[file])
            .output();
        refused(&out, &format!("{file}: "), file);
        refused(&out, words, file);
        assert!(out.stdout_str().is_empty(), "{file}: nothing answered");
    }
}

/// The answers a Parquet output's groups' log says are in it: the first number of its last whole
/// line.
fn checkpointed(out: &str) -> u64 {
    let log = std::fs::read_to_string(format!("{out}.resume.groups")).unwrap_or_default();
    log.split_inclusive('\n')
        .rfind(|line| line.ends_with('\n'))
        .and_then(|line| line.split(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// 200,000 random deals (`patience gen --seed 44`), and the Parquet file one uninterrupted run
/// writes of them from standard input, written into `scratch` as `whole.parquet`. Made once per
/// run of the harness for the tests that share them: each is seconds of CPU on shared cores.
fn deals_solved(scratch: &Scratch) -> (&'static [u8], String) {
    static SOLVED: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    let (deals, parquet) = SOLVED.get_or_init(|| {
        let deals = patience()
            .args(&["gen", "--count", "200000", "--seed", "44"])
            .output();
        assert_eq!(deals.code(), Some(0));
        let made = Scratch::new("parquet-whole");
        let whole = made.join("whole.parquet").display().to_string();
        let run = patience()
            .args(&[
                "solve", "-q", "--format", "parquet", "--output", &whole, "-",
            ])
            .stdin(&deals.stdout)
            .output();
        assert_eq!(run.code(), Some(0), "{}", run.stderr_str());
        (deals.stdout, std::fs::read(&whole).unwrap())
    });
    (deals, scratch.write("whole.parquet", parquet))
}

#[test]
fn a_parquet_output_stopped_anywhere_resumes_to_what_one_run_writes() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-resume");
    let (all, whole) = deals_solved(&scratch);
    let expected = rows(&py.parquet(&whole));
    assert_eq!(expected.len(), 200_000);
    let deal_bytes = all.len() / 200_000;
    let args = |out| {
        [
            "solve", "-q", "--format", "parquet", "--output", out, "--resume", "-",
        ]
    };

    // SIGKILL once the first row group is recorded, the input still open: a resume cuts the file
    // back to its record and ends byte for byte as the run that was never stopped.
    let killed = scratch.join("killed.parquet").display().to_string();
    let mut typed = patience().args(&args(&killed)).typed();
    typed.type_in(&all[..150_000 * deal_bytes]);
    wait_for_blocking(
        std::time::Duration::from_secs(120),
        "a row group recorded",
        || (checkpointed(&killed) >= 131_072).then_some(()),
    );
    typed.child.kill().unwrap();
    assert_eq!(typed.child.wait().unwrap().code(), None);
    let resumed = patience().args(&args(&killed)).stdin(all).output();
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr_str());
    assert!(
        std::fs::read(&killed).unwrap() == std::fs::read(&whole).unwrap(),
        "a resumed file is not the one run's"
    );

    // SIGINT: the footer is written, the file read whole as it stands, then resumed.
    let stopped = scratch.join("stopped.parquet").display().to_string();
    let mut typed = patience().args(&args(&stopped)).typed();
    typed.type_in(&all[..140_000 * deal_bytes]);
    wait_for_blocking(
        std::time::Duration::from_secs(120),
        "a row group recorded",
        || (checkpointed(&stopped) >= 131_072).then_some(()),
    );
    let status = Command::new("kill")
        .args(["-INT", &typed.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let said = typed.error_line("stopped with");
    let (_, code, _) = typed.finish("a run stopped by SIGINT");
    assert_eq!(code, Some(130), "{said}");
    let held = rows(&py.parquet(&stopped));
    assert!(
        said.contains(&format!("stopped with {} answers in {stopped}", held.len())),
        "{said}"
    );
    assert_eq!(held[..], expected[..held.len()]);
    let resumed = patience().args(&args(&stopped)).stdin(all).output();
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr_str());
    assert_eq!(rows(&py.parquet(&stopped)), expected);
}

/// The answers a Parquet object's upload record says are in its parts.
fn uploaded(s3: &S3Server, bucket: &str, key: &str) -> u64 {
    s3.get(bucket, &format!("{key}.resume.json"))
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .map_or(0, |record| {
            record["parts"].as_array().map_or(0, |parts| {
                parts.iter().filter_map(|p| p["lines"].as_u64()).sum()
            })
        })
}

#[test]
fn a_parquet_object_killed_mid_upload_resumes_to_the_file_s_bytes() {
    let Some(py) = python() else { return };
    let Some(s3) = S3Server::start() else { return };
    let scratch = Scratch::new("parquet-s3");
    s3.make_bucket("tables");
    let (all, whole) = deals_solved(&scratch);
    let url = "s3://tables/out/answers.parquet";
    let args = [
        "solve",
        "-q",
        "--format",
        "parquet",
        "--upload-part-size",
        "100000",
        "--output",
        url,
        "--resume",
        "-",
    ];
    // Killed once a part holds the first row group, the input still open.
    let mut typed = s3.env(patience().args(&args)).typed();
    typed.type_in(&all[..150_000 * (all.len() / 200_000)]);
    wait_for_blocking(
        std::time::Duration::from_secs(120),
        "a part uploaded",
        || (uploaded(&s3, "tables", "out/answers.parquet") >= 131_072).then_some(()),
    );
    typed.child.kill().unwrap();
    assert_eq!(typed.child.wait().unwrap().code(), None);
    assert_eq!(
        s3.get("tables", "out/answers.parquet"),
        None,
        "not complete yet"
    );
    let resumed = s3.env(patience().args(&args)).stdin(all).output();
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr_str());
    let object = s3.get("tables", "out/answers.parquet").expect("the object");
    assert!(
        object == std::fs::read(&whole).unwrap(),
        "the object is not the file's bytes"
    );
    let copy = scratch.write("copy.parquet", &object);
    assert_eq!(rows(&py.parquet(&copy)).len(), 200_000);
    assert!(s3.uploads("tables").is_empty(), "no upload left open");
}

#[test]
fn parquet_shards_merge_into_the_one_run_s_answers() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-shards");
    let deals = patience()
        .args(&["gen", "--count", "30000", "--seed", "45"])
        .output();
    let input = scratch.write("deals.in", &deals.stdout);
    let whole = scratch.join("whole.parquet").display().to_string();
    let run = patience()
        .args(&[
            "solve", "-q", "--format", "parquet", "--output", &whole, &input,
        ])
        .output();
    assert_eq!(run.code(), Some(0), "{}", run.stderr_str());
    let mut parts = Vec::new();
    for k in 0..3 {
        let part = scratch
            .join(&format!("part-{k}.parquet"))
            .display()
            .to_string();
        let shard = format!("{k}/3");
        let run = patience()
            .args(&[
                "solve", "-q", "--format", "parquet", "--shard", &shard, "--output", &part,
            ])
            .arg(&input)
            .output();
        assert_eq!(run.code(), Some(0), "{}", run.stderr_str());
        parts.push(part);
    }
    let merged = scratch.join("merged.parquet").display().to_string();
    let out = patience()
        .args(&[
            "merge", "--output", &merged, &parts[2], &parts[0], &parts[1],
        ])
        .output();
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert_eq!(rows(&py.parquet(&merged)), rows(&py.parquet(&whole)));
    // Parquet does not go to a terminal.
    let out = patience()
        .args(&["merge", &parts[0], &parts[1], &parts[2]])
        .output();
    refused(
        &out,
        "add --output NAME.parquet",
        "a merge to standard output",
    );
}

/// A Parquet input shards by rows: after a text input, row groups of 300 cut anywhere, the N
/// parts of every N concatenate to the whole run's lines (indexes, ids, the bad rows' numbers),
/// whose Parquet rows are the seed solver's; the parts as Parquet files merge to the whole run's
/// file, and an object of a real S3 server shards as the file does.
#[test]
fn a_parquet_input_shards_by_rows_and_its_parts_make_the_whole_run() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-in-shards");
    let input = scratch.join("deals.parquet").display().to_string();
    py.write_input(&data("random1000.in"), &input, 300);
    let before = data("sample.in");
    // Status 1 where a bad row is among the answers, 0 for a part without one.
    let run = |args: &[&str]| {
        let out = patience().args(args).output();
        assert!(
            matches!(out.code(), Some(0 | 1)),
            "{args:?}: {}",
            out.stderr_str()
        );
        out.stdout_str().to_string()
    };
    let whole = run(&["solve", &before, &input]);
    let mut expected = text("sample.out6");
    expected.push_str(&text("random1000.out6"));
    expected.push_str(&format!("error: {input}: row 1001: no deal (null)\n"));
    expected.push_str(&format!(
        "error: {input}: row 1002: the deal has 2 cards; a deal has 36 (9 piles of 4)\n"
    ));
    assert_eq!(whole, expected);
    let whole_json = run(&["solve", "--format", "json", &before, &input]);
    for n in [2u64, 3, 7] {
        let (mut text_parts, mut json_parts) = (String::new(), String::new());
        for k in 0..n {
            let shard = format!("{k}/{n}");
            text_parts.push_str(&run(&["solve", "--shard", &shard, &before, &input]));
            json_parts.push_str(&run(&[
                "solve", "--format", "json", "--shard", &shard, &before, &input,
            ]));
        }
        assert_eq!(text_parts, whole, "{n} shards");
        assert_eq!(json_parts, whole_json, "{n} shards, JSON");
    }
    // Parquet parts of the Parquet input merge to the whole run's file.
    let answers = scratch.join("whole.parquet").display().to_string();
    run(&[
        "solve", "-q", "--format", "parquet", "--output", &answers, &input,
    ]);
    let mut parts = Vec::new();
    for k in 0..3 {
        let part = scratch.join(&format!("part-{k}.parquet"));
        let part = part.display().to_string();
        let shard = format!("{k}/3");
        run(&[
            "solve", "-q", "--format", "parquet", "--shard", &shard, "--output", &part, &input,
        ]);
        parts.push(part);
    }
    let merged = scratch.join("merged.parquet").display().to_string();
    let out = patience()
        .args(&[
            "merge", "--output", &merged, &parts[1], &parts[2], &parts[0],
        ])
        .output();
    // The whole run's status: a bad row is among the parts'.
    assert_eq!(out.code(), Some(1), "{}", out.stderr_str());
    assert_eq!(rows(&py.parquet(&merged)), rows(&py.parquet(&answers)));
    // The same input as an object.
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("tables");
    s3.put_file("tables", "in/deals.parquet", Path::new(&input));
    let object = "s3://tables/in/deals.parquet";
    let mut from_s3 = String::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let out = s3
            .env(patience().args(&["solve", "--shard", &shard, &before, object]))
            .output();
        assert!(matches!(out.code(), Some(0 | 1)), "{}", out.stderr_str());
        from_s3.push_str(out.stdout_str());
    }
    assert_eq!(from_s3, whole.replace(&input, object));
}

#[test]
fn the_http_api_streams_arrow_to_whoever_accepts_it() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("arrow-http");
    let daemon = Daemon::start(&["--workers", "2"]);
    let url = format!("{}/v1/solve", daemon.addr);
    let [random, bad] = inputs();
    let body = scratch.write(
        "body.in",
        [
            std::fs::read(&random).unwrap(),
            std::fs::read(&bad).unwrap(),
        ]
        .concat(),
    );
    let stream = scratch.join("answers.arrow");
    let head = scratch.join("head");
    let status = Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "120", "-D"])
        .arg(&head)
        .arg("-o")
        .arg(&stream)
        .args([
            "-H",
            "Accept: application/vnd.apache.arrow.stream",
            "--data-binary",
        ])
        .arg(format!("@{body}"))
        .arg(&url)
        .status()
        .expect("curl runs");
    assert!(status.success());
    let head = std::fs::read_to_string(&head).unwrap().to_ascii_lowercase();
    assert!(
        head.contains("content-type: application/vnd.apache.arrow.stream"),
        "{head}"
    );
    let got = rows(&py.stream(&stream.display().to_string()));
    // The values are the command's for the same bytes on standard input.
    let expected = json_rows(&[&body])
        .into_iter()
        .map(|(i, id, p, error)| {
            (
                i,
                id,
                p,
                error.map(|e| e.replacen(&format!("{body}: "), "", 1)),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(got, expected);
    // JSON lines and Arrow columns at once are refused in words.
    let out = Command::new("curl")
        .args(["-sS", "-o", "-", "-w", "\n%{http_code}", "-H"])
        .arg("Accept: application/vnd.apache.arrow.stream")
        .args(["--data-binary", "x"])
        .arg(format!("{url}?format=json"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.ends_with("400") && said.contains("leave out format=json"),
        "{said}"
    );
}

#[test]
fn what_parquet_cannot_do_is_refused_in_words() {
    let scratch = Scratch::new("parquet-refusals");
    let out = scratch.join("a.parquet").display().to_string();
    let sample = data("sample.in");
    let parquet_input = scratch.join("in.parquet").display().to_string();
    let made = patience()
        .args(&[
            "solve",
            "-q",
            "--format",
            "parquet",
            "--output",
            &parquet_input,
            &sample,
        ])
        .output();
    assert_eq!(made.code(), Some(0), "{}", made.stderr_str());
    let cases: [(Vec<&str>, &str); 2] = [
        (
            vec!["solve", "--format", "parquet", &sample],
            "add --output NAME.parquet",
        ),
        (
            vec![
                "solve", "--format", "parquet", "--exact", "--output", &out, &sample,
            ],
            "shown in JSON only",
        ),
    ];
    for (args, words) in cases {
        let run = patience().args(&args).output();
        refused(&run, words, &format!("{args:?}"));
    }
}

/// docs/columnar.md's Parquet example, run as shown in a directory of its own, with the venv's
/// python (DuckDB from PyPI) first on the `PATH`: its count and average are the reference
/// answers'.
#[test]
fn the_parquet_example_runs_as_shown() {
    let Some(py) = python() else { return };
    let reference = common::answers("random1000.out9");
    let mean = reference.iter().sum::<f64>() / reference.len() as f64;
    let section = common::doc_section("docs/columnar.md", "## Parquet answers");
    assert!(
        section.contains(&format!("({}, {mean:.6})", reference.len())),
        "docs/columnar.md's average is not the reference answers' ({mean:.6})"
    );
    let dir = Scratch::for_docs("columnar-doc");
    let path = format!(
        "{}:{}",
        py.bin_dir().display(),
        common::path_with_exe().to_string_lossy()
    );
    common::doc_examples("docs/columnar.md", "## Parquet answers")
        .in_dir(dir.path())
        .env("PATH", &path)
        .at_least(2)
        .run();
}

/// A job the daemon runs writes the same Parquet file `solve` writes: submitted with `patience
/// jobs submit --format parquet`, its output is byte for byte `solve --format parquet`'s, and
/// pyarrow reads the seed solver's answers in it.
#[test]
fn a_daemon_job_writes_the_parquet_file_solve_writes() {
    let Some(py) = python() else { return };
    let scratch = Scratch::new("parquet-job");
    std::fs::copy(data("random1000.in"), scratch.join("deals.in")).unwrap();
    let dir = scratch.path().display().to_string();
    let daemon = Daemon::start(&["--workers", "2", "--jobs-dir", &dir]);
    let submitted = patience()
        .args(&["jobs", "--addr", &daemon.addr, "submit", "deals.in"])
        .args(&[
            "--output",
            "answers.parquet",
            "--format",
            "parquet",
            "--id",
            "pq",
        ])
        .output();
    assert_eq!(submitted.code(), Some(0), "{}", submitted.stderr_str());
    let local = scratch.join("local.parquet").display().to_string();
    let run = patience()
        .args(&[
            "solve",
            "-q",
            "--format",
            "parquet",
            "--output",
            &local,
            &data("random1000.in"),
        ])
        .output();
    assert_eq!(run.code(), Some(0), "{}", run.stderr_str());
    let job = scratch.join("answers.parquet");
    assert!(
        std::fs::read(&job).unwrap() == std::fs::read(&local).unwrap(),
        "the job's Parquet file is not solve's"
    );
    let rows = rows(&py.parquet(&job.display().to_string()));
    for (line, row) in text("random1000.out6").lines().zip(&rows) {
        assert_eq!(format!("{:.6}", f64::from_bits(row.2.unwrap())), line);
    }
    assert_eq!(rows.len(), 1000);
}
