//! Parts, their completion records, `merge` and an object output's resume, run on objects of
//! memory (object_store's in-memory store) through the same calls as on S3: no server needed.
//! `tests/storage.rs` runs the same against a real S3-compatible server, through the binary.

use std::io::Write as _;
use std::path::PathBuf;

use super::merge::{self, MergeError, MergePlan, MergeRefusal};
use super::part;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::sink::lines::AnswerLines;
use crate::jobs::sink::run_record::{Record, RunRecordError};
use crate::jobs::sink::tail::Tail;
use crate::jobs::sink::upload::{self, UploadError};
use crate::jobs::source::input::Input;
use crate::jobs::source::shard::{Range, Shard, ShardPlan};
use crate::jobs::store::location::Location;
use crate::jobs::store::object::{ObjectUrl, StorageSettings};
use crate::jobs::store::record;
use crate::render::OutputFormat;
use crate::solver::Options;

fn url(name: &str) -> ObjectUrl {
    ObjectUrl::parse(&format!("memory://jobs/{name}"))
        .unwrap()
        .unwrap()
}

/// The run's record of shard `k` of 2 of `deals.in`, as `--output` writes it.
fn record(k: u64) -> Record {
    let mut record = Record::new(
        "deals",
        OutputFormat::Text,
        6,
        Options::default(),
        &Input::from_args(&[PathBuf::from("deals.in")]),
    );
    record.shard = Some(format!("{k}/2"));
    record
}

/// Lines into the upload, as the printer writes them.
fn lines_into(answers: upload::ObjectTail) -> AnswerLines {
    AnswerLines::start(Box::new(answers), Box::new(|_| {})).unwrap()
}

/// Shard `k` of 2 of a job of `items` items in all, numbered from `first`.
fn plan(k: u64, first: u64, items: u64) -> ShardPlan {
    ShardPlan {
        range: Range {
            shard: Shard { index: k, count: 2 },
            start: k * 100,
            end: (k + 1) * 100,
            total: 200,
            first,
            items,
        },
        sizes: vec![200],
        segments: Vec::new(),
    }
}

fn storage() -> StorageSettings {
    StorageSettings {
        upload_part_size: 8,
        retry_timeout: std::time::Duration::from_secs(1),
        stall_timeout: std::time::Duration::from_secs(1),
    }
}

/// Writes `lines` as shard `k`'s part at `name`, in parts of 8 bytes, and records it complete.
fn write_part(name: &str, k: u64, first: u64, lines: &[&str]) -> Location {
    let at = url(name);
    let (answers, kept) = upload::open(&at, false, record(k), &|_| Ok(()), 8).unwrap();
    assert_eq!(kept, 0);
    let mut answers = lines_into(answers);
    for line in lines {
        answers.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    answers.finish().unwrap();
    let place = Location::Object(at);
    part::complete(
        &place,
        &plan(k, first, lines.len() as u64),
        lines.len() as u64,
        0,
        ExitStatus::Ok,
    )
    .unwrap();
    place
}

fn merged(parts: &[&str], output: &str) -> Result<ExitStatus, MergeError> {
    merge::run(&MergePlan {
        output: Some(PathBuf::from(format!("memory://jobs/{output}"))),
        parts: parts
            .iter()
            .map(|name| PathBuf::from(format!("memory://jobs/{name}")))
            .collect(),
        storage: storage(),
    })
}

/// The refusal a merge failed with, if it was refused.
fn refusal(e: &MergeError) -> Option<&MergeRefusal> {
    match e {
        MergeError::Refused(refusal) => Some(refusal),
        _ => None,
    }
}

#[test]
fn parts_in_memory_merge_in_shard_order_and_a_changed_part_is_refused() {
    let zero = write_part("a/part-0", 0, 0, &["0.100000", "0.200000", "0.300000"]);
    let one = write_part("a/part-1", 1, 3, &["0.400000", "error: deal 5: bad"]);
    let done = part::read_done(&one).unwrap().unwrap();
    assert_eq!((done.lines, done.range.first), (2, 3));
    assert_eq!(part::checksum(&zero).unwrap().lines, 3);

    assert_eq!(
        merged(&["a/part-1", "a/part-0"], "a/all").unwrap(),
        ExitStatus::Ok
    );
    let all = Location::Object(url("a/all"))
        .read_small()
        .unwrap()
        .unwrap();
    assert_eq!(
        String::from_utf8(all).unwrap(),
        "0.100000\n0.200000\n0.300000\n0.400000\nerror: deal 5: bad\n"
    );

    let missing = merged(&["a/part-0"], "a/none").unwrap_err();
    assert!(
        matches!(
            refusal(&missing),
            Some(MergeRefusal::MissingShards { shards, more: 0, count: 2 }) if shards == &[1]
        ),
        "{missing:?}"
    );
    assert!(missing.to_string().contains("shard 1"), "{missing}");
    assert!(!Location::Object(url("a/none")).exists().unwrap());

    one.put_small(b"0.999999\nerror: deal 5: bad\n".to_vec())
        .unwrap();
    let changed = merged(&["a/part-0", "a/part-1"], "a/all").unwrap_err();
    assert!(
        matches!(
            refusal(&changed),
            Some(MergeRefusal::NotAsRecorded { place, held, said, .. })
                if *place == one && held.bytes == said.bytes && held.crc32 != said.crc32
        ),
        "{changed:?}"
    );
    assert!(
        changed
            .to_string()
            .contains("is not the part its completion record describes"),
        "{changed:?}"
    );
    // The earlier whole output stays as it was.
    assert!(Location::Object(url("a/all")).exists().unwrap());
}

#[test]
fn an_upload_cut_short_resumes_from_its_last_part_and_ends_whole() {
    let at = url("b/answers");
    let lines: Vec<String> = (1..=6).map(|i| format!("0.{i}00000")).collect();
    let (answers, _) = upload::open(&at, false, record(0), &|_| Ok(()), 8).unwrap();
    let mut answers = lines_into(answers);
    // Three lines and half of a fourth, then the run is gone (nothing finishes it).
    for line in &lines[..3] {
        answers.write_all(format!("{line}\n").as_bytes()).unwrap();
        answers.flush().unwrap();
    }
    answers.write_all(b"0.40").unwrap();
    drop(answers);
    let place = Location::Object(at.clone());
    assert!(
        !place.exists().unwrap(),
        "an unfinished upload shows nothing"
    );

    let other = record(1);
    let refused =
        upload::open(&at, true, record(1), &|held| other.same_run(held, &at), 8).unwrap_err();
    assert!(
        matches!(
            refused,
            UploadError::AnotherRun(RunRecordError::AnotherRun { .. })
        ),
        "{refused:?}"
    );
    assert_eq!(
        refused.to_string(),
        "cannot resume memory://jobs/b/answers: it was written with --shard 0/2, where this run \
         has --shard 1/2; give the same flags and inputs to go on with it, or another --output \
         (or leave out --resume) to start again"
    );

    let ours = record(0);
    let (answers, kept) =
        upload::open(&at, true, record(0), &|held| ours.same_run(held, &at), 8).unwrap();
    assert_eq!(kept, 3, "each uploaded part held one whole line");
    assert_eq!(answers.items(), 3);
    let mut answers = lines_into(answers);
    for line in &lines[3..] {
        answers.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    answers.finish().unwrap();
    let mut whole = Vec::new();
    for line in &lines {
        writeln!(whole, "{line}").unwrap();
    }
    assert_eq!(place.read_small().unwrap().unwrap(), whole);
    let held = record::resume_of(&place).read_small().unwrap().unwrap();
    assert!(
        String::from_utf8(held)
            .unwrap()
            .contains("\"complete\":true")
    );
}
