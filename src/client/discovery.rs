//! Daemons found by name: `dns:///NAME:PORT` is every address NAME resolves to, each a lane of its
//! own, and the name is resolved again every `--dns-refresh` and whenever one of its daemons
//! fails, so that pods that come and go behind a Kubernetes headless Service are followed: a new
//! address becomes a new daemon and takes work at once; an address no longer in the answer is
//! let go (it takes nothing new, answers what it holds, and is dropped), so that a reused pod
//! address is never sent work meant for the pod that left.

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::connect::Daemon;

/// A future of a resolution.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>>;

/// Resolves names to addresses. The system's resolver by default; tests give their own.
pub trait Resolve: Send + Sync {
    fn resolve<'a>(&'a self, name: &'a str, port: u16) -> Resolving<'a>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, name: &'a str, port: u16) -> Resolving<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((name, port)).await?.collect()) })
    }
}

/// What a name's watcher found.
#[derive(Debug)]
pub enum Found {
    /// An address not seen before under the name (or seen, gone, and back).
    Daemon(Daemon),
    /// An address the name no longer resolves to.
    Gone(Daemon),
    /// A resolution failed (the addresses found before stay).
    Failed { name: String, error: String },
}

/// One `dns:///` target being watched.
pub struct Watch {
    pub name: String,
    pub port: u16,
    pub tls: bool,
    pub resolver: Arc<dyn Resolve>,
    pub every: Duration,
    /// Notified when one of the name's daemons fails: resolve again now.
    pub again: Arc<Notify>,
    pub found: mpsc::UnboundedSender<Found>,
    pub cancel: CancellationToken,
}

/// The resolver is a trait object: the name and the period are what tell watches apart.
impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("name", &self.name)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// Resolves the name once; the daemons found, or why none was.
    pub async fn first(&self) -> Result<Vec<Daemon>, String> {
        match self.resolver.resolve(&self.name, self.port).await {
            Ok(addrs) if addrs.is_empty() => Err(format!("{} resolves to no address", self.name)),
            Ok(addrs) => Ok(dedup(addrs).map(|addr| self.daemon(addr)).collect()),
            Err(e) => Err(format!("cannot resolve {}: {e}", self.name)),
        }
    }

    /// Resolves the name again now and then, reporting addresses not in `known` as they appear,
    /// and those that disappear, until the run is over. A resolution that fails changes nothing.
    pub async fn run(self, known: Vec<Daemon>) {
        let mut seen: HashSet<Daemon> = known.into_iter().collect();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.every) => {}
                () = self.again.notified() => {}
                () = self.cancel.cancelled() => return,
            }
            let resolved = tokio::select! {
                resolved = self.resolver.resolve(&self.name, self.port) => resolved,
                () = self.cancel.cancelled() => return,
            };
            let report = match resolved {
                Ok(addrs) => {
                    let now: HashSet<Daemon> = dedup(addrs).map(|addr| self.daemon(addr)).collect();
                    let mut gone: Vec<Daemon> = seen.difference(&now).cloned().collect();
                    gone.sort_by_key(ToString::to_string);
                    let mut new: Vec<Daemon> = now.difference(&seen).cloned().collect();
                    new.sort_by_key(ToString::to_string);
                    seen = now;
                    let reports = gone
                        .into_iter()
                        .map(Found::Gone)
                        .chain(new.into_iter().map(Found::Daemon));
                    for report in reports {
                        if self.found.send(report).is_err() {
                            return;
                        }
                    }
                    continue;
                }
                Err(e) => Found::Failed {
                    name: self.name.clone(),
                    error: e.to_string(),
                },
            };
            if self.found.send(report).is_err() {
                return;
            }
        }
    }

    fn daemon(&self, addr: SocketAddr) -> Daemon {
        Daemon::Resolved {
            name: self.name.clone(),
            addr,
            tls: self.tls,
        }
    }
}

/// Addresses once each, in the order given.
fn dedup(addrs: Vec<SocketAddr>) -> impl Iterator<Item = SocketAddr> {
    let mut seen = HashSet::new();
    addrs.into_iter().filter(move |a| seen.insert(*a))
}
