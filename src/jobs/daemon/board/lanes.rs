//! Each tenant's lane of jobs, and which lane's job takes the next free place: the places are
//! shared by weight between the tenants that have jobs waiting, first come first served within a
//! tenant.
//!
//! The share is start-time fair queuing over job starts: each lane has a virtual time that a
//! start moves on by `1 / weight`, and the next place goes to the waiting lane whose virtual time
//! is least. A lane that had nothing waiting and nothing running joins at the board's virtual time
//! (the start time of the last job started), so idling earns no credit: a tenant that queued
//! 1,000 jobs and one that queued 1 take turns, and the late one's first job starts before the
//! busy one's next. Between lanes equally behind, the lane whose waiting job is oldest goes first.

use std::collections::{BTreeSet, HashMap, VecDeque};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::AtomicU64;

use super::JobEntry;

/// One tenant's share of the daemon's jobs (`serve --tenants`), or the one tenant of a daemon
/// without that flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantShare {
    pub name: String,
    /// Its folder beneath `--jobs-dir`, where its jobs' paths and records are; `None`: the
    /// folder itself (the one tenant of a daemon without `--tenants`).
    pub home: Option<String>,
    /// Its share of the running places against the other tenants' (1 to 1,000).
    pub weight: u32,
    /// At most this many of its jobs wait [`None`: only the daemon's cap].
    pub max_queued: Option<usize>,
    /// At most this many of its jobs run [`None`: only `--max-jobs`].
    pub max_running: Option<usize>,
}

impl TenantShare {
    /// The one tenant of a daemon without `--tenants`: `default`, at the folder itself.
    pub fn single() -> TenantShare {
        TenantShare {
            name: "default".into(),
            home: None,
            weight: 1,
            max_queued: None,
            max_running: None,
        }
    }
}

/// The series a tenant's jobs report into.
#[derive(Clone, Debug, Default)]
pub struct TenantGauges {
    /// Jobs in each state, in [`super::JobState::ALL`]'s order.
    pub by_state: [Gauge; 5],
    pub items: Counter,
    /// Input bytes left: of the jobs waiting, of those running.
    pub work_bytes: [Gauge; 2],
    pub work_seconds: Gauge<f64, AtomicU64>,
}

/// One tenant's jobs.
pub(super) struct TenantLane {
    pub(super) share: TenantShare,
    pub(super) gauges: TenantGauges,
    pub(super) jobs: HashMap<String, JobEntry>,
    /// Every job by (created_ms, id): the order lists go in, and where a page goes on from.
    pub(super) order: BTreeSet<(i64, String)>,
    /// Waiting, oldest first.
    pub(super) queue: VecDeque<String>,
    /// Running now.
    pub(super) running: BTreeSet<String>,
    /// Input bytes its waiting jobs have left, kept as jobs come and go.
    pub(super) queued_bytes: u64,
    /// Where the lane stands in the share: its jobs started so far, each counted `1 / weight`.
    virtual_time: f64,
}

impl TenantLane {
    pub(super) fn new(share: TenantShare, gauges: TenantGauges) -> TenantLane {
        TenantLane {
            share,
            gauges,
            jobs: HashMap::new(),
            order: BTreeSet::new(),
            queue: VecDeque::new(),
            running: BTreeSet::new(),
            queued_bytes: 0,
            virtual_time: 0.0,
        }
    }

    /// Whether the lane has nothing waiting and nothing running.
    fn idle(&self) -> bool {
        self.queue.is_empty() && self.running.is_empty()
    }

    /// Whether one of its waiting jobs may start, as far as its own cap goes.
    fn may_start(&self) -> bool {
        !self.queue.is_empty()
            && self
                .share
                .max_running
                .is_none_or(|cap| self.running.len() < cap)
    }

    /// The created time of its oldest waiting job.
    fn oldest_waiting(&self) -> i64 {
        self.queue
            .front()
            .and_then(|id| self.jobs.get(id))
            .map_or(i64::MAX, |entry| entry.kept.created_ms)
    }
}

/// The share's clock: the start time of the last job started.
#[derive(Debug, Default)]
pub(super) struct ShareClock(f64);

/// Queues job `id` on `lane`, which joins the share where the board stands if it was idle.
pub(super) fn enqueue(lanes: &mut [TenantLane], clock: &ShareClock, lane: usize, id: String) {
    let lane = &mut lanes[lane];
    if lane.idle() {
        lane.virtual_time = lane.virtual_time.max(clock.0);
    }
    lane.queue.push_back(id);
}

/// The lane whose oldest waiting job starts next, its place in the share moved on; `None` when no
/// lane may start one.
pub(super) fn next(lanes: &mut [TenantLane], clock: &mut ShareClock) -> Option<usize> {
    let chosen = lanes
        .iter()
        .enumerate()
        .filter(|(_, lane)| lane.may_start())
        .min_by(|(_, a), (_, b)| {
            a.virtual_time
                .total_cmp(&b.virtual_time)
                .then(a.oldest_waiting().cmp(&b.oldest_waiting()))
        })
        .map(|(i, _)| i)?;
    let lane = &mut lanes[chosen];
    clock.0 = lane.virtual_time;
    lane.virtual_time += 1.0 / f64::from(lane.share.weight.max(1));
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::daemon::board::test_entry as entry;

    fn lane(name: &str, weight: u32, max_running: Option<usize>) -> TenantLane {
        TenantLane::new(
            TenantShare {
                name: name.into(),
                home: Some(name.into()),
                weight,
                max_queued: None,
                max_running,
            },
            TenantGauges::default(),
        )
    }

    /// Queues `n` jobs on `lanes[at]`, created at `from`, `from + 1`, ...
    fn queue(lanes: &mut [TenantLane], clock: &ShareClock, at: usize, n: usize, from: i64) {
        for k in 0..n {
            let id = format!("{}-{k}", lanes[at].share.name);
            let created = from + i64::try_from(k).unwrap();
            lanes[at].jobs.insert(id.clone(), entry(&id, created));
            enqueue(lanes, clock, at, id);
        }
    }

    /// Starts the next job, if any, and says whose it was.
    fn start(lanes: &mut [TenantLane], clock: &mut ShareClock) -> Option<String> {
        let at = next(lanes, clock)?;
        let id = lanes[at].queue.pop_front()?;
        lanes[at].running.insert(id.clone());
        Some(id)
    }

    /// Ends running job `id`.
    fn end(lanes: &mut [TenantLane], id: &str) {
        for lane in lanes {
            lane.running.remove(id);
        }
    }

    /// One place: a tenant with 1,000 jobs waiting and one that comes late with one job. The late
    /// job starts as soon as the running one ends, before the busy tenant's second (worked by
    /// hand: the busy lane stands at 1 after its first start, the late one joins at 0).
    #[test]
    fn a_late_tenant_s_job_starts_before_the_busy_tenant_s_next() {
        let mut clock = ShareClock::default();
        let mut lanes = vec![lane("busy", 1, None), lane("late", 1, None)];
        queue(&mut lanes, &clock, 0, 1000, 0);
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("busy-0"));
        queue(&mut lanes, &clock, 1, 1, 5000);
        end(&mut lanes, "busy-0");
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("late-0"));
        end(&mut lanes, "late-0");
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("busy-1"));
    }

    /// Two places, weights 2 and 1, both with plenty waiting: over 30 starts, the first tenant
    /// gets 20 and the second 10, and within each, jobs start in the order they were created.
    #[test]
    fn places_go_by_weight_and_first_come_first_served_within_a_tenant() {
        let mut clock = ShareClock::default();
        let mut lanes = vec![lane("heavy", 2, None), lane("light", 1, None)];
        queue(&mut lanes, &clock, 0, 100, 0);
        queue(&mut lanes, &clock, 1, 100, 0);
        let mut started: Vec<String> = Vec::new();
        for _ in 0..2 {
            started.extend(start(&mut lanes, &mut clock));
        }
        for k in 0..30 {
            // The oldest running job ends, and a place is free again.
            let oldest = started[k].clone();
            end(&mut lanes, &oldest);
            started.extend(start(&mut lanes, &mut clock));
        }
        let heavy: Vec<&String> = started.iter().filter(|s| s.starts_with("heavy")).collect();
        let light: Vec<&String> = started.iter().filter(|s| s.starts_with("light")).collect();
        assert_eq!((heavy.len(), light.len()), (21, 11), "{started:?}");
        for (k, id) in heavy.iter().enumerate() {
            assert_eq!(**id, format!("heavy-{k}"));
        }
        for (k, id) in light.iter().enumerate() {
            assert_eq!(**id, format!("light-{k}"));
        }
    }

    /// A tenant at its own `max_running_jobs` waits while another's job takes the place, and
    /// with nobody else waiting, the place stays free rather than go past the cap.
    #[test]
    fn a_tenant_s_running_cap_holds_and_leaves_the_place_to_others() {
        let mut clock = ShareClock::default();
        let mut lanes = vec![lane("capped", 5, Some(1)), lane("other", 1, None)];
        queue(&mut lanes, &clock, 0, 3, 0);
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("capped-0"));
        assert_eq!(start(&mut lanes, &mut clock), None, "past its cap");
        queue(&mut lanes, &clock, 1, 2, 10);
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("other-0"));
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("other-1"));
        end(&mut lanes, "capped-0");
        assert_eq!(start(&mut lanes, &mut clock).as_deref(), Some("capped-1"));
    }

    /// A tenant idle for a while earns no credit: after the other ran 50 jobs alone, the two take
    /// turns rather than the returning one taking 50 places in a row.
    #[test]
    fn idling_earns_no_credit() {
        let mut clock = ShareClock::default();
        let mut lanes = vec![lane("steady", 1, None), lane("back", 1, None)];
        queue(&mut lanes, &clock, 0, 100, 0);
        for _ in 0..50 {
            let id = start(&mut lanes, &mut clock).unwrap();
            end(&mut lanes, &id);
        }
        queue(&mut lanes, &clock, 1, 10, 1000);
        let next4: Vec<String> = (0..4)
            .map(|_| {
                let id = start(&mut lanes, &mut clock).unwrap();
                end(&mut lanes, &id);
                id
            })
            .collect();
        let back = next4.iter().filter(|id| id.starts_with("back")).count();
        assert_eq!(back, 2, "{next4:?}");
    }
}
