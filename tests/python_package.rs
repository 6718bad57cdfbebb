//! The Python package (crates/python), as a user gets it: its wheel built by maturin from this
//! checkout, installed into a fresh venv with nothing else, and driven from Python
//! (tests/python_package.py). The answers are checked against the seed solver's and the error
//! words against what the `patience` binary, another process, prints for the same rows.
//!
//! maturin, pyarrow, polars and DuckDB come from the tools venv (`PATIENCE_VENV`, as `.ci/run`
//! makes it, or `target/tools/venv`); under CI a venv without them fails these tests, elsewhere
//! they are skipped with a note. The wheel is built once per test run, in the workspace's target
//! directory, so it reuses what the build of the tests compiled.

use std::path::Path;
use std::process::Command;

use crate::common::wheel::{installed, maturin, ran, target_dir};
use crate::common::{self, Daemon, Scratch, data};

/// The fenced blocks of a document's section, each with its language.
fn fenced(section: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in section.lines() {
        match (line.strip_prefix("```"), open.take()) {
            (Some(_), Some(block)) => blocks.push(block),
            (Some(lang), None) => open = Some((lang.to_string(), String::new())),
            (None, Some((lang, mut text))) => {
                text.push_str(line);
                text.push('\n');
                open = Some((lang, text));
            }
            (None, None) => {}
        }
    }
    blocks
}

/// One abi3 wheel for CPython 3.9 on, at most 5 MB, whose metadata requires nothing but for the
/// `remote` extra (grpcio and what reads the daemon's status details); abi3audit
/// finds no symbol outside the stable ABI of 3.9 in it (Python here is one version: this is
/// what shows the wheel loads on the others).
/// A source distribution holds all its build reads: `maturin sdist`'s archive, unpacked away
/// from the checkout, has the proto files and passes `cargo check` offline, whose run of the
/// build script compiles them. (The `proto` link in crates/python is what puts them there:
/// without it the build script looks for `../../proto`, which the archive has not.)
#[test]
fn the_source_distribution_builds_away_from_the_checkout() {
    let Some(maturin) = maturin() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Scratch::new("sdist");
    let (dist, unpacked) = (dir.join("dist"), dir.join("unpacked"));
    ran(
        Command::new(maturin)
            .args(["sdist", "--manifest-path"])
            .arg(root.join("crates/python/Cargo.toml"))
            .arg("--out")
            .arg(&dist),
        "maturin sdist",
    );
    let archive = only_entry(&dist, "maturin sdist's output");
    std::fs::create_dir_all(&unpacked).unwrap();
    ran(
        Command::new("tar")
            .arg("xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&unpacked),
        "tar xzf",
    );
    let top = only_entry(&unpacked, "the unpacked archive");
    for proto in ["patience.proto", "jobs.proto"] {
        let path = top.join("crates/python/proto/patience/v1").join(proto);
        assert!(path.is_file(), "{} is not in the archive", path.display());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    ran(
        Command::new(cargo)
            .args([
                "check",
                "--release",
                "--offline",
                "--quiet",
                "--manifest-path",
            ])
            .arg(top.join("crates/python/Cargo.toml"))
            .env("CARGO_TARGET_DIR", target_dir()),
        "cargo check of the unpacked source distribution",
    );
}

/// The one entry of `dir`, which `what` must hold alone.
fn only_entry(dir: &Path, what: &str) -> std::path::PathBuf {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let [entry] = entries.as_slice() else {
        panic!("{what} holds {entries:?}, not one entry");
    };
    entry.clone()
}

#[test]
fn the_wheel_is_one_small_abi3_wheel_with_no_dependency() {
    let Some(installed) = installed() else { return };
    let name = installed.wheel.file_name().unwrap().to_string_lossy();
    assert!(
        name.contains("-cp39-abi3-"),
        "{name} is not an abi3 wheel for 3.9 on"
    );
    let audit = ran(
        Command::new(common::venv().join("bin/abi3audit"))
            .args(["--strict", "--report"])
            .arg(&installed.wheel),
        "abi3audit",
    );
    for want in [
        r#""is_abi3": true"#,
        r#""computed": "3.9""#,
        r#""non_abi3_symbols": []"#,
    ] {
        assert!(audit.contains(want), "abi3audit: {want} not in {audit}");
    }
    let size = std::fs::metadata(&installed.wheel).unwrap().len();
    assert!(size <= 5_000_000, "{name} is {size} bytes, over 5 MB");
    eprintln!("{name}: {size} bytes");
    let requires = ran(
        Command::new(&installed.python).args([
            "-c",
            "from importlib.metadata import requires; print(*requires('patience'), sep='\\n')",
        ]),
        "the wheel's requirements",
    );
    let names: Vec<&str> = requires
        .lines()
        .map(|line| {
            assert!(
                line.ends_with("; extra == 'remote'"),
                "the wheel requires {line} outside the remote extra"
            );
            line.split(['>', '<', '=', ';', ' ']).next().unwrap_or(line)
        })
        .collect();
    assert_eq!(
        names,
        ["grpcio", "protobuf", "googleapis-common-protos"],
        "the remote extra: {requires}"
    );
    // With the tools venv's packages lent, `patience` is still this wheel's, even where the tools
    // venv has one of its own (scripts/interop.py installs one there).
    let imported = installed.python(true, &["-c", "import patience; print(patience.__file__)"]);
    let venv = installed.python.parent().and_then(Path::parent).unwrap();
    assert!(
        Path::new(imported.trim()).starts_with(venv),
        "patience came from {imported}, not from {}",
        venv.display()
    );
}

/// Answers equal the seed solver's through every front end, bad rows carry `patience solve`'s
/// words, and deals generated for this run match reference-solve's answers for them.
#[test]
fn answers_are_the_reference_s_through_lists_pyarrow_polars_and_duckdb() {
    let Some(installed) = installed() else { return };
    let scratch = Scratch::new("python-answers");
    let dir = scratch.path().display().to_string();
    let data_dir = data("");
    let mut args = vec![
        "answers".to_string(),
        data_dir,
        env!("CARGO_BIN_EXE_patience").to_string(),
        dir,
    ];
    if let Some(reference) = common::reference("reference-solve") {
        let generated = common::run(&["gen", "--count", "300", "--seed", "56"]);
        assert!(
            generated.status.success(),
            "patience gen: {:?}",
            generated.status
        );
        let deals_path = scratch.write("generated.in", &generated.stdout);
        let answers = ran(
            Command::new(reference).args(["--digits", "15", &deals_path]),
            "reference-solve",
        );
        args.push(deals_path);
        args.push(scratch.write("generated.out15", answers));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let said = installed.script(true, &args);
    assert_eq!(said.trim(), "answers: ok");
}

/// `game="rps"`: FZU 2145 cases, one per row, equal the seed's answers, and bad cases carry the
/// words `patience rps` prints for them in a case file.
#[test]
fn rps_cases_are_the_reference_s_and_bad_ones_say_what_rps_says() {
    let Some(installed) = installed() else { return };
    let scratch = Scratch::new("python-rps");
    let dir = scratch.path().display().to_string();
    let said = installed.script(
        true,
        &["rps", &data(""), env!("CARGO_BIN_EXE_patience"), &dir],
    );
    assert_eq!(said.trim(), "rps: ok");
}

/// `exact=True`: each fraction is the seed solver's value, and the probability the double
/// nearest it (ties.in, deals whose sums round the wrong way).
#[test]
fn exact_fractions_are_the_reference_s() {
    let Some(installed) = installed() else { return };
    let said = installed.script(false, &["exact", &data("")]);
    assert_eq!(said.trim(), "exact: ok");
}

/// Inputs that cannot be read at all raise, saying why; no Arrow library needed for the rest.
#[test]
fn unreadable_inputs_raise_and_say_why() {
    let Some(installed) = installed() else { return };
    assert_eq!(installed.script(true, &["refusals"]).trim(), "refusals: ok");
}

/// A Solver pickles as its settings on every protocol (Ray, Spark and Dask ship it so).
#[test]
fn a_solver_pickles_as_its_settings() {
    let Some(installed) = installed() else { return };
    assert_eq!(installed.script(false, &["pickle"]).trim(), "pickle: ok");
}

/// A Python thread keeps ticking while a long solve runs: the GIL is released.
#[test]
fn the_gil_is_released_while_solving() {
    let Some(installed) = installed() else { return };
    let said = installed.script(false, &["ticker", &data("")]);
    assert!(said.starts_with("ticker: ok"), "{said}");
    eprintln!("{}", said.trim());
}

/// The README's Python example, run as shown with the wheel and pyarrow, prints what the README
/// shows after it; and the probability shown there is the seed solver's for the UVa sample.
#[test]
fn the_readme_python_example_runs_as_shown() {
    let Some(installed) = installed() else { return };
    let section = common::doc_section("README.md", "## Python");
    let blocks = fenced(&section);
    let at = blocks
        .iter()
        .position(|(lang, _)| lang == "python")
        .expect("a python block in the README's Python section");
    let (code, (lang, shown)) = (&blocks[at].1, &blocks[at + 1]);
    assert_eq!(
        lang, "text",
        "the python block is not followed by its output"
    );
    let reference = common::answers("sample.out15")[0];
    let probability: f64 = shown
        .split("'probability': ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|number| number.parse().ok())
        .expect("a probability in the README's output");
    assert!(
        (probability - reference).abs() <= 1e-12,
        "the README's probability {probability} is not the reference's ({reference})"
    );
    assert_eq!(&installed.python(true, &["-c", code]), shown);
}

/// `patience.connect` through a daemon (another process, started with a token): its answers are
/// the seeds' for deals, cases and exact fractions, bad rows carry the `patience` binary's words,
/// a `Remote` pickles and a wrong token is refused. Without the `remote` extra's grpcio (the
/// fresh venv alone), `connect` names the extra to install.
#[test]
fn connect_answers_are_the_reference_s_through_a_daemon() {
    let Some(installed) = installed() else { return };
    let scratch = Scratch::new("python-connect");
    let dir = scratch.path().display().to_string();
    let token = "tiles-of-the-python-test";
    let token_file = scratch.write("token", format!("{token}\n"));
    let daemon = Daemon::start(&["--workers", "2", "--auth-token-file", &token_file]);
    let said = installed.script(
        true,
        &[
            "connect",
            &daemon.addr,
            token,
            &data(""),
            env!("CARGO_BIN_EXE_patience"),
            &dir,
        ],
    );
    assert_eq!(said.trim(), "connect: ok");
    assert_eq!(
        installed.script(false, &["no-remote"]).trim(),
        "no-remote: ok"
    );
}

/// Whether the tools venv has `modules` (the engines' packages); under CI (`PATIENCE_VENV`) it
/// must, elsewhere the test is skipped with a note.
fn engine_installed(modules: &str) -> bool {
    let ready = Command::new(common::venv().join("bin/python"))
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        ready || std::env::var_os("PATIENCE_VENV").is_none(),
        "PATIENCE_VENV lacks {modules} (.ci/run installs them)"
    );
    if !ready {
        eprintln!("skipped: the tools venv has no {modules} (.ci/run installs them)");
    }
    ready
}

/// `patience.spark.solve` on Spark local[2] (mapInArrow): every row's answer, by id, is the seed
/// solver's, and each bad row's error `patience solve`'s words.
#[test]
fn spark_answers_are_the_reference_s_by_id() {
    let Some(installed) = installed() else { return };
    if !engine_installed("pyspark") {
        return;
    }
    let scratch = Scratch::new("python-spark");
    let dir = scratch.path().display().to_string();
    let said = installed.script(
        true,
        &["spark", &data(""), env!("CARGO_BIN_EXE_patience"), &dir],
    );
    assert_eq!(said.trim(), "spark: ok");
}

/// `patience.dask.solve` on a Dask LocalCluster of 2 workers (map_partitions): every row's
/// answer, by id, is the seed solver's, and each bad row's error `patience solve`'s words.
#[test]
fn dask_answers_are_the_reference_s_by_id() {
    let Some(installed) = installed() else { return };
    if !engine_installed("dask.dataframe, distributed") {
        return;
    }
    let scratch = Scratch::new("python-dask");
    let dir = scratch.path().display().to_string();
    let said = installed.script(
        true,
        &["dask", &data(""), env!("CARGO_BIN_EXE_patience"), &dir],
    );
    assert_eq!(said.trim(), "dask: ok");
}

/// `patience.ray.solve` on `ray.init(num_cpus=2)` (map_batches with a callable class, an actor
/// pool that grows as CPUs are free): every row's answer, by id, is the seed solver's, and each
/// bad row's error `patience solve`'s words; and with a solving actor killed (SIGKILL) mid-run
/// over 100,000 rows, every row is still answered once, with the seed's answer.
#[test]
fn ray_answers_are_the_reference_s_by_id() {
    let Some(installed) = installed() else { return };
    if !engine_installed("ray.data") {
        return;
    }
    let scratch = Scratch::new("python-ray");
    let dir = scratch.path().display().to_string();
    let said = installed.script(
        true,
        &["ray", &data(""), env!("CARGO_BIN_EXE_patience"), &dir],
    );
    // Ray's raylet prints its own lines (the retries) on the same standard output.
    let ok = said
        .lines()
        .find(|line| line.starts_with("ray: ok (an actor killed after "));
    assert!(ok.is_some(), "{said}");
    eprintln!("{}", ok.unwrap_or_default());
}
