//! A shard's output file as a *part* of a whole job: complete or visibly not, whatever runs it
//! how often.
//!
//! - `FILE.lock`: every run with `--output FILE` holds a lock on it (`flock`, released when the
//!   process ends, however it ends), so a second run of the same output (a retry, a second pod
//!   for one Kubernetes index) waits for the first to end, says so, and then runs as asked (with
//!   `--resume`, on from what the first wrote): two runs never write FILE at once.
//! - `FILE.done.json`, the completion record: written (a temporary file renamed) once the part
//!   holds every answer of its shard, synced; removed before a run changes FILE in any way. It
//!   names the job (the resume record: flags and inputs, and the inputs' sizes), the shard's range
//!   and items, the bad ones, the run's status, and FILE's length, lines and CRC-32. A part with
//!   no record, or whose bytes do not match it, is incomplete: `--resume` finishes it.
//!
//! A part may be an object, `s3://BUCKET/KEY` (a [`Location`]): its record is the object
//! `KEY.done.json` beside it, removed before a run changes the object (`upload.rs`) and put once
//! the upload is complete and read back. An object shows only once its upload completes, so there
//! is no torn object to guard against; nor is there a lock (two runs of one object part are not
//! kept apart: docs/storage.md).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compressed;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::sink::run_record::{self, Record, RunRecordError};
use crate::jobs::source::input::{ReadThroughError, read_through};
use crate::jobs::source::parquet_in;
use crate::jobs::source::shard::{Range, Shard, ShardPlan};
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::location::{Location, beside};
use crate::jobs::store::record::{self, RecordError, Versioned};
use crate::jobs::store::{FileError, FileOp};

/// The completion record's layout; another version is refused rather than guessed at.
const VERSION: u32 = 1;

/// Why a part could not be named, read, locked or recorded complete: the part (or its lock) named
/// once, the storage's error as the cause.
#[derive(Debug, thiserror::Error)]
pub enum PartError {
    /// A local file the operation failed on.
    #[error(transparent)]
    File(#[from] FileError),
    /// Its name is an `s3://` name that is not a whole URL, said as [`Location::parse`] says it.
    #[error("{0}")]
    Name(String),
    #[error("a part is a file or an object, not standard input")]
    Stdin,
    #[error("cannot read {at}")]
    Read {
        at: Location,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    ReadThrough(#[from] ReadThroughError),
    /// A Parquet part whose rows cannot be counted, with Parquet's words for why.
    #[error("cannot read {at}: {why}")]
    Rows { at: Location, why: String },
    /// The run answered another number of items than the shard's range holds.
    #[error(
        "{output} holds {items} answers where shard {shard} frames {frames} items: an input \
         changed while it was read; it is left incomplete"
    )]
    ItemsChanged {
        output: Location,
        items: u64,
        shard: Shard,
        frames: u64,
    },
    #[error("{output} holds {lines} lines for {items} answers")]
    Lines {
        output: Location,
        lines: u64,
        items: u64,
    },
    #[error(transparent)]
    RunRecord(#[from] RunRecordError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// What `FILE.done.json` holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    pub version: u32,
    /// How the answers were written and for which inputs (the resume record, shard included).
    pub record: Record,
    /// The inputs' sizes in bytes, which set the ranges.
    pub sizes: Vec<u64>,
    pub range: Range,
    /// `error:` lines among the items.
    pub bad: u64,
    /// The run's exit status: 0, or 1 when some item was bad.
    pub status: u8,
    /// The part's bytes: length, lines and CRC-32.
    pub bytes: u64,
    pub lines: u64,
    pub crc32: u32,
}

impl Versioned for Done {
    const VERSION: u32 = VERSION;
    const WHAT: &'static str = "a completion record";
}

/// The place `name` names as a part: a file or an object (standard input is none).
pub fn place(name: &Path) -> Result<Location, PartError> {
    match Location::parse(name).map_err(PartError::Name)? {
        Location::Stdin => Err(PartError::Stdin),
        place => Ok(place),
    }
}

/// A part's bytes, from the start.
pub fn open(place: &Location) -> Result<Box<dyn Read + Send>, PartError> {
    place.open_at(0).map_err(|source| PartError::Read {
        at: place.clone(),
        source,
    })
}

/// Whether a part is there at all (`false`: missing; an unreadable place is an error).
pub fn exists(place: &Location) -> Result<bool, PartError> {
    place.exists().map_err(|source| PartError::Read {
        at: place.clone(),
        source,
    })
}

/// The lock file beside `output` (`NAME.lock`), opened (created if need be) but not taken, and
/// its path: a run writing `output` holds it, a merge checks that none does.
pub fn lock_file(output: &Path) -> Result<(File, PathBuf), PartError> {
    let path = beside(output, ".lock");
    let opened = beneath::open(&path, How::Lock);
    match opened {
        Ok(file) => Ok((file, path)),
        Err(source) => Err(PartError::File(FileError {
            op: FileOp::OpenLock,
            path,
            source,
        })),
    }
}

/// Takes the lock of `output` for this process's life; when another run holds it, `say`s so and
/// waits for it to end.
pub fn lock(output: &Path, say: &dyn Fn(&str)) -> Result<File, PartError> {
    let (file, path) = lock_file(output)?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => say(&format!(
            "patience: another run is writing {} (it holds {}); waiting for it to end",
            output.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(source)) => {
            return Err(PartError::File(FileError {
                op: FileOp::Lock,
                path,
                source,
            }));
        }
    }
    match file.lock() {
        Ok(()) => Ok(file),
        Err(source) => Err(PartError::File(FileError {
            op: FileOp::Lock,
            path,
            source,
        })),
    }
}

/// Records `output` complete: the shard of `plan` answered `items` items, `bad` of them bad.
pub fn complete(
    output: &Location,
    plan: &ShardPlan,
    items: u64,
    bad: u64,
    status: ExitStatus,
) -> Result<(), PartError> {
    if items != plan.range.items {
        return Err(PartError::ItemsChanged {
            output: output.clone(),
            items,
            shard: plan.range.shard,
            frames: plan.range.items,
        });
    }
    let sum = checksum(output)?;
    if sum.lines != items {
        return Err(PartError::Lines {
            output: output.clone(),
            lines: sum.lines,
            items,
        });
    }
    let record = run_record::read_record(output)?.job();
    let done = Done {
        version: VERSION,
        record,
        sizes: plan.sizes.clone(),
        range: plan.range.clone(),
        bad,
        status: status as u8,
        bytes: sum.bytes,
        lines: sum.lines,
        crc32: sum.crc32,
    };
    Ok(record::write(&record::done_of(output), &done)?)
}

/// A part's length, lines (decoded, for a compressed part) and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSum {
    pub bytes: u64,
    pub lines: u64,
    pub crc32: u32,
}

/// Reads the part for its [`PartSum`] (a compressed one twice: its bytes, then its members'
/// lines).
pub fn checksum(place: &Location) -> Result<PartSum, PartError> {
    let mut crc = flate2::Crc::new();
    let mut lines = 0u64;
    let bytes = read_through(open(place)?, place, |chunk| {
        crc.update(chunk);
        lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        Ok::<(), PartError>(())
    })?;
    // A compressed part's lines are its answers' lines, decoded: its members' bytes hold newlines
    // by chance; a Parquet part's are its rows.
    let rows = parquet_in::row_count(place).map_err(|why| PartError::Rows {
        at: place.clone(),
        why,
    })?;
    if let Some(rows) = rows {
        lines = rows;
    } else if let Some(codec) = place.codec_by_name() {
        lines = compressed::complete_members(open(place)?, codec)
            .map_err(|source| PartError::Read {
                at: place.clone(),
                source,
            })?
            .map_or(0, |(_, lines)| lines);
    }
    Ok(PartSum {
        bytes,
        lines,
        crc32: crc.sum(),
    })
}

/// A part's completion record, read back; `None` when there is none (the part is incomplete).
pub fn read_done(output: &Location) -> Result<Option<Done>, RecordError> {
    record::read(&record::done_of(output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    /// Each failure in the words this file has always said it in (written out here by hand, as
    /// the format strings before the errors were typed said them), its cause after it once.
    #[test]
    fn part_errors_say_what_they_always_said() {
        let at = |name: &str| Location::File(PathBuf::from(name));
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let cases: Vec<(PartError, &str)> = vec![
            (
                PartError::Stdin,
                "a part is a file or an object, not standard input",
            ),
            (
                PartError::Read {
                    at: at("p0.txt"),
                    source: denied(),
                },
                "cannot read p0.txt: permission denied",
            ),
            (
                PartError::Rows {
                    at: at("p0.parquet"),
                    why: "not a Parquet file".into(),
                },
                "cannot read p0.parquet: not a Parquet file",
            ),
            (
                PartError::File(FileError {
                    op: FileOp::OpenLock,
                    path: "p0.txt.lock".into(),
                    source: denied(),
                }),
                "cannot open the lock p0.txt.lock: permission denied",
            ),
            (
                PartError::File(FileError {
                    op: FileOp::Lock,
                    path: "p0.txt.lock".into(),
                    source: denied(),
                }),
                "cannot lock p0.txt.lock: permission denied",
            ),
            (
                PartError::ItemsChanged {
                    output: at("p1.txt"),
                    items: 9,
                    shard: Shard { index: 1, count: 4 },
                    frames: 10,
                },
                "p1.txt holds 9 answers where shard 1/4 frames 10 items: an input changed while \
                 it was read; it is left incomplete",
            ),
            (
                PartError::Lines {
                    output: at("p1.txt"),
                    lines: 11,
                    items: 10,
                },
                "p1.txt holds 11 lines for 10 answers",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(in_full(&error), said);
        }
    }
}
