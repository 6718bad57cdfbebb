//! A local file (or folder) that an operation failed on, in the one set of words every error of
//! the jobs library says it in: `cannot open deals.in: permission denied`. Each module's error
//! takes it in whole, so the file is named once and the storage's error follows as the cause.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What was being done to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    Create,
    Open,
    Read,
    Write,
    /// A folder made (`--jobs-dir`).
    Make,
    /// A part's lock file opened.
    OpenLock,
    Lock,
}

impl fmt::Display for FileOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileOp::Create => "create",
            FileOp::Open => "open",
            FileOp::Read => "read",
            FileOp::Write => "write",
            FileOp::Make => "make",
            FileOp::OpenLock => "open the lock",
            FileOp::Lock => "lock",
        })
    }
}

/// `cannot OP PATH`, the storage's error as its cause.
#[derive(Debug, thiserror::Error)]
#[error("cannot {op} {}", .path.display())]
pub struct FileError {
    pub op: FileOp,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    /// The words, written out by hand as the format strings said them before they met here.
    #[test]
    fn each_operation_reads_as_it_always_has() {
        let cases = [
            (FileOp::Create, "cannot create out.txt: permission denied"),
            (FileOp::Open, "cannot open out.txt: permission denied"),
            (FileOp::Read, "cannot read out.txt: permission denied"),
            (FileOp::Make, "cannot make out.txt: permission denied"),
            (
                FileOp::OpenLock,
                "cannot open the lock out.txt: permission denied",
            ),
            (FileOp::Lock, "cannot lock out.txt: permission denied"),
        ];
        for (op, words) in cases {
            let error = FileError {
                op,
                path: "out.txt".into(),
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            };
            assert_eq!(in_full(&error), words);
        }
    }
}
