//! The words of `--progress log`'s lines and of the summary a run ends with (`progress.rs` decides
//! when they print): one line each, numbers without separators, so that logs are easy to grep.
//! What a client adds to them (the daemons' shares, what happened to a daemon) is the client's
//! (`crate::client::words`).

use std::time::Duration;

/// A run's counts at one moment.
#[derive(Clone, Debug)]
pub struct Counts {
    /// `deals` or `cases`.
    pub noun: &'static str,
    /// Items this run printed, and the bad ones among them.
    pub done: u64,
    pub bad: u64,
    /// Items read again and not answered (a resume), and the bad ones among them.
    pub skipped: u64,
    pub skipped_bad: u64,
    /// Answers the output file held at the start, and its name (a resume).
    pub kept: u64,
    pub file: Option<String>,
    /// The estimated number of items, when every input is a regular file.
    pub total: Option<u64>,
    /// Input bytes the items so far span, and the inputs' bytes in all when known.
    pub consumed: u64,
    pub bytes: Option<u64>,
    /// Since this run started answering (after the skipped items), and since it started.
    pub answering: Duration,
    pub wall: Duration,
}

impl Counts {
    /// Items answered or found answered already.
    pub fn all(&self) -> u64 {
        self.done + self.skipped
    }

    /// The time left at this run's rate, when the total is known.
    pub fn left(&self) -> Option<Duration> {
        let rate = self.rate(self.answering);
        let total = self.total.filter(|_| rate > 0.0)?;
        Some(Duration::from_secs_f64(
            total.saturating_sub(self.all()) as f64 / rate,
        ))
    }

    /// Items per second this run answered.
    pub fn rate(&self, over: Duration) -> f64 {
        match over.as_secs_f64() {
            s if s > 0.0 => self.done as f64 / s,
            _ => 0.0,
        }
    }
}

/// A `--progress log` line: `patience: progress: 1200 of ~5000 deals (24%), 3 bad, 400 deals/s,
/// about 9s left`.
pub fn progress_line(c: &Counts) -> String {
    let noun = c.noun;
    if c.done == 0 && c.skipped < c.kept {
        let file = c.file.as_deref().unwrap_or("the output");
        return format!(
            "patience: progress: reading again the {} {noun} already answered in {file}: {} so far",
            c.kept, c.skipped
        );
    }
    let all = c.all();
    let mut line = format!("patience: progress: {all}");
    let mut notes = Vec::new();
    if let Some(total) = c.total {
        line.push_str(&format!(" of ~{total}"));
        notes.push(format!("{}%", percent(all, total)));
    }
    line.push_str(&format!(" {noun}"));
    if c.skipped > 0 {
        let file = c.file.as_deref().unwrap_or("the output");
        notes.push(format!("{} were in {file}", c.skipped));
    }
    if !notes.is_empty() {
        line.push_str(&format!(" ({})", notes.join("; ")));
    }
    let rate = c.rate(c.answering);
    line.push_str(&format!(
        ", {} bad, {rate:.0} {noun}/s",
        c.bad + c.skipped_bad
    ));
    if let Some(left) = c.left() {
        line.push_str(&format!(", about {} left", duration(left)));
    }
    line
}

/// The summary: `patience: summary: 1000 deals: 998 answered, 2 bad; 1000 in 1.2s (833 deals/s)`,
/// with what a resume kept, and `more` (the daemons') after it.
pub fn summary_line(c: &Counts, more: Option<&str>) -> String {
    let noun = c.noun;
    let all = c.all();
    let bad = c.bad + c.skipped_bad;
    let mut line = format!(
        "patience: summary: {all} {noun}: {} answered, {bad} bad; ",
        all - bad
    );
    if c.skipped > 0 {
        let file = c.file.as_deref().unwrap_or("the output");
        line.push_str(&format!("{} were already in {file}, ", c.skipped));
    }
    line.push_str(&format!(
        "{} in {} ({:.0} {noun}/s)",
        c.done,
        duration(c.wall),
        c.rate(c.wall)
    ));
    if let Some(more) = more {
        line.push_str("; ");
        line.push_str(more);
    }
    line
}

/// A whole percentage, 0 of nothing.
pub fn percent(part: u64, whole: u64) -> u64 {
    match whole {
        0 => 0,
        _ => ((part as f64 * 100.0 / whole as f64).round() as u64).min(100),
    }
}

/// A duration as people read it in a log: `0.4s`, `12.3s`, `4m07s`, `2h05m`.
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        return format!("{secs:.1}s");
    }
    let whole = d.as_secs();
    match whole {
        ..3600 => format!("{}m{:02}s", whole / 60, whole % 60),
        _ => format!("{}h{:02}m", whole / 3600, whole % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts() -> Counts {
        Counts {
            noun: "deals",
            done: 1200,
            bad: 3,
            skipped: 0,
            skipped_bad: 0,
            kept: 0,
            file: None,
            total: Some(5000),
            consumed: 0,
            bytes: None,
            answering: Duration::from_secs(3),
            wall: Duration::from_secs(3),
        }
    }

    #[test]
    fn a_progress_line_says_done_bad_rate_and_time_left() {
        assert_eq!(
            progress_line(&counts()),
            "patience: progress: 1200 of ~5000 deals (24%), 3 bad, 400 deals/s, about 9.5s left"
        );
        let unknown = Counts {
            total: None,
            ..counts()
        };
        assert_eq!(
            progress_line(&unknown),
            "patience: progress: 1200 deals, 3 bad, 400 deals/s"
        );
    }

    #[test]
    fn a_resume_says_what_was_in_the_file() {
        let reading = Counts {
            done: 0,
            skipped: 300,
            kept: 1000,
            file: Some("out.txt".into()),
            ..counts()
        };
        assert_eq!(
            progress_line(&reading),
            "patience: progress: reading again the 1000 deals already answered in out.txt: 300 so far"
        );
        let resumed = Counts {
            done: 200,
            bad: 1,
            skipped: 1000,
            skipped_bad: 2,
            kept: 1000,
            file: Some("out.txt".into()),
            total: Some(2000),
            answering: Duration::from_secs(2),
            wall: Duration::from_secs(4),
            ..counts()
        };
        assert_eq!(
            progress_line(&resumed),
            "patience: progress: 1200 of ~2000 deals (60%; 1000 were in out.txt), 3 bad, 100 \
             deals/s, about 8.0s left"
        );
        assert_eq!(
            summary_line(&resumed, None),
            "patience: summary: 1200 deals: 1197 answered, 3 bad; 1000 were already in out.txt, \
             200 in 4.0s (50 deals/s)"
        );
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(Duration::from_millis(400)), "0.4s");
        assert_eq!(duration(Duration::from_secs(247)), "4m07s");
        assert_eq!(duration(Duration::from_secs(7500)), "2h05m");
    }
}
