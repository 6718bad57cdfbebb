//! Where a Parquet writer's bytes wait (`parquet_out.rs`): in memory, until a checkpoint appends
//! them to the output's tail (at most the row group just ended, and the writer's magic).

use std::io::{self, Write};

/// The writer's bytes since the last checkpoint: a resume swallows the writer's leading magic
/// (the output has one).
pub struct Gathered {
    pub swallow: usize,
    pub bytes: Vec<u8>,
}

impl Gathered {
    pub fn new(swallow: usize) -> Gathered {
        Gathered {
            swallow,
            bytes: Vec::new(),
        }
    }
}

impl Write for Gathered {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.swallow > 0 {
            let n = self.swallow.min(buf.len());
            self.swallow -= n;
            return Ok(n);
        }
        self.bytes.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
