//! What a deal's line looks like, shared by `solve` and `client` so their outputs are identical.

use std::process::ExitCode;

/// The outcome of a whole run, as an exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Every deal was answered.
    Ok = 0,
    /// Some deal was bad; every good one was answered.
    BadDeal = 1,
    /// Usage or I/O trouble: some input could not be read at all.
    Trouble = 2,
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s as u8)
    }
}

/// One output line (without its newline) for a probability.
pub fn probability_line(p: f64, precision: u8) -> String {
    format!("{:.*}", usize::from(precision), p)
}

/// One output line (without its newline) for a deal that could not be solved.
pub fn error_line(message: &str) -> String {
    format!("error: {message}")
}
