//! A job created: checked, its record kept, queued in its tenant's lane, unless the daemon's queue
//! or the tenant's is full; a job created again with the same id and spec is the same job (a
//! retried create), and a cancelled or failed one goes on from its output.

use super::kept::{JobState, Kept, VERSION, check_id, now_ms};
use super::{Board, JobEntry, JobView, Table, view};
use crate::jobs::daemon::spec::{JobSpec, Refusal};
use crate::jobs::in_full;

impl Board {
    /// Creates `tenant`'s job `id` (one made up when `None`) of `spec`, queued; with an `id` the
    /// tenant has already and the same spec, that job as it is now.
    pub fn create(
        &self,
        tenant: &str,
        id: Option<&str>,
        spec: JobSpec,
    ) -> Result<JobView, Refusal> {
        let no_tenant = || Refusal::Unmet {
            field: "tenant".into(),
            message: format!("no tenant {tenant} on this daemon"),
        };
        if let Some(id) = id {
            check_id(id)?;
            let mut table = self.table();
            let at = *table.by_name.get(tenant).ok_or_else(no_tenant)?;
            if let Some(entry) = table.lanes[at].jobs.get(id) {
                if entry.kept.spec != spec {
                    return Err(Refusal::Unmet {
                        field: "job_id".into(),
                        message: format!("job {id} exists, with another spec"),
                    });
                }
                // A job cancelled or failed goes on from its output as it stands, if the queue
                // has room for it.
                if !matches!(entry.kept.state, JobState::Cancelled | JobState::Failed) {
                    return Ok(view(entry));
                }
                self.room(&table, at)?;
                table.moved(at, id, JobState::Queued);
                let home = self.home_of(&table.lanes[at]);
                if let Some(entry) = table.lanes[at].jobs.get_mut(id) {
                    entry.kept.error.clear();
                    entry.kept.ended_ms = 0;
                    if let Err(e) = self.keep(&home, &entry.kept) {
                        tracing::warn!(job_id = %id, error = %in_full(&e), "cannot keep the job's record");
                    }
                }
                table.enqueue(at, id);
                let again = view(&table.lanes[at].jobs[id]);
                self.pump(table);
                return Ok(again);
            }
        }
        let home = {
            let table = self.table();
            self.home_of(table.lane(tenant).ok_or_else(no_tenant)?)
        };
        // Checked before anything is kept: a refused spec leaves no trace.
        let placed = spec.place(&home)?;
        let mut table = self.table();
        let at = *table.by_name.get(tenant).ok_or_else(no_tenant)?;
        self.room(&table, at)?;
        let id = match id {
            Some(id) => id.to_string(),
            None => loop {
                table.made += 1;
                let id = format!("job-{}-{}", now_ms(), table.made);
                if !table.lanes[at].jobs.contains_key(&id) {
                    break id;
                }
            },
        };
        if let Some(entry) = table.lanes[at].jobs.get(&id) {
            // Created by a call racing this one.
            return Ok(view(entry));
        }
        let kept = Kept {
            version: VERSION,
            id: id.clone(),
            spec,
            state: JobState::Queued,
            error: String::new(),
            created_ms: now_ms(),
            ended_ms: 0,
            runs: 0,
            done: 0,
            bad: 0,
            bytes_done: 0,
            bytes_total: placed.bytes,
        };
        self.keep(&home, &kept).map_err(|e| Refusal::Unmet {
            field: "job_id".into(),
            message: format!("cannot keep the job's record: {}", in_full(&e)),
        })?;
        let lane = &mut table.lanes[at];
        lane.gauges.by_state[JobState::Queued.index()].inc();
        lane.order.insert((kept.created_ms, id.clone()));
        lane.jobs.insert(id.clone(), JobEntry::new(kept));
        table.enqueue(at, &id);
        tracing::info!(job_id = %id, tenant, "job created");
        let made = view(&table.lanes[at].jobs[&id]);
        self.pump(table);
        Ok(made)
    }

    /// Whether one more of lane `at`'s jobs may wait: the daemon's cap, then the tenant's own.
    fn room(&self, table: &Table, at: usize) -> Result<(), Refusal> {
        let limit = self.inner.settings.max_queued;
        if table.queued >= limit {
            return Err(Refusal::QueueFull {
                limit,
                tenant: None,
            });
        }
        let lane = &table.lanes[at];
        if let Some(limit) = lane.share.max_queued
            && lane.queue.len() >= limit
        {
            return Err(Refusal::QueueFull {
                limit,
                tenant: Some(lane.share.name.clone()),
            });
        }
        Ok(())
    }
}
