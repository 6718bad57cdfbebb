//! FIFOs a test feeds: a job reading one cannot finish before the test lets it.

use std::path::Path;
use std::process::Command;

/// A FIFO at `path` that a thread writes `bytes` into once a reader opens it, then holds open
/// until `hold` says (or is dropped): a job reading it cannot finish before then.
pub fn fed_fifo(
    path: &Path,
    bytes: Vec<u8>,
    hold: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<()> {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        use std::io::Write as _;
        if let Ok(mut fifo) = std::fs::OpenOptions::new().write(true).open(&path) {
            // A reader that goes away (the job cancelled) ends the write: not an error here.
            if fifo.write_all(&bytes).is_ok() {
                let _ = hold.recv();
            }
        }
    })
}
