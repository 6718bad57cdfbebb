//! The board opened on `--jobs-dir`: each tenant's folder and records made or read, the jobs
//! their records leave unfinished queued again, ended ones kept until their retention is up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::kept::{JobState, Kept, now_ms};
use super::lanes::{ShareClock, TenantLane, TenantShare};
use super::{Board, BoardError, BoardSettings, BoardShared, JobEntry, JobMetrics, Table, home};
use crate::jobs::daemon::spec::RECORDS;
use crate::jobs::in_full;
use crate::jobs::store::beneath;
use crate::jobs::store::location::Location;
use crate::jobs::store::record;
use crate::jobs::store::{FileError, FileOp};
use crate::pool::Pool;

/// Makes `dir` as a job's files are made: beneath the jobs' folder.
fn make(dir: &std::path::Path) -> Result<(), BoardError> {
    beneath::create_dir_all(dir).map_err(|source| {
        BoardError::File(FileError {
            op: FileOp::Make,
            path: dir.to_path_buf(),
            source,
        })
    })
}

/// The records kept in `records`, oldest first; one that cannot be read is left out, said.
fn read_records(records: &std::path::Path) -> Result<Vec<Kept>, BoardError> {
    let entries = std::fs::read_dir(records).map_err(|source| {
        BoardError::File(FileError {
            op: FileOp::Read,
            path: records.to_path_buf(),
            source,
        })
    })?;
    let mut kept: Vec<Kept> = Vec::new();
    for entry in entries {
        let path = entry.map_err(BoardError::Entry)?.path();
        if path.extension().is_some_and(|e| e == "json") {
            match record::read::<Kept>(&Location::File(path.clone())) {
                Ok(Some(job)) => kept.push(job),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %in_full(&e), "a job record is left out"),
            }
        }
    }
    kept.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    Ok(kept)
}

impl Board {
    /// The jobs of `settings.dir`, each tenant's from its own folder: those its records leave
    /// queued or running are queued again, oldest first, and start as places free.
    pub fn open(
        mut settings: BoardSettings,
        pool: Arc<Pool>,
        metrics: JobMetrics,
    ) -> Result<Board, BoardError> {
        settings.storage.configure();
        if settings.tenants.is_empty() {
            settings.tenants.push(TenantShare::single());
        }
        // The daemon's drain stops the jobs' outputs; their keepers leave the signals alone.
        crate::jobs::sink::signals::leave_signals_alone();
        // The folder is made as the daemon's flag names it; from then on no job's file is opened
        // but beneath it, links and all.
        make(&settings.dir)?;
        beneath::confine(&settings.dir).map_err(|source| BoardError::Confine {
            dir: settings.dir.clone(),
            source,
        })?;
        let mut table = Table {
            lanes: Vec::with_capacity(settings.tenants.len()),
            by_name: HashMap::new(),
            queued: 0,
            running: 0,
            clock: ShareClock::default(),
            measured: None,
            made: 0,
        };
        for share in &settings.tenants {
            let home = home(&settings.dir, share);
            make(&home.join(RECORDS))?;
            let at = table.lanes.len();
            table.by_name.insert(share.name.clone(), at);
            table.lanes.push(TenantLane::new(
                share.clone(),
                (metrics.tenant)(&share.name),
            ));
            for mut job in read_records(&home.join(RECORDS))? {
                let id = job.id.clone();
                let waiting = !job.state.ended();
                if waiting {
                    job.state = JobState::Queued;
                }
                let lane = &mut table.lanes[at];
                lane.gauges.by_state[job.state.index()].inc();
                lane.order.insert((job.created_ms, id.clone()));
                lane.jobs.insert(id.clone(), JobEntry::new(job));
                if waiting {
                    table.enqueue(at, &id);
                }
            }
        }
        if settings.tenants.iter().all(|t| t.home.is_some()) {
            // Records a daemon without --tenants kept: no tenant's, so left alone.
            let unowned = read_records(&settings.dir.join(RECORDS)).map_or(0, |k| k.len());
            if unowned > 0 {
                tracing::warn!(
                    jobs = unowned,
                    "job records in --jobs-dir/.patience-jobs belong to no tenant of --tenants; \
                     they are left as they are (move one into a tenant's folder to give it that \
                     tenant)"
                );
            }
        }
        let board = Board {
            inner: Arc::new(BoardShared {
                settings,
                pool,
                table: Mutex::new(table),
                changed: watch::Sender::new(0),
                runners: Mutex::default(),
                closing: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        let resumed = board.table().queued;
        if resumed > 0 {
            tracing::info!(
                jobs = resumed,
                "taking up the jobs a last run left unfinished"
            );
        }
        board.sweep(now_ms());
        board.pump(board.table());
        Ok(board)
    }
}
