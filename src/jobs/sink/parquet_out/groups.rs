//! A Parquet file output's row groups as they are recorded: `NAME.resume.groups` beside it, one
//! line appended per checkpoint once its row groups are synced to the file, and synced itself.
//!
//! A line is `ROWS END GROUP...`: the answers in every row group recorded so far, the byte where
//! the last of them ends (where the footer goes), and the metadata of the row groups this
//! checkpoint took in, each a one-group footer (`layout::group_line`) in base64. The file's
//! footer is every line's groups, in order. So a checkpoint appends about 0.6 KB whatever came
//! before it, where a record holding the whole footer was rewritten whole at each (0.5 KB more
//! every row group: quadratic bytes for a big output).
//!
//! Read back for a resume, the lines are taken up to the first that is cut short (no newline: a
//! kill while appending), does not read, or reaches past the file's end; the log is then
//! rewritten with exactly those, and appended to from there.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use parquet::file::metadata::RowGroupMetaData;

use super::layout::{Layout, groups_of};
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::{FileError, FileOp};

/// Where the row groups of the Parquet file `output` are logged.
pub fn log_of(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".resume.groups");
    PathBuf::from(name)
}

/// What the log holds: the row groups recorded, the answers in them and where they end.
#[derive(Debug, Default)]
pub struct Logged {
    pub groups: Vec<RowGroupMetaData>,
    pub rows: u64,
    pub end: u64,
}

/// The log, open for appending.
pub struct GroupLog {
    file: File,
    path: PathBuf,
}

impl GroupLog {
    /// Starts `output`'s log anew with `logged` in it (nothing, for a new output): one line, or
    /// none.
    pub fn start(output: &Path, logged: &Logged, layout: &Layout) -> Result<GroupLog, FileError> {
        let path = log_of(output);
        let failed = |op, source| FileError {
            op,
            path: path.clone(),
            source,
        };
        let file = beneath::open(&path, How::Create).map_err(|e| failed(FileOp::Create, e))?;
        let mut log = GroupLog { file, path };
        if !logged.groups.is_empty() {
            log.append(&logged.groups, logged.rows, logged.end, layout)?;
        }
        Ok(log)
    }

    /// Appends the line of a checkpoint that took in `groups`, after which `rows` answers are
    /// recorded in all, ending at byte `end`; synced before it returns.
    pub fn append(
        &mut self,
        groups: &[RowGroupMetaData],
        rows: u64,
        end: u64,
        layout: &Layout,
    ) -> Result<(), FileError> {
        let mut line = format!("{rows} {end}");
        for group in groups {
            let bytes = layout.group_line(group).map_err(io::Error::other);
            let bytes = bytes.map_err(|source| FileError {
                op: FileOp::Write,
                path: self.path.clone(),
                source,
            })?;
            line.push(' ');
            line.push_str(&BASE64.encode(bytes));
        }
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|source| FileError {
                op: FileOp::Write,
                path: self.path.clone(),
                source,
            })
    }
}

/// The log of `output`, a file of `len` bytes, read up to its first line that is not whole and
/// true; `None` when there is no log.
pub fn read(output: &Path, len: u64) -> Result<Option<Logged>, FileError> {
    let path = log_of(output);
    let text = match beneath::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(FileError {
                op: FileOp::Read,
                path,
                source,
            });
        }
    };
    let mut logged = Logged::default();
    // Only lines that end: the last one may have been cut by a kill.
    let mut lines = text.split_inclusive(|&b| b == b'\n');
    while let Some(line) = lines.next().and_then(|line| line.strip_suffix(b"\n")) {
        match line_of(line, &logged) {
            Some((groups, rows, end)) if end <= len => {
                logged.groups.extend(groups);
                logged.rows = rows;
                logged.end = end;
            }
            _ => break,
        }
    }
    Ok(Some(logged))
}

/// One line's row groups, rows and end, when it reads and follows what came before it.
fn line_of(line: &[u8], before: &Logged) -> Option<(Vec<RowGroupMetaData>, u64, u64)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    let rows: u64 = words.next()?.parse().ok()?;
    let end: u64 = words.next()?.parse().ok()?;
    let mut groups = Vec::new();
    for word in words {
        let bytes = BASE64.decode(word).ok()?;
        groups.extend(groups_of(&bytes).ok()?);
    }
    let added: u64 = groups.iter().map(|g| g.num_rows().max(0) as u64).sum();
    (before.rows + added == rows && end >= before.end).then_some((groups, rows, end))
}
