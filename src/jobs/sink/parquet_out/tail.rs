//! Where a Parquet writer's bytes go (`parquet_out.rs`): the file, cut back to its kept row
//! groups before the first new byte, or memory, until a checkpoint hands them to an upload.

use std::fs::File;
use std::io::{self, Seek as _, SeekFrom, Write};

/// The writer's bytes: a resume swallows the writer's leading magic (the output has one), and
/// then they go to the file (cut to its kept row groups before the first byte), or to memory
/// until a checkpoint hands them to the upload.
pub struct Tail {
    pub swallow: usize,
    pub to: TailTo,
}

pub enum TailTo {
    File { file: File, cut: Option<u64> },
    Memory(Vec<u8>),
}

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.swallow > 0 {
            let n = self.swallow.min(buf.len());
            self.swallow -= n;
            return Ok(n);
        }
        match &mut self.to {
            TailTo::File { file, cut } => {
                make_cut(file, cut)?;
                file.write(buf)
            }
            TailTo::Memory(bytes) => bytes.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.to {
            TailTo::File { file, .. } => file.flush(),
            TailTo::Memory(_) => Ok(()),
        }
    }
}

pub fn make_cut(file: &mut File, cut: &mut Option<u64>) -> io::Result<()> {
    if let Some(len) = cut.take() {
        file.set_len(len)?;
        file.seek(SeekFrom::Start(len))?;
    }
    Ok(())
}
