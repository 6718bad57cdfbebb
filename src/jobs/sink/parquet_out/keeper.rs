//! A Parquet output's keeper, on a thread of its own beside the printer: a slow run's row group
//! ended every [`CHECKPOINT_EVERY`] at the latest, so what it answered is recorded; and, where it
//! watches them, SIGINT and SIGTERM answered by writing the footer before the process ends.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::{CHECKPOINT_EVERY, TICK, Writing, lock};
use crate::jobs::in_full;
use crate::jobs::sink::signals::{Signals, Tell};

/// The keeper: a row group ended every [`CHECKPOINT_EVERY`] at the latest; on SIGINT or SIGTERM
/// (when it watches them), the footer written and the process ended.
pub(super) async fn keep(
    shared: Arc<Mutex<Writing>>,
    mut stopped: oneshot::Receiver<()>,
    tell: Tell,
    mut signals: Signals,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tick.tick() => {
                let mut table = lock(&shared);
                if table.last.elapsed() >= CHECKPOINT_EVERY
                    && (table.writer.in_progress_rows() > 0 || !table.rows.is_empty())
                    && let Err(e) = table.checkpoint(true)
                {
                    tell(format!("patience: cannot write {}: {}", table.name(), in_full(&e)));
                    return;
                }
            }
            signal = signals.next() => interrupted(lock(&shared), signal, &tell),
        }
    }
}

/// Writes the footer and ends the process as the signal would have, saying how to go on.
#[allow(
    clippy::exit,
    reason = "a signal ends the run wherever the printer is; the lock held keeps it from writing \
              after the footer"
)]
fn interrupted(mut table: MutexGuard<'_, Writing>, (name, number): (&str, i32), tell: &Tell) {
    let path = table.name();
    match table.close() {
        Ok(rows) => tell(format!(
            "patience: {name}: stopped with {rows} answers in {path}; the same command with \
             --resume goes on from there"
        )),
        Err(e) => tell(format!(
            "patience: {name}: cannot write {path}: {}",
            in_full(&e)
        )),
    }
    std::process::exit(128 + number);
}
