//! DNSCrypt v2, encrypted DNS between a client and a resolver (UDP, usually port 443): nDPI's `DNScrypt`.
//!
//! From the protocol specification (dnscrypt.info, "DNSCrypt version 2"): a client query is an 8-byte client
//! magic (chosen by the resolver's certificate), the client's 32-byte public key, a 12-byte nonce half and the
//! encrypted query, padded so that the datagram is a multiple of 64 bytes and at least 256; a resolver response starts with the fixed
//! resolver magic `r6fnvWj8` (`72 36 66 6e 76 57 6a 38`), followed by a 24-byte nonce and the encrypted answer.
//! A query-shaped datagram is `Unsure`; the response magic on the resolver's first datagram is certain.

use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

/// The resolver magic that starts every DNSCrypt v2 response.
const RESOLVER_MAGIC: &[u8; 8] = b"r6fnvWj8";
/// Client magic, public key and nonce half in front of the encrypted query.
const QUERY_HEADER: usize = 8 + 32 + 12;
/// Smallest padded query datagram.
const MIN_QUERY: usize = 256;

/// Detector for DNSCrypt.
pub struct DnsCryptDetector;

impl Detector for DnsCryptDetector {
    fn proto(&self) -> AppProto {
        AppProto::DnsCrypt
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        match ctx.dir {
            Direction::ToServer => {
                if d.len() >= MIN_QUERY.max(QUERY_HEADER) && d.len().is_multiple_of(64) {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
            // A response needs a query before it (else the detector would be out), and carries the magic, a
            // nonce and at least an encrypted DNS header with its authentication tag.
            Direction::ToClient if ctx.payload_index > 0 => {
                if d.starts_with(RESOLVER_MAGIC) && d.len() >= 8 + 24 + 16 + 12 {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            Direction::ToClient => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_udp;

    #[test]
    fn a_query_then_a_response_with_the_resolver_magic() {
        let query = vec![0x5a; 512];
        assert_eq!(
            DnsCryptDetector.probe(&ctx_udp(Direction::ToServer, &query, &[])),
            Probe::Unsure
        );
        let unpadded = vec![0x5a; 500];
        assert_eq!(
            DnsCryptDetector.probe(&ctx_udp(Direction::ToServer, &unpadded, &[])),
            Probe::NotForUs
        );
        let mut response = RESOLVER_MAGIC.to_vec();
        response.extend_from_slice(&[0x11; 120]);
        let mut c = ctx_udp(Direction::ToClient, &response, &[]);
        c.payload_index = 1;
        assert_eq!(DnsCryptDetector.probe(&c), Probe::Certain);
        response[0] = b'R';
        let mut c = ctx_udp(Direction::ToClient, &response, &[]);
        c.payload_index = 1;
        assert_eq!(DnsCryptDetector.probe(&c), Probe::NotForUs);
    }
}
