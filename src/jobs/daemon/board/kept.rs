//! What the daemon keeps of a job (its record, `--jobs-dir/.patience-jobs/ID.json`), what it
//! shows of one, and the words a caller's job id must be made of.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::jobs::daemon::spec::{JobSpec, Refusal};
use crate::jobs::store::record::Versioned;

pub(super) const VERSION: u32 = 1;

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
    ];

    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Its place in [`JobState::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn ended(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Cancelled
        )
    }
}

/// What `--jobs-dir/.patience-jobs/ID.json` holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Kept {
    pub(super) version: u32,
    pub(super) id: String,
    pub(super) spec: JobSpec,
    pub(super) state: JobState,
    #[serde(default)]
    pub(super) error: String,
    pub(super) created_ms: i64,
    #[serde(default)]
    pub(super) ended_ms: i64,
    /// Runs started: a second one resumes the output.
    pub(super) runs: u32,
    /// Items answered and bad, as the last run ended.
    #[serde(default)]
    pub(super) done: u64,
    #[serde(default)]
    pub(super) bad: u64,
    /// Input bytes the answers span, as the last run ended: an ended job's progress.
    #[serde(default)]
    pub(super) bytes_done: u64,
    /// The inputs' bytes when the job was created (0: not known, a FIFO's or an older record's):
    /// with `bytes_done`, the work it has waiting.
    #[serde(default)]
    pub(super) bytes_total: u64,
}

impl Versioned for Kept {
    const VERSION: u32 = VERSION;
    const WHAT: &'static str = "a job record";
}

/// A job as it is now.
#[derive(Clone, Debug, PartialEq)]
pub struct JobView {
    pub id: String,
    pub spec: JobSpec,
    pub state: JobState,
    pub items_done: u64,
    pub items_bad: u64,
    pub bytes_done: u64,
    pub bytes_total: Option<u64>,
    pub items_per_second: f64,
    pub eta_seconds: Option<f64>,
    pub error: String,
    pub created_ms: i64,
    pub ended_ms: i64,
}

/// A job id a caller chose: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot (it names
/// a file).
pub(super) fn check_id(id: &str) -> Result<(), Refusal> {
    let fits = (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    match fits {
        true => Ok(()),
        false => Err(Refusal::Invalid {
            field: "job_id".into(),
            message: format!(
                "{id:?} is not a job id: 1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot"
            ),
        }),
    }
}

pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
