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

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::output::ExitStatus;
pub use super::resume::done_path;
use super::resume::{self, Record};
use super::shard::{Range, ShardPlan};

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

/// Where a file's sidecars live: `FILE` with `suffix` added.
pub fn beside(output: &Path, suffix: &str) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Takes the lock of `output` for this process's life; when another run holds it, `say`s so and
/// waits for it to end.
pub fn lock(output: &Path, say: &dyn Fn(&str)) -> anyhow::Result<File> {
    let path = beside(output, ".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock {}", path.display()))?;
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
    output: &Path,
    plan: &ShardPlan,
    items: u64,
    bad: u64,
    status: ExitStatus,
) -> anyhow::Result<()> {
    let shown = output.display();
    if items != plan.range.items {
        bail!(
            "{shown} holds {items} answers where shard {} frames {} items: an input changed \
             while it was read; it is left incomplete",
            plan.range.shard,
            plan.range.items
        );
    }
    let sum = checksum(output)?;
    if sum.lines != items {
        bail!("{shown} holds {} lines for {items} answers", sum.lines);
    }
    let done = Done {
        version: VERSION,
        record: resume::read_record(output)?,
        sizes: plan.sizes.clone(),
        range: plan.range.clone(),
        bad,
        status: status as u8,
        bytes: sum.bytes,
        lines: sum.lines,
        crc32: sum.crc32,
    };
    let mut text = serde_json::to_string(&done).context("cannot write the completion record")?;
    text.push('\n');
    resume::write_atomically(&done_path(output), &text)
}

/// A file's length, lines and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSum {
    pub bytes: u64,
    pub lines: u64,
    pub crc32: u32,
}

/// Reads `path` once for its [`PartSum`].
pub fn checksum(path: &Path) -> anyhow::Result<PartSum> {
    let mut file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut crc = flate2::Crc::new();
    let mut buffer = vec![0u8; 1 << 20];
    let (mut bytes, mut lines) = (0u64, 0u64);
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("cannot read {}", path.display()))
                );
            }
        };
        crc.update(&buffer[..n]);
        bytes += n as u64;
        lines += memchr::memchr_iter(b'\n', &buffer[..n]).count() as u64;
    }
    Ok(PartSum {
        bytes,
        lines,
        crc32: crc.sum(),
    })
}

/// A part's completion record, read back; `None` when there is none (the part is incomplete).
pub fn read_done(output: &Path) -> anyhow::Result<Option<Done>> {
    let path = done_path(output);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display())));
        }
    };
    let done: Done = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a completion record patience wrote",
            path.display()
        )
    })?;
    if done.version != VERSION {
        bail!(
            "{} is of version {} (this patience reads version {VERSION})",
            path.display(),
            done.version
        );
    }
    Ok(Some(done))
}
