//! Where the daemons are and how to reach them: `--addr` values, TLS, the bearer token.
//!
//! An address is `http://HOST:PORT` or `https://HOST:PORT` (one daemon, one connection), or
//! `dns:///NAME:PORT` (gRPC's naming convention; `dns:///NAME:PORT` over TLS is
//! `dns+https:///NAME:PORT`): every address NAME resolves to is a daemon, re-resolved while the
//! run goes on (see `discovery.rs`), which is how one client spreads over the pods behind a
//! Kubernetes headless Service.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// How long connecting to one daemon may take before it counts as failed (the others go on).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_KEEPALIVE: (Duration, Duration) =
    (super::KEEPALIVE_INTERVAL, super::KEEPALIVE_TIMEOUT);

/// One `--addr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One daemon at a URL.
    Url(String),
    /// Every address a name resolves to.
    Dns { name: String, port: u16, tls: bool },
}

/// Why an address or the TLS material cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "{0} is not a daemon address: use http://HOST:PORT, https://HOST:PORT or dns:///NAME:PORT"
    )]
    Address(String),
    #[error("TLS flags need an https:// address (got {0})")]
    TlsWithoutHttps(String),
    #[error("an https:// address needs --tls-ca: the PEM CA that signed the daemon's certificate")]
    NoCa,
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set up TLS for {0}")]
    Tls(String, #[source] tonic::transport::Error),
    /// A certificate without extensions, as `openssl x509 -req` makes unless given some: rustls
    /// (through webpki) takes version 3 certificates only, and would refuse it at connection time
    /// with no more than "UnsupportedCertVersion".
    #[error(
        "{path}: {which} is X.509 version {version}, and TLS here takes version 3 only ({})",
        crate::auth::x509::HOW_TO_MAKE_VERSION_3
    )]
    CertVersion {
        path: String,
        /// "the certificate", or which one of the file's when it holds several.
        which: String,
        version: u8,
    },
}

impl Target {
    pub fn parse(addr: &str) -> Result<Target, ConnectError> {
        let bad = || ConnectError::Address(addr.to_string());
        for (scheme, tls) in [("dns:///", false), ("dns+https:///", true)] {
            if let Some(rest) = addr.strip_prefix(scheme) {
                let (name, port) = rest.rsplit_once(':').ok_or_else(bad)?;
                let port = port.parse().map_err(|_| bad())?;
                if name.is_empty() {
                    return Err(bad());
                }
                return Ok(Target::Dns {
                    name: name.trim_matches(['[', ']']).to_string(),
                    port,
                    tls,
                });
            }
        }
        if !addr.starts_with("http://") && !addr.starts_with("https://") {
            return Err(bad());
        }
        Endpoint::from_shared(addr.to_string()).map_err(|_| bad())?;
        Ok(Target::Url(addr.to_string()))
    }

    /// Whether this target speaks TLS.
    pub fn tls(&self) -> bool {
        match self {
            Target::Url(url) => url.starts_with("https://"),
            Target::Dns { tls, .. } => *tls,
        }
    }
}

/// The TLS files the flags name, read once.
#[derive(Clone, Debug, Default)]
pub struct TlsFiles {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// Everything needed to open a connection to any daemon of the run.
#[derive(Clone, Debug)]
pub struct Connector {
    tls: Option<ClientTlsConfig>,
    /// HTTP/2 pings find a daemon that vanished without closing its connection (a dead host, a
    /// partition), so its chunks are resent instead of waited on for ever: a ping when nothing
    /// came for the interval, and the connection given up when its answer takes the timeout.
    keepalive: (Duration, Duration),
}

impl Connector {
    /// Checks the TLS flags against the targets and reads the files.
    pub fn new(targets: &[Target], files: &TlsFiles) -> Result<Connector, ConnectError> {
        if let Some(plain) = targets.iter().find(|t| !t.tls())
            && (files.ca.is_some() || files.cert.is_some())
        {
            return Err(ConnectError::TlsWithoutHttps(display(plain)));
        }
        if !targets.iter().any(Target::tls) {
            return Ok(Connector {
                tls: None,
                keepalive: DEFAULT_KEEPALIVE,
            });
        }
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|source| ConnectError::Read {
                path: path.display().to_string(),
                source,
            })
        };
        let ca = files.ca.as_ref().ok_or(ConnectError::NoCa)?;
        // A CA of version 1 is a trust anchor like any other: only what is presented is checked.
        let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
        if let (Some(cert), Some(key)) = (&files.cert, &files.key) {
            let pem = read(cert)?;
            check_versions(&pem, cert)?;
            tls = tls.identity(Identity::from_pem(pem, read(key)?));
        }
        Ok(Connector {
            tls: Some(tls),
            keepalive: DEFAULT_KEEPALIVE,
        })
    }

    /// The keepalive's interval and timeout (`--keepalive-interval`, `--keepalive-timeout`).
    pub fn keepalive(mut self, interval: Duration, timeout: Duration) -> Connector {
        self.keepalive = (interval, timeout);
        self
    }

    /// The endpoint of one daemon: a URL, or an address found for a DNS name (whose certificate
    /// must then name the DNS name, not the address).
    pub fn endpoint(&self, daemon: &Daemon) -> Result<Endpoint, ConnectError> {
        let url = daemon.url();
        let endpoint = Endpoint::from_shared(url.clone())
            .map_err(|_| ConnectError::Address(url.clone()))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(self.keepalive.0)
            .keep_alive_timeout(self.keepalive.1)
            .keep_alive_while_idle(true)
            // The responses' window follows the bandwidth-delay product, so answers from a
            // distant daemon are not held back one 64 KiB window per round trip.
            .http2_adaptive_window(true);
        match (&self.tls, daemon) {
            (Some(tls), Daemon::Url(url)) if url.starts_with("https://") => endpoint
                .tls_config(tls.clone())
                .map_err(|e| ConnectError::Tls(url.clone(), e)),
            (
                Some(tls),
                Daemon::Resolved {
                    name, tls: true, ..
                },
            ) => endpoint
                .tls_config(tls.clone().domain_name(name.clone()))
                .map_err(|e| ConnectError::Tls(url.clone(), e)),
            _ => Ok(endpoint),
        }
    }
}

/// One daemon the run talks to: a URL as given, or one address of a DNS name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Daemon {
    Url(String),
    Resolved {
        name: String,
        addr: SocketAddr,
        tls: bool,
    },
}

impl Daemon {
    fn url(&self) -> String {
        match self {
            Daemon::Url(url) => url.clone(),
            Daemon::Resolved { addr, tls, .. } => {
                format!("{}://{addr}", if *tls { "https" } else { "http" })
            }
        }
    }
}

impl std::fmt::Display for Daemon {
    /// As messages name it: the URL, or the address and the name it was found under.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Daemon::Url(url) => f.write_str(url),
            Daemon::Resolved { name, addr, .. } => write!(f, "{addr} ({name})"),
        }
    }
}

/// Refuses a PEM file whose certificates are not all X.509 version 3, saying how to make one that
/// is; certificates it cannot read are left to rustls to refuse in its own words.
fn check_versions(pem: &[u8], path: &std::path::Path) -> Result<(), ConnectError> {
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    let certificates = CertificateDer::pem_slice_iter(pem).filter_map(Result::ok);
    for (n, certificate) in certificates.enumerate() {
        if let Some(version) = crate::auth::x509::not_version_3(&certificate) {
            return Err(ConnectError::CertVersion {
                path: path.display().to_string(),
                which: match n {
                    0 => "the certificate".to_string(),
                    n => format!("certificate {} of the file", n + 1),
                },
                version,
            });
        }
    }
    Ok(())
}

fn display(target: &Target) -> String {
    match target {
        Target::Url(url) => url.clone(),
        Target::Dns { name, port, .. } => format!("dns:///{name}:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_urls_or_dns_names() {
        assert_eq!(
            Target::parse("http://127.0.0.1:50051").unwrap(),
            Target::Url("http://127.0.0.1:50051".into())
        );
        assert_eq!(
            Target::parse("dns:///patience-headless:50051").unwrap(),
            Target::Dns {
                name: "patience-headless".into(),
                port: 50051,
                tls: false
            }
        );
        assert!(
            Target::parse("dns+https:///solver.example:443")
                .unwrap()
                .tls()
        );
        for bad in [
            "127.0.0.1:50051",
            "dns:///nameonly",
            "dns:///:50051",
            "dns:///x:port",
        ] {
            let e = Target::parse(bad).unwrap_err().to_string();
            assert!(e.contains("dns:///NAME:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn tls_flags_need_tls_addresses_and_tls_needs_a_ca() {
        let plain = [Target::parse("http://127.0.0.1:1").unwrap()];
        let files = TlsFiles {
            ca: Some("ca.pem".into()),
            ..TlsFiles::default()
        };
        assert!(matches!(
            Connector::new(&plain, &files),
            Err(ConnectError::TlsWithoutHttps(_))
        ));
        let tls = [Target::parse("https://127.0.0.1:1").unwrap()];
        assert!(matches!(
            Connector::new(&tls, &TlsFiles::default()),
            Err(ConnectError::NoCa)
        ));
    }
}
