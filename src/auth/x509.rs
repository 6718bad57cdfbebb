//! The one thing about certificates that both ends check themselves: the X.509 version.
//!
//! `openssl x509 -req` without `-extfile` (or `-copy_extensions`), the most common recipe, makes a
//! version 1 certificate, which rustls (through webpki) refuses with no more than
//! `UnsupportedCertVersion`. Both the daemon and its client look at the version first, so that
//! the refusal says what is wrong and how to make a certificate that works.

/// How to make a certificate that rustls takes, for the messages of both ends.
pub const HOW_TO_MAKE_VERSION_3: &str = "version 3 is what certificate extensions make: issue it \
     again with extensions, such as `openssl x509 -req ... -extfile FILE` with a line like \
     `subjectAltName=DNS:localhost` in FILE (or `-copy_extensions copyall`, for a request made \
     with `openssl req -addext ...`), or make it with `openssl req -x509 -CA CA.pem -CAkey CA.key \
     ...`; docs/serving.md has a recipe";

/// The X.509 version of a DER certificate (1, 2 or 3), from the first bytes of its
/// `TBSCertificate`, or `None` when they are not laid out as a certificate's (rustls then
/// refuses it in its own words):
///
/// ```text
/// Certificate    ::= SEQUENCE { tbsCertificate TBSCertificate, ... }
/// TBSCertificate ::= SEQUENCE { version [0] EXPLICIT INTEGER DEFAULT v1,  -- 0 is v1, 2 is v3
///                               serialNumber INTEGER, ... }
/// ```
///
/// A version 1 certificate usually leaves the version out (DER omits a default), so the
/// `TBSCertificate` starts with the serial number's INTEGER tag.
pub fn version(der: &[u8]) -> Option<u8> {
    let tbs = sequence_contents(sequence_contents(der)?)?;
    match tbs {
        [0xa0, 0x03, 0x02, 0x01, v @ 0..=2, ..] => Some(v + 1),
        [0x02, ..] => Some(1),
        _ => None,
    }
}

/// The version of `der` when it is a certificate of another version than 3.
pub fn not_version_3(der: &[u8]) -> Option<u8> {
    version(der).filter(|&v| v != 3)
}

/// The contents of the DER SEQUENCE that `der` starts with.
fn sequence_contents(der: &[u8]) -> Option<&[u8]> {
    let [0x30, first, rest @ ..] = der else {
        return None;
    };
    let (len, rest) = if first & 0x80 == 0 {
        (usize::from(*first), rest)
    } else {
        // Long form: the low bits count the length's bytes (a certificate needs at most 4).
        let bytes = usize::from(first & 0x7f);
        if !(1..=4).contains(&bytes) {
            return None;
        }
        let (len, rest) = rest.split_at_checked(bytes)?;
        let len = len.iter().fold(0usize, |n, &b| n << 8 | usize::from(b));
        (len, rest)
    };
    rest.get(..len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rcgen's certificates are version 3; one without the version field (as `openssl x509 -req`
    /// writes without extensions) is version 1, and so is one that says v1 explicitly.
    #[test]
    fn the_x509_version_is_read_from_the_der() {
        let key = rcgen::KeyPair::generate().unwrap();
        let v3 = rcgen::CertificateParams::new(vec!["client".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        assert_eq!(version(v3.der()), Some(3));
        assert_eq!(not_version_3(v3.der()), None);
        // SEQUENCE { SEQUENCE { INTEGER 1, ... } ... }, lengths short and long.
        let v1 = [0x30, 0x07, 0x30, 0x05, 0x02, 0x01, 0x01, 0x05, 0x00];
        assert_eq!(version(&v1), Some(1));
        assert_eq!(not_version_3(&v1), Some(1));
        let mut long = vec![0x30, 0x81, 0x09, 0x30, 0x82, 0x00, 0x05];
        long.extend([0xa0, 0x03, 0x02, 0x01, 0x00]);
        assert_eq!(version(&long), Some(1));
        for junk in [
            &[][..],
            &[0x30],
            &[0x30, 0x05, 0x30],
            &[0x31, 0x00],
            &[0x30, 0x85],
        ] {
            assert_eq!(version(junk), None, "{junk:?}");
            assert_eq!(not_version_3(junk), None, "{junk:?}");
        }
    }
}
