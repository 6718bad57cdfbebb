//! The Python package's wheel (crates/python), as a user gets it: built by maturin from this
//! checkout once per test run, in the workspace's target directory (so it reuses what the build
//! of the tests compiled), and installed offline with nothing else into a fresh venv. For
//! tests/python_package.rs, and for tests/clients.rs, whose Python client is the wheel's
//! `patience-py`.
//!
//! maturin, abi3audit, pyarrow, polars, DuckDB and grpcio come from the tools venv
//! (`PATIENCE_VENV`, as `.ci/run` makes it, or `target/tools/venv`); under CI a venv without them
//! fails the tests, elsewhere they are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{Scratch, venv};

/// The wheel, and the fresh venv it is installed in.
pub struct Installed {
    pub wheel: PathBuf,
    pub python: PathBuf,
    /// A directory holding only a `sitecustomize.py` that appends the tools venv's packages.
    lend: PathBuf,
    /// The venv and the wheel live in it (a static's: never removed, in the target's tmp).
    _dir: Scratch,
}

/// The checkout's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The target directory this test binary was built in (`target/release/deps/tests-...`), for
/// maturin to build in too.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(3)
        .map_or_else(|| root().join("target"), Path::to_path_buf)
}

pub use super::process::ran;

/// The tools venv's python, with what the tests need; `None` (with a note) where it lacks
/// them and `PATIENCE_VENV` is not set.
fn tools_python() -> Option<PathBuf> {
    let venv = venv();
    let python = venv.join("bin/python");
    let ready = venv.join("bin/maturin").is_file()
        && venv.join("bin/abi3audit").is_file()
        && Command::new(&python)
            .args([
                "-c",
                "import pyarrow, polars, duckdb, grpc, google.rpc.status_pb2",
            ])
            .output()
            .is_ok_and(|out| out.status.success());
    assert!(
        ready || std::env::var_os("PATIENCE_VENV").is_none(),
        "PATIENCE_VENV={} lacks maturin, abi3audit, pyarrow, polars, duckdb or grpcio (.ci/run \
         installs them)",
        venv.display()
    );
    if !ready {
        eprintln!(
            "skipped: no venv with maturin, abi3audit, pyarrow, polars, duckdb and grpcio at {} \
             (.ci/run installs one there; or set PATIENCE_VENV)",
            venv.display()
        );
    }
    ready.then_some(python)
}

/// The tools venv's maturin, where the venv has what the tests need (see [`installed`]).
pub fn maturin() -> Option<PathBuf> {
    tools_python().map(|python| python.with_file_name("maturin"))
}

/// Builds the wheel and installs it into a fresh venv, once per run.
pub fn installed() -> Option<&'static Installed> {
    static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();
    INSTALLED.get_or_init(install).as_ref()
}

fn install() -> Option<Installed> {
    let tools = tools_python()?;
    let dir = Scratch::new("python-package");
    let wheels = dir.join("wheels");
    ran(
        Command::new(tools.with_file_name("maturin"))
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(root().join("crates/python/Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .arg("--interpreter")
            .arg(&tools)
            .env("CARGO_TARGET_DIR", target_dir()),
        "maturin build",
    );
    let built: Vec<PathBuf> = std::fs::read_dir(&wheels)
        .expect("maturin's output directory")
        .map(|entry| entry.expect("a wheel").path())
        .collect();
    let [wheel] = built.as_slice() else {
        panic!("maturin built {built:?}, not one wheel");
    };
    let venv = dir.join("venv");
    ran(
        Command::new(&tools).arg("-m").arg("venv").arg(&venv),
        "python -m venv",
    );
    let python = venv.join("bin/python");
    // Offline and without dependencies: the wheel must need nothing else.
    ran(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-index", "--no-deps"])
            .arg(wheel),
        "pip install the wheel",
    );
    // What lends the tools venv's packages (see `Installed::tools`).
    let lend = dir.join("lend");
    std::fs::create_dir_all(&lend).expect("the lending directory");
    std::fs::write(
        lend.join("sitecustomize.py"),
        "import os, site\nsite.addsitedir(os.environ['PATIENCE_TOOLS_SITE'])\n",
    )
    .expect("sitecustomize.py");
    Some(Installed {
        wheel: wheel.clone(),
        python,
        lend,
        _dir: dir,
    })
}

impl Installed {
    /// The environment that lends the tools venv's packages (pyarrow, polars, DuckDB, grpcio for
    /// the `remote` extra: what a user installs beside the wheel) to a process of the wheel's
    /// venv without installing them into it. They come after the venv's own on `sys.path`
    /// (`site.addsitedir` from a `sitecustomize` on `PYTHONPATH`), so the wheel's `patience`
    /// is the one imported even where the tools venv has another.
    pub fn tools(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        vec![
            ("PYTHONPATH", self.lend.clone().into()),
            ("PATIENCE_TOOLS_SITE", tools_site().into()),
        ]
    }

    /// Runs the venv's python with `args`: with only the wheel installed, or (`with_tools`) with
    /// the tools venv's packages lent ([`Installed::tools`]).
    pub fn python(&self, with_tools: bool, args: &[&str]) -> String {
        let mut command = Command::new(&self.python);
        command.args(args).env_remove("PYTHONPATH");
        if with_tools {
            command.envs(self.tools());
        }
        ran(&mut command, &format!("python {args:?}"))
    }

    /// Runs tests/python_package.py `args` (see [`Installed::python`]).
    pub fn script(&self, with_tools: bool, args: &[&str]) -> String {
        let script = root().join("tests/python_package.py");
        let script = script.to_string_lossy();
        let mut all = vec![script.as_ref()];
        all.extend_from_slice(args);
        self.python(with_tools, &all)
    }
}

/// The tools venv's site-packages.
fn tools_site() -> String {
    ran(
        Command::new(venv().join("bin/python")).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]),
        "the tools venv's site-packages",
    )
    .trim()
    .to_string()
}
