//! Opening the inputs named on the command line.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// Large enough that a file's deals are batched well; the reader still holds one line at a time.
const BUFFER: usize = 1 << 20;

/// One input: a file, or standard input.
#[derive(Clone, Debug)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

/// A buffered input whose buffer can be inspected: when it is empty the next read may block, which
/// is when interactive input should see the answers so far.
pub type Reader = BufReader<Box<dyn Read + Send>>;

impl Input {
    /// The inputs for a list of paths: standard input for an empty list or for `-`.
    pub fn from_args(paths: &[PathBuf]) -> Vec<Input> {
        if paths.is_empty() {
            return vec![Input::Stdin];
        }
        paths
            .iter()
            .map(|p| {
                if p == Path::new("-") {
                    Input::Stdin
                } else {
                    Input::File(p.clone())
                }
            })
            .collect()
    }

    pub fn open(&self) -> io::Result<Reader> {
        let inner: Box<dyn Read + Send> = match self {
            Input::Stdin => Box::new(io::stdin()),
            Input::File(path) => Box::new(File::open(path)?),
        };
        Ok(BufReader::with_capacity(BUFFER, inner))
    }

    /// How error lines name this input: files by path, standard input by nothing.
    pub fn prefix(&self) -> String {
        match self {
            Input::Stdin => String::new(),
            Input::File(path) => format!("{}: ", path.display()),
        }
    }
}
