//! What a client says of its daemons, in words: the line on standard error when something
//! happens to one, and what the daemons did, for the summary a run ends with.

use super::{Event, Sent, Tally};

/// What the daemons did, for the summary of `client` and `rps --addr`: `by daemon:
/// http://a:50051 612 (61%), http://b:50051 388 (39%); resent 2 requests (64 deals), hedged 0`.
pub fn daemons(tally: &Tally, noun: &str) -> String {
    let items = tally.items();
    let shares: Vec<String> = tally
        .daemons
        .iter()
        .map(|d| format!("{} {} ({}%)", d.daemon, d.items, percent(d.items, items)))
        .collect();
    let sent = |what: &str, sent: Sent| match sent.requests {
        0 => format!("{what} 0"),
        1 => format!("{what} 1 request ({} {noun})", sent.items),
        n => format!("{what} {n} requests ({} {noun})", sent.items),
    };
    let mut line = format!(
        "by daemon: {}; {}, {}",
        if shares.is_empty() {
            "none".to_string()
        } else {
            shares.join(", ")
        },
        sent("resent", tally.resent),
        sent("hedged", tally.hedged)
    );
    if tally.duplicates > 0 {
        line.push_str(&format!(", {} late answers dropped", tally.duplicates));
    }
    line
}

/// A whole percentage (rounded half up), 0 of nothing.
fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    let (part, whole) = (u128::from(part), u128::from(whole));
    u64::try_from(((part * 200 + whole) / (2 * whole)).min(100)).unwrap_or(100)
}

/// "its unanswered request", or "its N unanswered requests".
fn unanswered(n: usize) -> String {
    match n {
        1 => "its unanswered request".to_string(),
        n => format!("its {n} unanswered requests"),
    }
}

/// The line on standard error about what happened to a daemon; `None` for the run's end, whose
/// summary the caller says.
pub fn event(event: &Event) -> Option<String> {
    Some(match event {
        Event::Failed {
            daemon,
            reason,
            resent,
            others,
        } => {
            let requests = unanswered(*resent);
            let what = match (resent, others) {
                (0, _) => String::new(),
                (1, 0) => format!("; {requests} waits for a daemon to be back (it is retried)"),
                (_, 0) => format!("; {requests} wait for a daemon to be back (it is retried)"),
                (1, _) => format!("; {requests} goes to the other daemons"),
                _ => format!("; {requests} go to the other daemons"),
            };
            format!("patience: warning: {daemon} failed: {reason}{what}")
        }
        Event::Back { daemon } => format!("patience: note: {daemon} is back"),
        Event::Slowed {
            daemon,
            holding,
            others,
        } => {
            let requests = unanswered(*holding);
            let (wait, go, them) = match holding {
                1 => ("waits", "goes", "it"),
                _ => ("wait", "go", "them"),
            };
            let what = match others {
                // With no other daemon up, the dispatcher has nowhere to send them.
                0 => {
                    format!("{requests} {wait} for it: there is no other daemon to send {them} to")
                }
                _ => format!(
                    "{requests} also {go} to the other daemons, and the first answer counts"
                ),
            };
            format!("patience: note: {daemon} has answered nothing for a while; {what}")
        }
        Event::Found { daemon } => format!("patience: note: found {daemon}; it takes work too"),
        Event::Left { daemon, holding } => {
            let what = match holding {
                0 => String::new(),
                1 => "; it answers the request it holds".into(),
                n => format!("; it answers the {n} requests it holds"),
            };
            format!("patience: note: {daemon} left its name; it takes no new work{what}")
        }
        Event::Retired { daemon, reason } => {
            format!("patience: warning: {daemon} is left out of the run: {reason}")
        }
        Event::ResolveFailed { name, error } => format!("patience: warning: {name}: {error}"),
        Event::Done(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Daemon, Share};

    /// A quiet daemon's chunks are hedged only where another daemon is up to take them, and the
    /// note says which.
    #[test]
    fn a_quiet_daemon_s_note_says_where_its_requests_go() {
        let slowed = |holding, others| {
            event(&Event::Slowed {
                daemon: Daemon::Url("http://a:1".into()),
                holding,
                others,
            })
        };
        assert_eq!(
            slowed(3, 1).as_deref(),
            Some(
                "patience: note: http://a:1 has answered nothing for a while; its 3 unanswered \
                 requests also go to the other daemons, and the first answer counts"
            )
        );
        assert_eq!(
            slowed(1, 0).as_deref(),
            Some(
                "patience: note: http://a:1 has answered nothing for a while; its unanswered \
                 request waits for it: there is no other daemon to send it to"
            )
        );
    }

    #[test]
    fn the_summary_adds_the_daemons_shares_and_resends() {
        let tally = Tally {
            daemons: vec![
                Share {
                    daemon: Daemon::Url("http://a:1".into()),
                    requests: 3,
                    items: 600,
                },
                Share {
                    daemon: Daemon::Url("http://b:1".into()),
                    requests: 2,
                    items: 400,
                },
            ],
            resent: Sent {
                requests: 2,
                items: 64,
            },
            hedged: Sent::default(),
            duplicates: 0,
        };
        let more = daemons(&tally, "deals");
        assert_eq!(
            more,
            "by daemon: http://a:1 600 (60%), http://b:1 400 (40%); resent 2 requests (64 deals), \
             hedged 0"
        );
    }
}
