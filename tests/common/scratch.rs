//! A scratch directory for a test's own files (inputs, certificates, tokens).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::cli::{Output, run};
use super::data::data;

/// A fresh directory for one test's files under Cargo's `CARGO_TARGET_TMPDIR`, removed when the
/// test passes (kept when it fails, to look at).
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new, empty directory; `name` says whose it is. Tests of one binary run in parallel, so the
    /// name carries the process id and a counter.
    pub fn new(name: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Scratch(dir)
    }

    /// A new directory holding the repository's `tests/` (as a link), where a page's `$` examples
    /// run with the test data at the paths they name.
    pub fn for_docs(name: &str) -> Scratch {
        let dir = Scratch::new(name);
        std::os::unix::fs::symlink(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
            dir.join("tests"),
        )
        .expect("link the repository's tests/ into the scratch directory");
        dir
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path of `name` in the directory (which need not exist).
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes the file `name` and returns its path as a string, ready for an argument list.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> String {
        let path = self.join(name);
        std::fs::write(&path, contents).expect("write a scratch file");
        path.display().to_string()
    }

    /// `copies` copies of random1000.in, one after the other, as one file; its path.
    pub fn repeated_corpus(&self, copies: usize) -> String {
        let one = std::fs::read_to_string(data("random1000.in")).expect("random1000.in");
        self.write(&format!("random{copies}000.in"), one.repeat(copies))
    }

    /// [`Scratch::repeated_corpus`], and what `patience solve` makes of it: the output every
    /// client run on it is compared with.
    pub fn corpus_solved(&self, copies: usize) -> (String, Output) {
        let input = self.repeated_corpus(copies);
        let solve = run(&["solve", &input]);
        (input, solve)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
