//! A [`Tail`] that is a local file: appended to in place (compressed as its name asks, in members
//! closed at each keep, so that what is synced always decodes), cut back to what a resume kept
//! before the first new byte, or written beside its name and renamed over it when whole.

use std::fs::File;
use std::io::{self, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use super::Tail;
use crate::compressed::{Codec, Encoded};
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::location::beside;

/// An output file being appended to.
pub struct FileTail {
    /// The file, written plain or as compressed members (`--output NAME.gz`, `NAME.zst`).
    file: Encoded<File>,
    path: PathBuf,
    /// Resuming: the length of what is kept, to cut the file to before anything is appended (a
    /// partial last line, a row group the log does not hold, go). Not done at once, so that a
    /// resume refused once the input is read leaves the file as it found it.
    cut: Option<u64>,
    /// Items in the file: those kept and those appended since.
    items: u64,
    /// Appended to since the last sync.
    unsynced: bool,
    /// Written whole (`merge`): the temporary the bytes go to, renamed over `path` when finished.
    temporary: Option<PathBuf>,
}

impl std::fmt::Debug for FileTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTail").finish_non_exhaustive()
    }
}

impl FileTail {
    /// The file `path`, created (or emptied) for a new run.
    pub fn create(path: &Path, codec: Option<Codec>) -> io::Result<FileTail> {
        let file = beneath::open(path, How::Create)?;
        Ok(FileTail::open(file, path, codec, None))
    }

    /// The file `path`, already open as `file`; with `kept`, the first `(len, items)` of it are
    /// kept and what follows them is cut off before the first new byte, or by
    /// [`Tail::finish`].
    pub fn open(
        file: File,
        path: &Path,
        codec: Option<Codec>,
        kept: Option<(u64, u64)>,
    ) -> FileTail {
        FileTail {
            file: Encoded::new(codec, file),
            path: path.to_path_buf(),
            cut: kept.map(|(len, _)| len),
            items: kept.map_or(0, |(_, items)| items),
            unsynced: false,
            temporary: None,
        }
    }

    /// The whole of `path`, written beside it (`NAME.merging`) and renamed over it when
    /// finished: until then an earlier file of the name stays as it was.
    pub fn whole(path: &Path) -> io::Result<FileTail> {
        let temporary = beside(path, ".merging");
        let file = beneath::open(&temporary, How::Create)?;
        Ok(FileTail {
            temporary: Some(temporary),
            ..FileTail::open(file, path, None, None)
        })
    }

    fn make_cut(&mut self) -> io::Result<()> {
        if let Some(len) = self.cut.take() {
            let file = self.file.end_member()?;
            file.set_len(len)?;
            file.seek(SeekFrom::Start(len))?;
            self.unsynced = true;
        }
        Ok(())
    }
}

impl Tail for FileTail {
    fn append(&mut self, bytes: &[u8], items: u64) -> io::Result<()> {
        self.make_cut()?;
        self.file.write_all(bytes)?;
        self.items += items;
        self.unsynced = true;
        Ok(())
    }

    fn keep(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.unsynced) {
            self.file.end_member()?.sync_data()?;
        }
        Ok(())
    }

    fn items(&self) -> u64 {
        self.items
    }

    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.make_cut()?;
        let Some(temporary) = self.temporary.take() else {
            return self.keep();
        };
        let done = self
            .file
            .end_member()
            .and_then(|file| file.sync_all())
            .and_then(|()| beneath::rename(&temporary, &self.path));
        if done.is_err() {
            let _ = beneath::remove_file(&temporary);
        }
        done
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn answers_signals(&self) -> bool {
        true
    }
}
