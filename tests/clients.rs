//! The examples shipped beside the crate, run as CI runs them.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Scratch, data, exe, without_patience_env};

/// Copies the directory `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make a directory");
    for entry in std::fs::read_dir(from).expect("read a directory") {
        let path = entry.expect("a directory entry").path();
        let target = to.join(path.file_name().expect("a file name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy a file");
        }
    }
}

/// Every path under `dir`, relative to it, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, into: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read a directory") {
            let path = entry.expect("a directory entry").path();
            into.push(
                path.strip_prefix(root)
                    .expect("under the root")
                    .to_path_buf(),
            );
            if path.is_dir() {
                walk(root, &path, into);
            }
        }
    }
    let mut paths = Vec::new();
    walk(dir, dir, &mut paths);
    paths.sort();
    paths
}

/// Rough edge 9: `examples/python/check.sh` generated its stubs into `examples/python/gen` and
/// Python its bytecode beside them, in the checkout it ran from. It must leave that checkout as
/// it found it: it runs here on a copy of `examples/python` and `proto/`, whose files must be the
/// same afterwards; and the example prints what `patience solve` prints, on the 1,000 random
/// deals and on bad ones. It needs a venv with the example's requirements: `PATIENCE_VENV` (which
/// must then have them), or `target/tools/venv`, which `.ci/run` installs; without one the test
/// says so and is skipped.
#[test]
fn the_python_example_check_leaves_the_checkout_as_it_found_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let given = std::env::var_os("PATIENCE_VENV");
    let venv = given
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/tools/venv"));
    let ready = Command::new(venv.join("bin/python"))
        .args(["-c", "import grpc, grpc_tools"])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        ready || given.is_none(),
        "PATIENCE_VENV={} has no grpcio and grpcio-tools",
        venv.display()
    );
    if !ready {
        eprintln!(
            "skipped: no venv with examples/python/requirements.txt at {} (.ci/run installs one \
             there; or set PATIENCE_VENV)",
            venv.display()
        );
        return;
    }
    let copy = Scratch::new("python-example");
    copy_dir(&root.join("examples/python"), &copy.join("examples/python"));
    copy_dir(&root.join("proto"), &copy.join("proto"));
    let before = listing(copy.path());

    let mut check = Command::new("bash");
    without_patience_env(&mut check);
    let out = check
        .arg(copy.join("examples/python/check.sh"))
        .arg(exe())
        .arg(data("random1000.in"))
        .arg(root.join("examples/python/bad-deals.in"))
        .env("PATIENCE_VENV", &venv)
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("python client: 2 passed, 0 failed"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(listing(copy.path()), before, "{stdout}\n{stderr}");
}
