//! The daemon's TLS: a rustls configuration from the PEM files `serve` is given.
//!
//! The server does its own TLS handshakes (rather than leaving them to tonic) so that one
//! deadline, `--handshake-timeout`, covers the TLS handshake and the HTTP/2 preface after it.

use std::io::Cursor;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio_rustls::rustls::{
    self, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};

use super::TlsIdentity;
use crate::auth::x509;

/// Why the TLS material cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the certificate file holds no PEM certificate")]
    NoCertificate,
    #[error(
        "the certificate file's certificate is X.509 version {version}, and TLS here takes \
         version 3 only ({})",
        x509::HOW_TO_MAKE_VERSION_3
    )]
    CertVersion { version: u8 },
    #[error("the key file holds no PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoKey,
    #[error("the client CA file holds no PEM certificate")]
    NoClientCa,
    #[error("rustls refuses the certificate and key")]
    Rustls(#[from] rustls::Error),
    #[error("the client CA cannot verify certificates")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// The acceptor for `identity`: its certificate chain and key, ALPN `h2` (gRPC is HTTP/2 only),
/// and with a client CA, client certificates required and checked against it.
pub fn acceptor(identity: &TlsIdentity) -> Result<TlsAcceptor, TlsError> {
    let certs = certificates(&identity.cert_pem);
    match certs.first() {
        None => return Err(TlsError::NoCertificate),
        Some(leaf) => {
            if let Some(version) = x509::not_version_3(leaf) {
                return Err(TlsError::CertVersion { version });
            }
        }
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
            let webpki = WebPkiClientVerifier::builder(roots.into()).build()?;
            builder.with_client_cert_verifier(Arc::new(VersionFirst(webpki)))
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

/// The client certificate verifier, with the version looked at first: a version 1 client
/// certificate is refused in words ([`x509::HOW_TO_MAKE_VERSION_3`]), which the server logs,
/// where rustls's own verifier says only `Other(UnsupportedCertVersion)`.
#[derive(Debug)]
struct VersionFirst(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for VersionFirst {
    fn offer_client_auth(&self) -> bool {
        self.0.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.0.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if let Some(version) = x509::not_version_3(end_entity) {
            return Err(rustls::Error::General(format!(
                "the client's certificate is X.509 version {version}, and TLS here takes version \
                 3 only ({})",
                x509::HOW_TO_MAKE_VERSION_3
            )));
        }
        self.0.verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Logs (and counts) a failed handshake in words: rustls's error, found under the I/O error the
/// acceptor returns, says what the client got wrong (a certificate from another authority, none
/// at all, a version 1 certificate).
pub fn log_refused(
    metrics: &crate::metrics::Metrics,
    peer: Option<std::net::SocketAddr>,
    error: &std::io::Error,
) {
    match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::General(why)) => metrics.tls_refused(peer, why),
        Some(e) => metrics.tls_refused(peer, e),
        None => metrics.tls_refused(peer, error),
    }
}
