//! How a whole run ends, as the process's exit status: below every stage, since any of them may
//! end a run (an index that cannot be written, a part that cannot be recorded, a merge refused).

use std::process::ExitCode;

/// The outcome of a whole run, as an exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// Every deal or case was answered.
    Ok = 0,
    /// Some deal or case (or a case file's framing) was bad; every good one was answered. For
    /// `health`: the daemon answered, and not SERVING.
    BadInput = 1,
    /// Usage or I/O trouble: some input could not be read at all.
    Trouble = 2,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s as u8)
    }
}
