//! Throwaway certificates made at test time.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, KeyUsagePurpose};

/// A certificate authority that exists for one test.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    pub fn new() -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
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
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let key = KeyPair::generate().expect("a key");
        let cert = CertificateParams::new(names)
            .expect("certificate parameters")
            .signed_by(&key, &self.issuer)
            .expect("a signed certificate");
        (cert.pem(), key.serialize_pem())
    }
}
