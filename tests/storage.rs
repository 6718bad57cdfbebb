//! Where big inputs live: compressed files (gzip, zstd) in and out, through the binary.
//!
//! Inputs are compressed by tools no one here wrote (Debian's `gzip`, libzstd through the `zstd`
//! crate) and named so that only their first bytes can tell; outputs are decoded the same way.
//! Every answer is checked against the reference answers of `tests/data`.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Command;

use crate::common::{HANG_LIMIT, Scratch, Typed, data, patience, poll_blocking, run, text};

/// `bytes` compressed by Debian's gzip.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip (.ci/run installs it)");
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// `bytes` as one zstd frame, by libzstd.
fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 19).unwrap()
}

/// A gzip file decoded by Debian's gzip (which refuses a torn member).
fn gunzip(path: &Path) -> Vec<u8> {
    let out = Command::new("gzip").arg("-dc").arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "gzip -dc {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A zstd file decoded by libzstd, every frame (which must all be whole).
fn unzstd(path: &Path) -> Vec<u8> {
    zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap()
}

#[test]
fn gzip_and_zstd_inputs_are_read_by_their_first_bytes() {
    let dir = Scratch::new("compressed-in");
    let plain = std::fs::read(data("random1000.in")).unwrap();
    let expected = text("random1000.out6");
    // Names that say nothing: only the first bytes tell.
    let gz = dir.write("deals-a.dat", gzip(&plain));
    let zst = dir.write("deals-b.dat", zstd(&plain));
    for file in [&gz, &zst] {
        let out = run(&["solve", file]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
        assert!(out.stdout_str() == expected, "{file}: not the reference");
        let piped = patience()
            .args(&["solve", "-"])
            .stdin(std::fs::read(file).unwrap())
            .output();
        assert_eq!(piped.code(), Some(0), "{}", piped.stderr_str());
        assert!(
            piped.stdout_str() == expected,
            "{file} on stdin: not the reference"
        );
    }
    // Members and frames that follow one another, as `cat a.gz b.gz` makes: one stream.
    let half = plain.len() / 2;
    let cut = half + plain[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let (first, second) = plain.split_at(cut);
    let two_gz = dir.write("two.gz", [gzip(first), gzip(second)].concat());
    let two_zst = dir.write("two.zst", [zstd(first), zstd(second)].concat());
    for file in [&two_gz, &two_zst] {
        let out = run(&["solve", file]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
        assert!(out.stdout_str() == expected, "{file}: not the reference");
    }
    // The client reads them the same way (the daemon solving).
    let daemon = crate::common::Daemon::start(&[]);
    let out = run(&["client", "--addr", &daemon.addr, &gz, &zst]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(
        out.stdout_str() == expected.repeat(2),
        "client: not the reference"
    );
}

#[test]
fn a_damaged_compressed_input_is_an_error_in_words() {
    let dir = Scratch::new("compressed-bad");
    let plain = std::fs::read(data("random1000.in")).unwrap();
    let whole = gzip(&plain);
    let torn = dir.write("torn.gz", &whole[..whole.len() / 2]);
    let out = run(&["solve", &torn]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    assert!(
        out.stderr_str()
            .contains("torn.gz: its gzip data is damaged or cut short ("),
        "{}",
        out.stderr_str()
    );
    // Every deal before the tear is answered, as with a file cut short.
    let expected = text("random1000.out6");
    assert!(!out.stdout_str().is_empty());
    assert!(
        expected.starts_with(out.stdout_str()),
        "answers before the tear"
    );
    // A shard cannot start in the middle of a compressed file: said, not guessed at.
    let gz = dir.write("deals.in.gz", &whole);
    let out = run(&["solve", "--shard", "1/2", &gz]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    assert!(
        out.stderr_str().contains("needs uncompressed inputs: ")
            && out.stderr_str().contains("deals.in.gz is gzip-compressed"),
        "{}",
        out.stderr_str()
    );
}

#[test]
fn outputs_named_gz_or_zst_are_written_compressed() {
    let dir = Scratch::new("compressed-out");
    let input = data("random1000.in");
    let expected = text("random1000.out6");
    let gz = dir.join("answers.txt.gz");
    let zst = dir.join("answers.txt.zst");
    for (out, decode) in [(&gz, gunzip as fn(&Path) -> Vec<u8>), (&zst, unzstd)] {
        let ran = run(&[
            "solve",
            "-q",
            "--output",
            &out.display().to_string(),
            &input,
        ]);
        assert_eq!(ran.code(), Some(0), "{}", ran.stderr_str());
        assert!(decode(out) == expected.as_bytes(), "{}", out.display());
        // Compressed, not merely named so: the answers compress several times over.
        let size = std::fs::metadata(out).unwrap().len();
        assert!(size * 2 < expected.len() as u64, "{} bytes", size);
    }
}

/// The complete lines of a compressed file written so far, decoding member by member and
/// stopping at a member still being written.
fn decoded_lines(path: &Path) -> usize {
    let Ok(bytes) = std::fs::read(path) else {
        return 0;
    };
    let mut text = Vec::new();
    let decoded = if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut text)
    } else {
        zstd::stream::read::Decoder::new(&bytes[..])
            .and_then(|mut decoder| decoder.read_to_end(&mut text))
    };
    // A member being written decodes in part, or not at all; only its whole lines count then.
    let _ = decoded;
    text.iter().filter(|&&b| b == b'\n').count()
}

/// A run writing `out` (gzip or zstd) killed by SIGKILL twice, once with half a member torn off
/// its end as a write cut short leaves it, resumed each time: the file decodes to what one run
/// prints, byte for byte, and holds nothing torn.
#[test]
fn compressed_outputs_killed_and_resumed_write_what_one_run_writes() {
    let dir = Scratch::new("compressed-resume");
    let deals = text("random1000.in");
    let lines: Vec<&str> = deals.lines().filter(|l| !l.trim().is_empty()).collect();
    let items: Vec<String> = lines.chunks(9).map(|d| d.join("\n") + "\n").collect();
    let expected = text("random1000.out6");
    for name in ["answers.gz", "answers.zst"] {
        let out = dir.join(name);
        let args = [
            "solve",
            "--output",
            &out.display().to_string(),
            "--resume",
            "-",
        ];
        for (stop, torn) in [(300, false), (700, true)] {
            let mut typed: Typed = patience().args(&args).typed();
            typed.type_in(items[..stop].concat().as_bytes());
            poll_blocking(HANG_LIMIT, || (decoded_lines(&out) >= stop).then_some(()))
                .expect("the answers typed so far reach the file");
            typed.type_in(&items[stop].as_bytes()[..20]);
            typed.child.kill().unwrap();
            typed.child.wait().unwrap();
            if torn {
                // Half of one more member: what a process killed mid-write leaves.
                let member = match name.ends_with(".gz") {
                    true => gzip(b"0.123456\n0.5\n"),
                    false => zstd(b"0.123456\n0.5\n"),
                };
                let mut file = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
                file.write_all(&member[..member.len() / 2]).unwrap();
            }
        }
        let last = patience().args(&args).stdin(items.concat()).output();
        assert_eq!(last.code(), Some(0), "{}", last.stderr_str());
        let decoded = match name.ends_with(".gz") {
            true => gunzip(&out),
            false => unzstd(&out),
        };
        assert!(
            decoded == expected.as_bytes(),
            "{name}: not one run's answers"
        );
    }
}
