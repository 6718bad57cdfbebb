//! Running a tool no one here wrote (kubectl, maturin, node, python) and reading its outcome: the
//! two questions the tests ask of one, in one place.

use std::path::Path;
use std::process::Command;

/// Whether `program args` runs and exits 0: for finding out whether a tool is there.
pub fn succeeds(program: &Path, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Runs `command`, failing the test with its output if it fails; its standard output.
pub fn ran(command: &mut Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
