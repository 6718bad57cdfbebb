//! pyarrow and DuckDB from PyPI (`tests/columnar.py`), to read what patience writes as Parquet
//! and Arrow and to write the Parquet it reads, as a data team's tools would. They run in
//! `PATIENCE_VENV` (as `.ci/run` makes it), or `target/tools/venv`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The venv's python with pyarrow and duckdb. Under CI (`PATIENCE_VENV` given) a venv without
/// them fails the test; without, the test is skipped with a note (`None`).
pub fn columnar_python() -> Option<Columnar> {
    let given = std::env::var_os("PATIENCE_VENV");
    let venv = super::s3::venv();
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args(["-c", "import pyarrow, duckdb"])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        ready || given.is_none(),
        "PATIENCE_VENV={} lacks pyarrow or duckdb (.ci/run installs them)",
        venv.display()
    );
    if !ready {
        eprintln!(
            "skipped: no venv with pyarrow and duckdb at {} (.ci/run installs one there; or set \
             PATIENCE_VENV)",
            venv.display()
        );
    }
    ready.then_some(Columnar { python })
}

/// `tests/columnar.py`, run with a python that has pyarrow and duckdb.
#[derive(Debug)]
pub struct Columnar {
    python: PathBuf,
}

/// A table as pyarrow read it: its rows (probabilities as `float.hex()`), and its schema and
/// metadata.
#[derive(Debug)]
pub struct Table {
    pub rows: Vec<Value>,
    pub about: Value,
}

impl Columnar {
    /// The venv's `bin/`, for a `PATH` whose `python3` has pyarrow and duckdb.
    pub fn bin_dir(&self) -> PathBuf {
        self.python
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/columnar.py"))
            .args(args)
            .output()
            .expect("run tests/columnar.py");
        assert!(
            out.status.success(),
            "columnar.py {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    }

    fn table(&self, command: &str, path: &str) -> Table {
        let mut rows: Vec<Value> = self
            .run(&[command, path])
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        let about = rows.pop().expect("the schema line");
        Table { rows, about }
    }

    /// The Parquet file at `path`, as pyarrow reads it.
    pub fn parquet(&self, path: &str) -> Table {
        self.table("rows", path)
    }

    /// The Arrow IPC stream at `path`, as pyarrow reads it.
    pub fn stream(&self, path: &str) -> Table {
        self.table("stream", path)
    }

    /// DuckDB's `count(*)`, `avg(probability)` and every probability (in index order, as
    /// `float.hex()`) of the Parquet file at `path`.
    pub fn duckdb(&self, path: &str) -> Value {
        serde_json::from_str(&self.run(&["duckdb", path])).expect("DuckDB's JSON")
    }

    /// The UVa file `deals` as a Parquet input made by pyarrow at `out` (see columnar.py).
    pub fn write_input(&self, deals: &str, out: &str, row_group: usize) {
        self.run(&["write", deals, out, &row_group.to_string()]);
    }
}
