//! The signals an output's keeper answers (`sink.rs`, `parquet_out.rs`): SIGINT and SIGTERM,
//! which end a command's run with its output whole, unless the process has left them to someone
//! else (the daemon, whose drain stops the jobs it runs).

/// Set when this process's SIGINT and SIGTERM are someone else's: the daemon's, whose drain
/// stops the jobs it runs (their outputs then end as every keeper ends them, complete lines
/// synced). A command's keeper ends the process on them instead.
static SIGNALS_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Leaves this process's SIGINT and SIGTERM to the caller: no output's keeper watches them.
pub fn leave_signals_alone() {
    SIGNALS_TAKEN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// What a signal's last words need: how to say them past a progress bar.
pub type Tell = Box<dyn Fn(String) + Send>;

/// SIGINT and SIGTERM, as far as they can be watched.
pub struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub fn new() -> Signals {
        #[cfg(unix)]
        if SIGNALS_TAKEN.load(std::sync::atomic::Ordering::Relaxed) {
            return Signals {
                interrupt: None,
                terminate: None,
            };
        }
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal's name and number; never, for one that cannot be watched (it then ends the
    /// process as it always does, and the keeper's last second is lost, as with SIGKILL).
    pub async fn next(&mut self) -> (&'static str, i32) {
        #[cfg(unix)]
        {
            async fn on(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = on(self.interrupt.as_mut()) => ("SIGINT", 2),
                () = on(self.terminate.as_mut()) => ("SIGTERM", 15),
            }
        }
        #[cfg(not(unix))]
        std::future::pending().await
    }
}
