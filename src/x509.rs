//! The one thing about certificates that both ends check themselves: the X.509 version.
//!
//! `openssl x509 -req` without `-extfile` (or `-copy_extensions`), the most common recipe, makes a
//! version 1 certificate, which rustls (and with it the daemon and its client) refuses with an
//! error that never says "version". Both sides look at the version first, so that the refusal
//! says what is wrong and how to make a certificate that works.

/// What to do about a version 1 certificate, for error messages and logs.
pub const VERSION_1_HELP: &str = "it is an X.509 version 1 certificate, and TLS here needs \
     version 3 (openssl x509 -req makes version 1 unless given -extfile with a subjectAltName, or \
     -copy_extensions copy; see docs/serving.md for a recipe)";

/// Whether `der` is an X.509 certificate without a version field, that is version 1. Anything
/// that is not a DER certificate at all answers false: rustls reports that itself.
///
/// `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] EXPLICIT version DEFAULT v1, ... } }`:
/// version 2 and 3 certificates start their `tbsCertificate` with the context tag `[0]` (0xA0).
pub fn is_version_1(der: &[u8]) -> bool {
    let Some(certificate) = sequence_body(der) else {
        return false;
    };
    let Some(tbs) = sequence_body(certificate) else {
        return false;
    };
    tbs.first().is_some_and(|&tag| tag != 0xA0)
}

/// The contents of the DER SEQUENCE at the start of `der`.
fn sequence_body(der: &[u8]) -> Option<&[u8]> {
    let (&tag, rest) = der.split_first()?;
    if tag != 0x30 {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, rest) = rest.split_at(n);
        let len = bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    rest.get(..len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate as DER: SEQUENCE { tbs, and some signature bytes }.
    fn certificate(tbs_body: &[u8]) -> Vec<u8> {
        let mut tbs = vec![0x30, u8::try_from(tbs_body.len()).unwrap()];
        tbs.extend_from_slice(tbs_body);
        let mut body = tbs;
        body.extend_from_slice(&[0x03, 0x02, 0x00, 0xff]);
        let mut der = vec![0x30, 0x82];
        der.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
        der.extend(body);
        der
    }

    #[test]
    fn a_certificate_without_a_version_field_is_version_1() {
        // v3: [0] { INTEGER 2 }, then the serial number.
        let v3 = certificate(&[0xA0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x01, 0x07]);
        assert!(!is_version_1(&v3));
        // v1: the serial number comes first.
        let v1 = certificate(&[0x02, 0x01, 0x07, 0x30, 0x00]);
        assert!(is_version_1(&v1));
    }

    #[test]
    fn what_is_not_a_certificate_is_left_to_rustls() {
        for junk in [
            &[][..],
            &[0x30],
            &[0x30, 0x85, 1, 2, 3, 4, 5],
            &[0x04, 0x00],
            &[0x30, 0x05, 0x30],
        ] {
            assert!(!is_version_1(junk), "{junk:?}");
        }
    }

    /// rcgen makes version 3 certificates, as rustls needs.
    #[test]
    fn a_generated_certificate_is_version_3() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        assert!(!is_version_1(cert.cert.der()));
    }
}
