//! Where big inputs live: compressed files (gzip, zstd) in and out, through the binary.
//!
//! Inputs are compressed by tools no one here wrote (Debian's `gzip`, libzstd through the `zstd`
//! crate) and named so that only their first bytes can tell; outputs are decoded the same way.
//! Every answer is checked against the reference answers of `tests/data`.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Command;

use crate::common::{
    HANG_LIMIT, S3Server, Scratch, Typed, data, doc_examples, doc_section, patience, poll_blocking,
    run, text,
};

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

/// `patience ARGS` configured for `s3`, run to its end.
fn on(s3: &S3Server, args: &[&str]) -> crate::common::Output {
    s3.env(patience().args(args)).output()
}

/// The record beside an object being uploaded: its parts and their lines.
fn parts_recorded(s3: &S3Server, bucket: &str, key: &str) -> (usize, u64) {
    let Some(bytes) = s3.get(bucket, &format!("{key}.resume.json")) else {
        return (0, 0);
    };
    let record: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let parts = record["parts"].as_array().unwrap();
    let lines = parts.iter().map(|p| p["lines"].as_u64().unwrap()).sum();
    (parts.len(), lines)
}

#[test]
fn solve_client_and_shards_read_and_write_objects_as_local_files() {
    let Some(s3) = S3Server::start() else { return };
    let dir = Scratch::new("s3-roundtrip");
    s3.make_bucket("deals");
    let plain = std::fs::read(data("random1000.in")).unwrap();
    let expected = text("random1000.out6");
    s3.put_file(
        "deals",
        "in/random1000.in",
        Path::new(&data("random1000.in")),
    );
    let gz = dir.write("r.gz", gzip(&plain));
    s3.put_file("deals", "in/random1000.gz", Path::new(&gz));
    let zst = dir.write("r.zst", zstd(&plain));
    s3.put_file("deals", "in/random1000.zst", Path::new(&zst));
    for input in ["in/random1000.in", "in/random1000.gz", "in/random1000.zst"] {
        let out = on(&s3, &["solve", &format!("s3://deals/{input}")]);
        assert_eq!(out.code(), Some(0), "{input}: {}", out.stderr_str());
        assert!(out.stdout_str() == expected, "{input}: not the reference");
    }
    // Out to the store: the object is the bytes solve prints, and no upload is left open.
    let out = on(
        &s3,
        &[
            "solve",
            "-q",
            "s3://deals/in/random1000.gz",
            "--output",
            "s3://deals/out/solved.txt",
        ],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(s3.get("deals", "out/solved.txt").unwrap() == expected.as_bytes());
    // Compressed on the way out: a gzip object that Python's gzip decodes to the same answers.
    let out = on(
        &s3,
        &[
            "solve",
            "-q",
            "s3://deals/in/random1000.in",
            "--output",
            "s3://deals/out/solved.txt.gz",
            "--upload-part-size",
            "2000",
        ],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    let object = dir.join("solved.txt.gz");
    std::fs::write(&object, s3.get("deals", "out/solved.txt.gz").unwrap()).unwrap();
    assert!(gunzip(&object) == expected.as_bytes(), "the gzip object");
    // The client, with a daemon solving, the same way.
    let daemon = crate::common::Daemon::start(&[]);
    let out = on(
        &s3,
        &[
            "client",
            "-q",
            "--addr",
            &daemon.addr,
            "s3://deals/in/random1000.zst",
            "--output",
            "s3://deals/out/client.txt",
        ],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(s3.get("deals", "out/client.txt").unwrap() == expected.as_bytes());
    // Shards of an object read their ranges (ranged GETs) and make the whole.
    let mut whole = String::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let out = on(
            &s3,
            &["solve", "--shard", &shard, "s3://deals/in/random1000.in"],
        );
        assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
        whole.push_str(out.stdout_str());
    }
    assert!(whole == expected, "the shards of an object");
    assert!(s3.uploads("deals").is_empty(), "{:?}", s3.uploads("deals"));
}

/// `rps` reads its case files from objects and writes its answers to one, as from and to local
/// files: in-process and through a daemon, byte for byte what `rps` prints for the local file
/// (which tests/rps_cli.rs holds to the reference answers).
#[test]
fn rps_reads_and_writes_objects_as_local_files() {
    let Some(s3) = S3Server::start() else { return };
    let dir = Scratch::new("s3-rps");
    s3.make_bucket("cases");
    let local = patience()
        .args(&["rps", &data("rps-random120.in")])
        .output();
    assert_eq!(local.code(), Some(0), "{}", local.stderr_str());
    let zst = dir.write(
        "r.zst",
        zstd(&std::fs::read(data("rps-random120.in")).unwrap()),
    );
    s3.put_file("cases", "random120.zst", Path::new(&zst));
    let out = on(&s3, &["rps", "s3://cases/random120.zst"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(out.stdout == local.stdout, "rps from an object");
    let daemon = crate::common::Daemon::start(&[]);
    let out = on(
        &s3,
        &[
            "rps",
            "-q",
            "--addr",
            &daemon.addr,
            "s3://cases/random120.zst",
            "--output",
            "s3://cases/answers.txt",
        ],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(
        s3.get("cases", "answers.txt").unwrap() == local.stdout,
        "rps through a daemon into an object"
    );
}

/// Shards of an object written to objects (`--shard K/N --output s3://...`), then merged from
/// the store to the store, to a file and to standard output: each is byte for byte what `solve`
/// prints for the local file (itself the reference answers). A part missing, incomplete or changed
/// since its shard ended is refused in words with status 2, and the refused merge leaves no object.
#[test]
fn shards_write_parts_to_objects_and_merge_joins_them_from_the_store() {
    let Some(s3) = S3Server::start() else { return };
    let dir = Scratch::new("s3-merge");
    s3.make_bucket("jobs");
    let input = data("random1000.in");
    s3.put_file("jobs", "in/deals.in", Path::new(&input));
    let solved = run(&["solve", &input]);
    assert_eq!(solved.code(), Some(0), "{}", solved.stderr_str());
    let expected = solved.stdout_str().to_string();
    assert!(
        expected == text("random1000.out6"),
        "solve: not the reference"
    );
    let part = |k: usize| format!("s3://jobs/parts/part-{k}.out");
    let shard = |k: usize, more: &[&str]| {
        let (shard, output) = (format!("{k}/3"), part(k));
        let mut args = vec!["solve", "-q", "--shard", &shard, "--output", &output];
        // Parts of 1,000 bytes (moto takes parts under S3's 5 MiB): several per shard.
        args.extend_from_slice(&["--upload-part-size", "1000", "s3://jobs/in/deals.in"]);
        args.extend_from_slice(more);
        let out = on(&s3, &args);
        assert_eq!(out.code(), Some(0), "shard {k}: {}", out.stderr_str());
    };
    for k in 0..3 {
        shard(k, &[]);
        let done = s3
            .get("jobs", &format!("parts/part-{k}.out.done.json"))
            .expect("a completion record beside the part");
        let done: serde_json::Value = serde_json::from_slice(&done).unwrap();
        assert_eq!(done["range"]["shard"]["index"], k, "{done}");
    }
    let parts = [part(2), part(0), part(1)];
    let merge = |output: Option<&str>, parts: &[&str]| {
        let mut args = vec!["merge"];
        if let Some(output) = output {
            args.extend_from_slice(&["--output", output]);
        }
        args.extend_from_slice(&["--upload-part-size", "1000"]);
        args.extend_from_slice(parts);
        on(&s3, &args)
    };
    let given: Vec<&str> = parts.iter().map(String::as_str).collect();
    let out = merge(Some("s3://jobs/deals.out"), &given);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(
        s3.get("jobs", "deals.out").unwrap() == expected.as_bytes(),
        "the merged object is not solve's output"
    );
    let local = dir.join("deals.out");
    let out = merge(Some(&local.display().to_string()), &given);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(
        std::fs::read_to_string(&local).unwrap() == expected,
        "the merged file"
    );
    let out = merge(None, &given);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(out.stdout_str() == expected, "the merge on standard output");

    let refused = |parts: &[&str], words: &str| {
        let out = merge(Some("s3://jobs/again.out"), parts);
        assert_eq!(out.code(), Some(2), "{parts:?}: {}", out.stderr_str());
        assert!(
            out.stderr_str().contains(words),
            "{parts:?}: {}",
            out.stderr_str()
        );
        assert_eq!(s3.get("jobs", "again.out"), None, "a refused merge wrote");
    };
    let (p0, p1, p2) = (part(0), part(1), part(2));
    refused(
        &[&p0, &p2],
        "shard 1 of 3 is missing: none of the parts given is shard 1",
    );
    refused(
        &[&p0, "s3://jobs/parts/part-9.out", &p2],
        "s3://jobs/parts/part-9.out is missing: run its shard (with --output \
         s3://jobs/parts/part-9.out)",
    );
    // A part whose completion record is gone (its shard killed before the end, say) is
    // incomplete; its shard run again with --resume finishes it, and the merge goes on.
    s3.remove("jobs", "parts/part-1.out.done.json");
    refused(
        &[&p0, &p1, &p2],
        "s3://jobs/parts/part-1.out is incomplete: it has no completion record \
         (s3://jobs/parts/part-1.out.done.json)",
    );
    shard(1, &["--resume"]);
    // A part changed after its shard ended: its bytes are not the ones recorded.
    let changed = dir.write("changed.out", expected.replace("0.5", "0.4"));
    s3.put_file("jobs", "parts/part-1.out", Path::new(&changed));
    refused(
        &[&p0, &p1, &p2],
        "s3://jobs/parts/part-1.out is not the part its completion record describes",
    );
    shard(1, &[]);
    let out = merge(Some("s3://jobs/again.out"), &[&p0, &p1, &p2]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(s3.get("jobs", "again.out").unwrap() == expected.as_bytes());
    assert!(s3.uploads("jobs").is_empty(), "{:?}", s3.uploads("jobs"));
}

/// Parts named `.gz` or `.zst` are written compressed, recorded complete by their answers'
/// lines (decoded), and merged by joining their members: the whole decodes, by Debian's gzip or
/// libzstd, to the reference answers. Files and objects alike.
#[test]
fn compressed_parts_merge_to_a_compressed_whole() {
    let Some(s3) = S3Server::start() else { return };
    let dir = Scratch::new("compressed-parts");
    s3.make_bucket("jobs");
    let input = data("random1000.in");
    let expected = text("random1000.out6");
    let file_parts: Vec<String> = (0..3)
        .map(|k| dir.join(&format!("part-{k}.out.zst")).display().to_string())
        .collect();
    let object_parts: Vec<String> = (0..3)
        .map(|k| format!("s3://jobs/parts/part-{k}.out.gz"))
        .collect();
    for parts in [&file_parts, &object_parts] {
        for (k, part) in parts.iter().enumerate() {
            let shard = format!("{k}/3");
            let out = on(
                &s3,
                &["solve", "-q", "--shard", &shard, "--output", part, &input],
            );
            assert_eq!(out.code(), Some(0), "{part}: {}", out.stderr_str());
        }
    }
    let whole_zst = dir.join("whole.zst").display().to_string();
    let mut args = vec!["merge", "--output", &whole_zst];
    args.extend(file_parts.iter().map(String::as_str));
    let out = on(&s3, &args);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(
        unzstd(Path::new(&whole_zst)) == expected.as_bytes(),
        "the merged zstd file"
    );
    let mut args = vec!["merge", "--output", "s3://jobs/whole.gz"];
    args.extend(object_parts.iter().map(String::as_str));
    let out = on(&s3, &args);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    let whole_gz = dir.write("whole.gz", s3.get("jobs", "whole.gz").unwrap());
    assert!(
        gunzip(Path::new(&whole_gz)) == expected.as_bytes(),
        "the merged gzip object"
    );
}

/// An upload killed by SIGKILL twice, with parts committed and lines not yet uploaded, then
/// resumed: the object appears only at the end, and is one uninterrupted run's bytes.
#[test]
fn an_upload_killed_mid_way_resumes_to_one_runs_bytes() {
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("answers");
    let deals = text("random1000.in");
    let lines: Vec<&str> = deals.lines().filter(|l| !l.trim().is_empty()).collect();
    let items: Vec<String> = lines.chunks(9).map(|d| d.join("\n") + "\n").collect();
    let expected = text("random1000.out6");
    for key in ["killed.txt", "killed.txt.zst"] {
        let url = format!("s3://answers/{key}");
        // Parts of 1,000 bytes (moto takes parts under S3's 5 MiB): about 111 plain lines each.
        let args = [
            "solve",
            "--output",
            &url,
            "--resume",
            "--upload-part-size",
            "1000",
            "-",
        ];
        // Compressed, a part holds more lines: fewer parts by the same point.
        let stops = match key.ends_with(".zst") {
            true => [(400, 1), (800, 2)],
            false => [(400, 2), (800, 4)],
        };
        for (stop, parts) in stops {
            let mut typed: Typed = s3.env(patience().args(&args)).typed();
            typed.type_in(items[..stop].concat().as_bytes());
            poll_blocking(HANG_LIMIT, || {
                (parts_recorded(&s3, "answers", key).0 >= parts).then_some(())
            })
            .expect("parts uploaded and recorded");
            typed.child.kill().unwrap();
            typed.child.wait().unwrap();
            let (_, kept) = parts_recorded(&s3, "answers", key);
            assert!(kept < stop as u64, "some answers were not uploaded yet");
            assert_eq!(
                s3.get("answers", key),
                None,
                "no object before it is complete"
            );
        }
        let last = s3
            .env(patience().args(&args))
            .stdin(items.concat())
            .output();
        assert_eq!(last.code(), Some(0), "{}", last.stderr_str());
        let object = s3.get("answers", key).unwrap();
        let decoded = match key.ends_with(".zst") {
            true => zstd::decode_all(&object[..]).unwrap(),
            false => object,
        };
        assert!(
            decoded == expected.as_bytes(),
            "{key}: not one run's answers"
        );
    }
    assert!(
        s3.uploads("answers").is_empty(),
        "{:?}",
        s3.uploads("answers")
    );
}

#[test]
fn storage_troubles_are_said_in_words_with_status_2() {
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("deals");
    let input = data("random1000.in");
    let said = |args: &[&str], words: &str| {
        let out = on(&s3, args);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr_str());
        assert!(
            out.stderr_str().contains(words),
            "{args:?}: {}",
            out.stderr_str()
        );
        out
    };
    said(
        &["solve", "s3://deals/none.in"],
        "cannot open s3://deals/none.in: no such key: none.in in bucket deals",
    );
    said(
        &["solve", "s3://nobucket/deals.in"],
        "cannot open s3://nobucket/deals.in: no such bucket: nobucket",
    );
    said(
        &["solve", "s3://ab/deals.in"],
        "s3://ab/deals.in is not s3://BUCKET/KEY",
    );
    said(
        &["solve", &input, "--output", "s3://nobucket/answers.txt"],
        "no such bucket: nobucket",
    );
    // A resume of other flags is refused, the parts left as they were.
    let out = on(
        &s3,
        &["solve", "-q", &input, "--output", "s3://deals/a.txt"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    said(
        &[
            "solve",
            &input,
            "--precision",
            "9",
            "--output",
            "s3://deals/a.txt",
            "--resume",
        ],
        "cannot resume s3://deals/a.txt: it was written with --precision 6",
    );
    assert!(s3.get("deals", "a.txt").unwrap() == text("random1000.out6").as_bytes());
    // An endpoint that does not answer: retried with backoff for --storage-retry-timeout, then
    // given up on in words, with status 2; how long it took.
    let gives_up = |endpoint: std::net::SocketAddr, flags: &[&str]| {
        let started = std::time::Instant::now();
        let mut args = vec!["solve"];
        args.extend_from_slice(flags);
        args.push("s3://deals/x.in");
        let out = s3
            .env(patience().args(&args))
            .env("AWS_ENDPOINT_URL", format!("http://{endpoint}"))
            .output();
        assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
        assert!(
            out.stderr_str().contains("the store did not answer"),
            "{}",
            out.stderr_str()
        );
        started.elapsed()
    };
    // Nothing listening: a privileged port no test can bind (a port released after binding it
    // could be taken by another test's server meanwhile).
    let closed: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
    let took = gives_up(closed, &["--storage-retry-timeout", "2s"]);
    assert!(took < HANG_LIMIT, "gave up within its bound");
    // An endpoint that takes the connection and never answers: each read fails after
    // --storage-stall-timeout (1 s here, 30 s by default, so a run that ignored the flag would
    // still be waiting at 20 s) and is retried until --storage-retry-timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let flags = [
        "--storage-stall-timeout",
        "1s",
        "--storage-retry-timeout",
        "3s",
    ];
    let took = gives_up(silent.local_addr().unwrap(), &flags);
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    drop(silent);
}

/// A store that checks credentials (moto with authentication on) refuses unknown ones: said as
/// such, not as a missing key or a permission.
#[test]
fn refused_credentials_are_said_as_such() {
    let Some(s3) = S3Server::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]) else {
        return;
    };
    let out = s3
        .env(patience().args(&["solve", "s3://deals/deals.in"]))
        .env("AWS_ACCESS_KEY_ID", "AKIANOBODY")
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .output();
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    assert!(
        out.stderr_str().contains(
            "cannot open s3://deals/deals.in: the store refused the credentials (check \
             AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN)"
        ),
        "{}",
        out.stderr_str()
    );
}

/// docs/storage.md's compressed-file examples, run as shown in a directory of their own: Debian's
/// zstd compresses the input, and Debian's gzip finds the reference answers in the output.
#[test]
fn the_compressed_examples_run_as_shown() {
    let dir = Scratch::for_docs("storage-doc-compressed");
    doc_examples("docs/storage.md", "## Compressed files")
        .in_dir(dir.path())
        .at_least(3)
        .run();
}

/// docs/storage.md's object storage examples, run as shown against moto with the bucket they
/// name holding the zstd-compressed test deals: the lines they show are the reference's first
/// answers, and the object written decodes to the reference answers.
#[test]
fn the_object_storage_examples_run_as_shown() {
    let expected = text("random1000.out6");
    let first: String = expected.lines().take(3).map(|l| format!("{l}\n")).collect();
    assert!(
        doc_section("docs/storage.md", "### Trying it on a store").contains(&first),
        "docs/storage.md shows other answers than random1000.out6's first three"
    );
    let Some(s3) = S3Server::start() else { return };
    let dir = Scratch::for_docs("storage-doc-s3");
    let plain = std::fs::read(data("random1000.in")).unwrap();
    let zst = dir.write("random1000.in.zst", zstd(&plain));
    s3.make_bucket("deals");
    s3.put_file("deals", "random1000.in.zst", Path::new(&zst));
    s3.vars()
        .into_iter()
        .fold(
            doc_examples("docs/storage.md", "### Trying it on a store").in_dir(dir.path()),
            |examples, (key, value)| examples.env(key, value),
        )
        .at_least(2)
        .run();
    let written = s3
        .get("deals", "answers.txt.gz")
        .expect("the example's --output object");
    let mut decoded = String::new();
    flate2::read::MultiGzDecoder::new(&written[..])
        .read_to_string(&mut decoded)
        .unwrap();
    assert!(decoded == expected, "answers.txt.gz: not the reference");
}

/// The folded script of the first JSON patch value (`value: >-`) of a kustomization.
fn patched_script(kustomization: &Path) -> String {
    let text = std::fs::read_to_string(kustomization).unwrap();
    let mut lines = text.lines().skip_while(|l| l.trim() != "value: >-");
    let first = lines.next().expect("the patch's folded script");
    let indent = |l: &str| l.len() - l.trim_start().len();
    lines
        .take_while(|l| indent(l) > indent(first))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// deploy/kubernetes/shards-s3: the overlay's pod script run as its pods would run it (each with
/// its JOB_COMPLETION_INDEX and the store's settings in the environment, as the Secret gives
/// them; a daemon of the test's for the headless Service; no volume) against moto holding the
/// deals, then its merge Job's script: each part is an object with its completion record, no
/// local file is written, and the merged object is the reference answers.
#[test]
fn the_s3_indexed_job_writes_its_parts_to_the_store_and_its_merge_joins_them() {
    let Some(s3) = S3Server::start() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let shard_script = patched_script(&root.join("shards-s3/kustomization.yaml"));
    let merge_script = patched_script(&root.join("shards-s3/merge/kustomization.yaml"));
    let completions: usize = std::fs::read_to_string(root.join("shards/job.yaml"))
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("completions: ").map(str::to_string))
        .expect("completions")
        .parse()
        .unwrap();
    for script in [&shard_script, &merge_script] {
        assert!(!script.contains("/data"), "a volume's path in {script}");
    }
    let bucket = shard_script
        .split_whitespace()
        .find_map(|w| w.strip_prefix("s3://"))
        .and_then(|w| w.split('/').next())
        .expect("an s3:// input")
        .to_string();
    s3.make_bucket(&bucket);
    s3.put_file(&bucket, "deals.in", Path::new(&data("random1000.in")));

    let daemon = crate::common::Daemon::start(&[]);
    let dir = Scratch::new("shards-s3-job");
    let host = daemon
        .addr
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let path = crate::common::path_with_exe();
    let sh = |script: &str, index: Option<usize>| {
        let script = script.replace("dns:///patience-headless:50051", &format!("dns:///{host}"));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script])
            .current_dir(dir.path())
            .env("PATH", &path)
            .envs(s3.vars())
            .stdin(std::process::Stdio::null());
        if let Some(index) = index {
            cmd.env("JOB_COMPLETION_INDEX", index.to_string());
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{script} ({index:?}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The merge before the last shard has run is refused, and the Job would try it again.
    for k in 0..completions - 1 {
        sh(&shard_script, Some(k));
    }
    let early = Command::new("sh")
        .args(["-c", &merge_script])
        .current_dir(dir.path())
        .env("PATH", &path)
        .envs(s3.vars())
        .output()
        .unwrap();
    // merge's status 2 fails the script's `|| [ "$?" -eq 1 ]` with 1: a failed pod.
    assert_eq!(early.status.code(), Some(1));
    let last = completions - 1;
    assert!(
        String::from_utf8_lossy(&early.stderr).contains(&format!(
            "s3://{bucket}/parts/part-{last}.out is missing: run its shard"
        )),
        "{}",
        String::from_utf8_lossy(&early.stderr)
    );
    sh(&shard_script, Some(last));
    let keys = s3.keys(&bucket);
    for k in 0..completions {
        for key in [
            format!("parts/part-{k}.out"),
            format!("parts/part-{k}.out.done.json"),
        ] {
            assert!(keys.contains(&key), "{key} not in {keys:?}");
        }
    }
    sh(&merge_script, None);
    assert!(
        s3.get(&bucket, "deals.out").expect("the merged object")
            == text("random1000.out6").as_bytes(),
        "the merged parts are not the reference answers"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "a pod wrote a local file"
    );
}
