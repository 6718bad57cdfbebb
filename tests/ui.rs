//! The analysis board (`GET /`): served with its policy, turned off by `--no-ui`, and used in a
//! real browser. The browser part is `tests/ui.py` (headless Chromium driven by Selenium through
//! Debian's chromedriver) against real daemons; every answer it must see is worked out here: the
//! probabilities and the histogram from tests/data's references, what the page must show for a
//! position and for a file from the command line (`patience solve` on standard input), which is
//! the daemon's engine on another path than the page's.
//!
//! Without Chromium, chromedriver or Selenium the browser test says so and is skipped, unless
//! `PATIENCE_REQUIRE_BROWSER` is set (`.ci/run` sets it, after installing them), when their absence
//! fails it. `PATIENCE_UI_SCREENSHOTS=1` makes it save the screenshots of the board and the file
//! view into docs/ (`docs/ui-board.png`, `docs/ui-file.png`).

use crate::common;

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Daemon, Scratch, data, patience, text, wait_or_hang, without_patience_env};
use serde_json::{Value, json};

/// How long the whole browser script may take: it only catches a hang (each of its waits has its
/// own limit, and it takes seconds).
const SCRIPT_LIMIT: Duration = Duration::from_secs(600);

/// What one GET answered: status, headers (names in lower case) and body.
struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `GET PATH` over HTTP/1.1, as a browser asks for a page.
fn get(daemon: &Daemon, path: &str) -> Got {
    let mut stream = std::net::TcpStream::connect(daemon.socket).expect("connect to the daemon");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        daemon.socket
    )
    .expect("send the request");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let answer = String::from_utf8(answer).expect("a text answer");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Got {
        status,
        headers,
        body: body.to_string(),
    }
}

/// Without this change `GET /` was 404: the page is served, whole, with a policy that lets it
/// load nothing from elsewhere; `--no-ui` (or `PATIENCE_NO_UI`) puts the 404 back, and the start
/// line says which.
#[test]
fn the_page_is_served_with_its_policy_and_no_ui_turns_it_off() {
    let daemon = Daemon::start(&[]);
    assert!(
        daemon.start_line.contains("ui=\"on\""),
        "{}",
        daemon.start_line
    );
    let page = get(&daemon, "/?deal=AS+9S");
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let policy = page.header("content-security-policy").expect("a policy");
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    assert!(policy.contains("script-src 'self';"), "{policy}");
    assert!(page.header("etag").is_some());
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert!(
        page.body
            .contains(r#"<script type="module" src="/ui/app.js"></script>"#)
    );
    let script = get(&daemon, "/ui/app.js");
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(get(&daemon, "/ui/nothing.js").status, 404);

    let off = Daemon::start(&["--no-ui"]);
    assert!(off.start_line.contains("ui=\"off\""), "{}", off.start_line);
    let nothing = get(&off, "/");
    assert_eq!(nothing.status, 404, "{}", nothing.body);
    assert!(nothing.body.contains("nothing here"), "{}", nothing.body);
    assert_eq!(get(&off, "/ui/app.js").status, 404);
    let by_env = Daemon::start_with(&[], &[("PATIENCE_NO_UI", "true")], None);
    assert_eq!(get(&by_env, "/").status, 404);
}

/// The browser, its driver and a Python with Selenium, or why the browser test cannot run.
struct Browser {
    python: PathBuf,
    chromium: PathBuf,
    chromedriver: PathBuf,
}

/// `name` on the `PATH`, unless `variable` names it.
fn program(variable: &str, name: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

fn browser() -> Result<Browser, String> {
    let chromium = program("PATIENCE_CHROMIUM", "chromium")
        .ok_or("no chromium on the PATH (Debian: apt-get install chromium)")?;
    let chromedriver = program("PATIENCE_CHROMEDRIVER", "chromedriver")
        .ok_or("no chromedriver on the PATH (Debian: apt-get install chromium-driver)")?;
    let venv = std::env::var_os("PATIENCE_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let selenium = Command::new(&python)
        .args(["-c", "import selenium"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !selenium {
        return Err(format!(
            "no Selenium in the venv {} (.ci/run installs it there; or set PATIENCE_VENV)",
            venv.display()
        ));
    }
    Ok(Browser {
        python,
        chromium,
        chromedriver,
    })
}

/// `patience solve ARGS` on `input` as standard input: what the page must show for it.
fn solve(input: &str, args: &[&str]) -> String {
    let out = patience().arg("solve").args(args).stdin(input).output();
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn solve_json(input: &str, args: &[&str]) -> Vec<Value> {
    solve(input, &[&["--format", "json"], args].concat())
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// A probability as the page prints it: 6 decimals, as `solve` does.
fn six(p: &Value) -> String {
    format!("{:.6}", p.as_f64().expect("a probability"))
}

/// A move list as the page shows it: each move's piles (`1,2`) and odds.
fn moves(analysis: &Value) -> Value {
    let moves = analysis["moves"].as_array().expect("moves");
    moves
        .iter()
        .map(|m| {
            let piles = m["piles"].as_array().expect("piles");
            json!([format!("{},{}", piles[0], piles[1]), six(&m["probability"])])
        })
        .collect()
}

/// A board's `?deal=` value: its cards in input order, `/` between the piles of a position.
fn query(piles: &[Vec<&str>], position: bool) -> String {
    let groups: Vec<String> = piles.iter().map(|p| p.join("+")).collect();
    groups.join(if position { "+/+" } else { "+" })
}

/// Everything `tests/ui.py` must see, worked out without the page.
fn expectations(scratch: &Scratch, token_url: &str, token: &str) -> Value {
    let sample = text("sample.in");
    let cards: Vec<&str> = sample.split_whitespace().collect();
    let piles: Vec<Vec<&str>> = cards.chunks(4).map(<[&str]>::to_vec).collect();
    let analysis = &solve_json(&sample, &["--exact", "--moves", "--line"])[0];
    let probability = text("sample.out6").trim().to_string();
    assert_eq!(six(&analysis["probability"]), probability);

    // The best move, played here: its two piles lose their top cards.
    let best = &analysis["moves"][0];
    let taken: Vec<usize> = best["piles"]
        .as_array()
        .expect("piles")
        .iter()
        .map(|p| p.as_u64().expect("a pile") as usize)
        .collect();
    let mut after = piles.clone();
    for p in &taken {
        after[p - 1].pop();
    }
    let position: Vec<String> = after.iter().map(|p| p.join(" ")).collect();
    let after_analysis = &solve_json(&position.join(" / "), &["--moves"])[0];
    // The move's odds are the probability of the position it leads to.
    assert_eq!(
        six(&after_analysis["probability"]),
        six(&best["probability"])
    );

    // random1000.in: the unwinnable deals and 20 bins of 0.05, from the reference answers.
    let reference: Vec<f64> = text("random1000.out15")
        .lines()
        .map(|l| l.parse().expect("a reference answer"))
        .collect();
    let mut bins = [0u64; 20];
    for p in reference.iter().filter(|p| **p > 0.0) {
        bins[((p * 20.0) as usize).min(19)] += 1;
    }
    let unwinnable = reference.iter().filter(|p| **p == 0.0).count();
    let row = 8;

    // 5,007 deals, the last seven bad-deals.in's (four of them bad): two calls from the page, one
    // file for `solve`.
    let mixed = text("random1000.in").repeat(5)
        + &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad-deals.in"),
        )
        .expect("the bad deals");
    let mixed_file = scratch.write("mixed.in", &mixed);
    let mixed_results = solve_json(&mixed, &[]);
    let bad_errors: Vec<&Value> = mixed_results
        .iter()
        .filter_map(|r| r.get("error"))
        .collect();
    assert_eq!(bad_errors.len(), 4);

    let bad_deal = sample.split_whitespace().collect::<Vec<_>>().join(" ");
    let bad_deal = bad_deal.replacen("QH", "QX", 1);
    let bad_deal_error = solve_json(&bad_deal, &[])[0]["error"].clone();

    // FZU 2145: the sample's second case (Maze and one other player), its reference answer; and
    // the same case with a probability that is not one, as `rps` words it.
    let rps_players = [["0.200", "0.400", "0.400"], ["0.545", "0.091", "0.364"]];
    let rps_answer = text("rps-sample.out10")
        .lines()
        .nth(1)
        .expect("a second case")
        .to_string();
    let rps_bad = patience()
        .args(&["rps", "--format", "json"])
        .stdin("1\n1\n1.5 0.400 0.400\n0.545 0.091 0.364\n")
        .output();
    let rps_bad: Value =
        serde_json::from_slice(&rps_bad.stdout).expect("a JSON line for the bad case");

    // The links docs/ui.md shows are the ones opened.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ui.md"))
        .expect("docs/ui.md");
    let doc_position = "7S+6S+/+6C+6H+/+7C+6D+/+/+/+/+/+/";
    for link in [query(&piles, false).as_str(), doc_position] {
        assert!(
            doc.contains(&format!("/?deal={link}")),
            "docs/ui.md shows /?deal={link}"
        );
    }

    let screenshots = std::env::var_os("PATIENCE_UI_SCREENSHOTS")
        .map(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("docs"));
    json!({
        "deal_query": query(&piles, false),
        "doc_position": doc_position,
        "probability": probability,
        "exact": analysis["exact"],
        "moves": moves(analysis),
        "line_length": analysis["line"].as_array().expect("a line").len(),
        "after": {
            "probability": six(&after_analysis["probability"]),
            "moves": moves(after_analysis),
            "deal_query": query(&after, true),
        },
        "random_file": data("random1000.in"),
        "random_out6": data("random1000.out6"),
        "unwinnable": unwinnable,
        "bins": bins,
        "row": row,
        "row_probability": text("random1000.out6").lines().nth(row).expect("a row"),
        "bad_file": mixed_file,
        "bad_count": "5,007 of 5,007 deals: done",
        "bad_errors": bad_errors,
        "bad_text": solve(&mixed, &[]),
        "bad_json": solve(&mixed, &["--format", "json"]),
        "bad_deal": bad_deal,
        "bad_deal_error": bad_deal_error,
        "rps_players": rps_players,
        "rps_probability": rps_answer,
        "rps_bad": "1.5",
        "rps_bad_error": rps_bad["error"],
        "token_url": token_url,
        "token": token,
        "screenshots": screenshots,
    })
}

/// The issue's checks in a real browser: the sample's board shows 0.589314 and its moves; a move
/// played (by key and by click) shows what `solve` says of the position it leads to, and undo
/// and the URL follow; stepping along the likeliest line clears the table; random1000.in dropped
/// on the file view shows 1,000 results, its 314 unwinnable deals and the histogram of the
/// reference answers, and downloads the judge's expected output byte for byte; a file of 5,007
/// deals with bad ones (sent in two calls) lists their errors as `solve` words them for the
/// whole file; a bad deal and a bad FZU 2145 case are refused in words; the FZU 2145 form gives
/// the reference answer; a daemon with a token makes the page ask for it; a narrow screen needs
/// no sideways scrolling. Each of these fails on a page that gets it wrong (`tests/ui.py`).
#[test]
fn the_board_in_a_real_browser() {
    let tools = match browser() {
        Ok(tools) => tools,
        Err(why) => {
            assert!(
                std::env::var_os("PATIENCE_REQUIRE_BROWSER").is_none(),
                "PATIENCE_REQUIRE_BROWSER is set, but {why}"
            );
            eprintln!("skipped: the browser test needs Chromium and Selenium: {why}");
            return;
        }
    };
    let scratch = Scratch::new("ui");
    let daemon = Daemon::start(&[]);
    let token = "ui-test-token";
    let token_file = scratch.write("token", token);
    let guarded = Daemon::start(&["--auth-token-file", &token_file]);
    let expect = expectations(&scratch, &guarded.addr, token);
    let expect_file = scratch.write(
        "expect.json",
        serde_json::to_vec_pretty(&expect).expect("JSON"),
    );
    let downloads = scratch.join("downloads");
    std::fs::create_dir_all(&downloads).expect("a downloads directory");
    let log = scratch.join("ui.log");
    let mut script = Command::new(&tools.python);
    without_patience_env(&mut script);
    let mut child = script
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui.py"))
        .arg("--url")
        .arg(&daemon.addr)
        .arg("--expect")
        .arg(&expect_file)
        .arg("--downloads")
        .arg(&downloads)
        .arg("--chromium")
        .arg(&tools.chromium)
        .arg("--chromedriver")
        .arg(&tools.chromedriver)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).expect("a log file"))
        .stderr(std::fs::File::create(scratch.join("ui.err")).expect("a log file"))
        .spawn()
        .expect("start tests/ui.py");
    let status = wait_or_hang(&mut child, SCRIPT_LIMIT, "tests/ui.py");
    let out = std::fs::read_to_string(&log).unwrap_or_default();
    let err = std::fs::read_to_string(scratch.join("ui.err")).unwrap_or_default();
    eprintln!("{out}");
    assert!(
        status.success() && out.contains(" passed, 0 failed"),
        "tests/ui.py failed ({status}):\n{out}\n{err}\ndaemon log:\n{}",
        daemon.log_tail()
    );
}
