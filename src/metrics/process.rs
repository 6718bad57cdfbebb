//! Process metrics as the Prometheus client libraries name them (client_golang's process
//! collector), read from `/proc` at each scrape: `process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//! `process_virtual_memory_max_bytes`, `process_open_fds`, `process_max_fds`,
//! `process_start_time_seconds`, `process_threads`.
//!
//! No crate fits: the process collectors on crates.io are written for the `prometheus` or the
//! `metrics` crates, not for `prometheus-client`, and `/proc` is a few lines. Where it cannot be
//! read (not Linux), these series are simply absent.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second of `/proc/PID/stat`'s times: the kernel's `USER_HZ`, which is 100 on
/// every architecture this runs on. Prometheus's own procfs library fixes it at 100 too, rather
/// than ask `sysconf` (which would take unsafe code here).
const USER_HZ: f64 = 100.0;

/// Reads the process's figures at each scrape.
#[derive(Debug, Default)]
pub(super) struct ProcessCollector;

/// What one scrape read of this process.
#[derive(Debug, Default, PartialEq)]
struct Sample {
    cpu_seconds: f64,
    start_time_seconds: f64,
    virtual_bytes: f64,
    resident_bytes: f64,
    threads: i64,
    open_fds: i64,
    max_fds: f64,
    max_virtual_bytes: f64,
}

impl Sample {
    /// This process now; `None` where `/proc` cannot be read.
    fn read() -> Option<Sample> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        let mut sample = parse(&stat, &status, &boot)?;
        sample.open_fds = std::fs::read_dir("/proc/self/fd")
            .map_or(0, |dir| i64::try_from(dir.count()).unwrap_or(i64::MAX));
        // What a limit of "unlimited" reads as, as client_golang reports it.
        let limit =
            |resource| rlimit::getrlimit(resource).map_or(u64::MAX as f64, |(soft, _)| soft as f64);
        sample.max_fds = limit(rlimit::Resource::NOFILE);
        sample.max_virtual_bytes = limit(rlimit::Resource::AS);
        Some(sample)
    }
}

/// The figures `/proc/self/stat`, `/proc/self/status` and `/proc/stat` give.
fn parse(stat: &str, status: &str, boot: &str) -> Option<Sample> {
    // After the command name (in parentheses, and it may hold spaces): field 3, the state, on.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| -> Option<f64> { fields.get(n - 3)?.parse().ok() };
    let kib = |key: &str| -> Option<f64> {
        let line = status.lines().find_map(|l| l.strip_prefix(key))?;
        line.trim_start_matches(':')
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<f64>()
            .ok()
    };
    let boot_time: f64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(Sample {
        cpu_seconds: (field(14)? + field(15)?) / USER_HZ,
        start_time_seconds: boot_time + field(22)? / USER_HZ,
        virtual_bytes: field(23)?,
        resident_bytes: kib("VmRSS")? * 1024.0,
        threads: field(20)? as i64,
        ..Sample::default()
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = Sample::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(s.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges: [(&str, &str, f64); 7] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                s.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                s.virtual_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                s.max_virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                s.open_fds as f64,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                s.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                s.start_time_seconds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                s.threads as f64,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command name with spaces and a parenthesis does not shift the fields; the figures come
    /// out in seconds and bytes.
    #[test]
    fn the_proc_files_are_read_field_by_field() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 7 0 \
                    123400 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0";
        let status = "Name:\ta\nVmSize:\t  102400 kB\nVmRSS:\t   10240 kB\nThreads:\t7\n";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n";
        let sample = parse(stat, status, boot).unwrap();
        assert_eq!(
            sample,
            Sample {
                cpu_seconds: 3.0,
                start_time_seconds: 1_700_001_234.0,
                virtual_bytes: 104_857_600.0,
                resident_bytes: 10_485_760.0,
                threads: 7,
                ..Sample::default()
            }
        );
    }

    /// This process, as a scrape sees it: it has a start, memory, and descriptors open.
    #[test]
    fn this_process_reads_as_alive() {
        let s = Sample::read().unwrap();
        assert!(s.start_time_seconds > 1.6e9, "{s:?}");
        assert!(
            s.resident_bytes > 0.0 && s.virtual_bytes >= s.resident_bytes,
            "{s:?}"
        );
        assert!(s.open_fds >= 3 && s.max_fds >= s.open_fds as f64, "{s:?}");
        assert!(s.threads >= 1, "{s:?}");
    }
}
