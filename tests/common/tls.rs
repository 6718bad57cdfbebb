//! Throwaway certificates made at test time.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// A subject of its own for each certificate: rcgen gives every one the same default, and
/// OpenSSL and BoringSSL (grpcio, Node) take a certificate whose subject is its issuer's for a
/// self-signed one, and refuse it.
fn subject(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

/// A certificate authority that exists for one test.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    pub fn new() -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = subject("patience test authority");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("a CA key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("a self-signed CA");
        Authority { issuer }
    }

    /// The authority's own certificate, in PEM: what a peer trusts.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The authority's own certificate, in DER.
    pub fn der(&self) -> Vec<u8> {
        self.issuer.der().to_vec()
    }

    /// A certificate and key for these names, signed by this authority, in PEM.
    pub fn issue(&self, names: &[&str]) -> (String, String) {
        let common_name = names.first().copied().unwrap_or("patience test peer");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::new(names).expect("certificate parameters");
        params.distinguished_name = subject(common_name);
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a signed certificate");
        (cert.pem(), key.serialize_pem())
    }
}
