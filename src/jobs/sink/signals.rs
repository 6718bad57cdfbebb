//! An output's keeper (`sink.rs`, `parquet_out.rs`): a thread of its own that keeps the output
//! durable on a clock and answers SIGINT and SIGTERM, which end a command's run with its output
//! whole, unless the process has left them to someone else (the daemon, whose drain stops the
//! jobs it runs).

use std::future::Future;
use std::io;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// An output's keeper thread, stopped (and waited for) when the output ends or is dropped.
#[derive(Debug)]
pub struct Keeper {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Keeper {
    /// Runs `keep` on a thread of its own (in a runtime of its own) until told to stop by the
    /// receiver it is given; with `watch`, it is also given SIGINT and SIGTERM, registered here,
    /// on the caller's thread, before anything is written: a signal that came before the thread
    /// got going would otherwise end the process with the output unsynced, as SIGKILL does.
    pub fn start<F, Fut>(watch: bool, keep: F) -> io::Result<Keeper>
    where
        F: FnOnce(oneshot::Receiver<()>, Signals) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let signals = match watch {
            true => {
                let _context = runtime.enter();
                Signals::new()
            }
            false => Signals::none(),
        };
        let thread = std::thread::Builder::new()
            .name("output".into())
            .spawn(move || runtime.block_on(keep(stopped, signals)))?;
        Ok(Keeper {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the keeper and waits for its thread to end.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop();
    }
}

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

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals").finish_non_exhaustive()
    }
}

impl Signals {
    /// The signals, watched from now on (none when the process has left them to someone else).
    fn new() -> Signals {
        #[cfg(unix)]
        if SIGNALS_TAKEN.load(std::sync::atomic::Ordering::Relaxed) {
            return Signals::none();
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

    /// No signal: they end the process as they always do.
    fn none() -> Signals {
        Signals {
            #[cfg(unix)]
            interrupt: None,
            #[cfg(unix)]
            terminate: None,
        }
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
