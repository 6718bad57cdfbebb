//! The daemon's TLS: a rustls configuration from the PEM files `serve` is given.
//!
//! The server does its own TLS handshakes (rather than leaving them to tonic) so that one
//! deadline, `--handshake-timeout`, covers the TLS handshake and the HTTP/2 preface after it.

use std::io::Cursor;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};

use super::TlsIdentity;

/// Why the TLS material cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the certificate file holds no PEM certificate")]
    NoCertificate,
    #[error("the key file holds no PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoKey,
    #[error("the client CA file holds no PEM certificate")]
    NoClientCa,
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
    #[error("the client CA cannot verify certificates: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// The acceptor for `identity`: its certificate chain and key, ALPN `h2` (gRPC is HTTP/2 only),
/// and with a client CA, client certificates required and checked against it.
pub fn acceptor(identity: &TlsIdentity) -> Result<TlsAcceptor, TlsError> {
    let certs = certificates(&identity.cert_pem);
    if certs.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_reader(&mut Cursor::new(&identity.key_pem))
        .map_err(|_| TlsError::NoKey)?;
    let builder = ServerConfig::builder();
    let builder = match &identity.client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(certificates(ca));
            if added == 0 {
                return Err(TlsError::NoClientCa);
            }
            builder.with_client_cert_verifier(WebPkiClientVerifier::builder(roots.into()).build()?)
        }
    };
    let mut config = builder.with_single_cert(certs, key)?;
    config.alpn_protocols.push(b"h2".to_vec());
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_reader_iter(&mut Cursor::new(pem))
        .filter_map(Result::ok)
        .collect()
}
