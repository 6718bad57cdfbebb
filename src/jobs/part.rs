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

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::input::read_through;
use super::location::{Location, beside};
use super::output::ExitStatus;
use super::parquet_in;
use super::record::{self, Versioned};
use super::run_record::{self, Record};
use super::shard::{Range, ShardPlan};
use crate::compressed;

/// The completion record's layout; another version is refused rather than guessed at.
const VERSION: u32 = 1;

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
pub fn place(name: &Path) -> anyhow::Result<Location> {
    match Location::parse(name).map_err(anyhow::Error::msg)? {
        Location::Stdin => bail!("a part is a file or an object, not standard input"),
        place => Ok(place),
    }
}

/// A part's bytes, from the start.
pub fn open(place: &Location) -> anyhow::Result<Box<dyn Read + Send>> {
    place
        .open_at(0)
        .with_context(|| format!("cannot read {place}"))
}

/// Whether a part is there at all (`false`: missing; an unreadable place is an error).
pub fn exists(place: &Location) -> anyhow::Result<bool> {
    place
        .exists()
        .with_context(|| format!("cannot read {place}"))
}

/// The lock file beside `output` (`NAME.lock`), opened (created if need be) but not taken, and
/// its path: a run writing `output` holds it, a merge checks that none does.
pub fn lock_file(output: &Path) -> anyhow::Result<(File, PathBuf)> {
    let path = beside(output, ".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock {}", path.display()))?;
    Ok((file, path))
}

/// Takes the lock of `output` for this process's life; when another run holds it, `say`s so and
/// waits for it to end.
pub fn lock(output: &Path, say: &dyn Fn(&str)) -> anyhow::Result<File> {
    let (file, path) = lock_file(output)?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => say(&format!(
            "patience: another run is writing {} (it holds {}); waiting for it to end",
            output.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(anyhow::Error::new(e).context(format!("cannot lock {}", path.display())));
        }
    }
    file.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// Records `output` complete: the shard of `plan` answered `items` items, `bad` of them bad.
pub fn complete(
    output: &Location,
    plan: &ShardPlan,
    items: u64,
    bad: u64,
    status: ExitStatus,
) -> anyhow::Result<()> {
    if items != plan.range.items {
        bail!(
            "{output} holds {items} answers where shard {} frames {} items: an input changed \
             while it was read; it is left incomplete",
            plan.range.shard,
            plan.range.items
        );
    }
    let sum = checksum(output)?;
    if sum.lines != items {
        bail!("{output} holds {} lines for {items} answers", sum.lines);
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
pub fn checksum(place: &Location) -> anyhow::Result<PartSum> {
    let mut crc = flate2::Crc::new();
    let mut lines = 0u64;
    let bytes = read_through(open(place)?, place, |chunk| {
        crc.update(chunk);
        lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        Ok(())
    })?;
    // A compressed part's lines are its answers' lines, decoded: its members' bytes hold newlines
    // by chance; a Parquet part's are its rows.
    if let Some(rows) =
        parquet_in::row_count(place).map_err(|why| anyhow::anyhow!("cannot read {place}: {why}"))?
    {
        lines = rows;
    } else if let Some(codec) = place.codec_by_name() {
        lines = compressed::complete_members(open(place)?, codec)
            .with_context(|| format!("cannot read {place}"))?
            .map_or(0, |(_, lines)| lines);
    }
    Ok(PartSum {
        bytes,
        lines,
        crc32: crc.sum(),
    })
}

/// A part's completion record, read back; `None` when there is none (the part is incomplete).
pub fn read_done(output: &Location) -> Result<Option<Done>, record::RecordError> {
    record::read(&record::done_of(output))
}
