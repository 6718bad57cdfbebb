//! The daemon's jobs board in this process, on paused time: ended jobs leave by `DeleteJob` and
//! after `--job-retention`. A test binary of its own, because a board confines the process's
//! jobs library to its folder for good (`beneath::confine`), which the other tests' files would
//! then be outside of.

use std::sync::Arc;
use std::time::Duration;

use patience::jobs::daemon::board::{Board, BoardSettings, Clock, JobMetrics, JobState};
use patience::jobs::daemon::spec::{JobGame, JobSpec};
use patience::pool::Pool;

/// The one tenant of a board opened without tenants.
const T: &str = "default";

/// A board on a fresh folder holding one deal file, keeping ended jobs for `retention`.
fn board(name: &str, retention: Duration) -> (Board, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("patience-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let deal = "AS 9S 6C KS\nJC QH AC KH\n7S QD JD KD\nQS TS JS 9H\n6D TD AD 8S\nQC TH KC 8D\n8C 9D TC 7C\n9C 7H JH 7D\n8H 6S AH 6H\n";
    std::fs::write(dir.join("in.txt"), deal).unwrap();
    board_on(&dir, retention)
}

/// A board on `dir` as it is.
fn board_on(dir: &std::path::Path, retention: Duration) -> (Board, std::path::PathBuf) {
    let settings = BoardSettings {
        dir: dir.to_path_buf(),
        max_jobs: 1,
        max_queued: 10,
        retention,
        storage: Default::default(),
        tenants: Vec::new(),
    };
    let pool = Arc::new(Pool::new(1, 4).unwrap());
    (
        Board::open(settings, pool, JobMetrics::default()).unwrap(),
        dir.to_path_buf(),
    )
}

fn spec(output: &str) -> JobSpec {
    JobSpec {
        inputs: vec!["in.txt".into()],
        output: output.into(),
        game: JobGame::Deals,
        format: "text".into(),
        precision: 6,
        shard: None,
    }
}

/// Waits (for events, not time) until job `id` has ended.
async fn ended(board: &Board, id: &str) {
    let mut changes = board.changes();
    while !board.get(T, id).is_some_and(|job| job.state.ended()) {
        changes.changed().await.unwrap();
    }
}

/// DeleteJob forgets an ended job at once and refuses a queued or running one; an ended job
/// is kept, listed, for its whole retention and forgotten once it has passed; its record
/// goes, its output stays, and a restart brings neither back. On paused time: an hour's
/// retention passes at once. (One test: a process confines its jobs to one folder.)
#[tokio::test(start_paused = true)]
async fn ended_jobs_leave_by_delete_and_after_their_retention() {
    let hour = Duration::from_secs(3600);
    let (board, dir) = board("forget", hour);
    let records = dir.join(".patience-jobs");

    let job = board.create(T, Some("done"), spec("done.txt")).unwrap();
    ended(&board, &job.id).await;
    assert!(board.delete(T, "nothing").unwrap().is_none());
    let gone = board.delete(T, "done").unwrap().expect("the job");
    assert_eq!(gone.state, JobState::Succeeded);
    assert!(board.get(T, "done").is_none());
    assert!(!records.join("done.json").exists());
    assert!(dir.join("done.txt").is_file());

    let job = board.create(T, Some("old"), spec("old.txt")).unwrap();
    ended(&board, &job.id).await;
    assert_eq!(
        board.get(T, "old").map(|j| j.state),
        Some(JobState::Succeeded)
    );
    assert!(records.join("old.json").is_file());
    tokio::spawn(board.clone().sweep_every(Clock::start()));
    // Every sweep up to here saw the job younger than the retention (the clock, hence the
    // decision, is tokio's paused one: no race can sweep it early).
    tokio::time::advance(hour - Duration::from_secs(60)).await;
    assert!(
        board.get(T, "old").is_some(),
        "forgotten before its retention"
    );
    assert_eq!(board.page(T, None, None, 10).jobs.len(), 1);
    // Then it goes at the next sweep (a minute apart): waited for as an event, bounded by
    // a virtual hour.
    let mut changes = board.changes();
    let swept = async {
        while board.get(T, "old").is_some() {
            changes.changed().await.unwrap();
        }
    };
    tokio::time::timeout(hour, swept)
        .await
        .expect("never forgotten");
    assert!(!records.join("old.json").exists(), "its record stays");
    assert!(dir.join("old.txt").is_file(), "its output went with it");
    assert!(board.page(T, None, None, 10).jobs.is_empty());
    board.close(Duration::from_secs(1));

    let (again, _) = board_on(&dir, hour);
    assert!(
        again.page(T, None, None, 10).jobs.is_empty(),
        "a forgotten job came back"
    );
    again.close(Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(&dir);
}
