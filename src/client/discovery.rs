//! Daemons found by name: `dns:///NAME:PORT` is every address NAME resolves to, each a lane of its
//! own, and the name is resolved again every `--dns-refresh` and whenever one of its daemons
//! fails, so that pods that come and go behind a Kubernetes headless Service are followed: a new
//! address becomes a new lane and takes work at once; an address that went away fails its lane,
//! whose chunks go to the others.

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
    /// An address not seen before under the name.
    Daemon(Daemon),
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
    /// until the run is over.
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
                    for daemon in dedup(addrs).map(|addr| self.daemon(addr)) {
                        if seen.insert(daemon.clone())
                            && self.found.send(Found::Daemon(daemon)).is_err()
                        {
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
