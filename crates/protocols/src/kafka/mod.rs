//! Apache Kafka's wire protocol: nDPI's `Kafka`.
//!
//! A request is a 32-bit size followed by the request header: API key (0..=74), API version (0..=17), a 32-bit
//! correlation id and a client-id string (16-bit length). The size must account for the whole first payload (a
//! client sends one request and waits) and the client id must be present and printable: certain from the first
//! request.

use crate::scan::{be16, be32};
use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

fn request(p: &[u8]) -> Probe {
    let (Some(size), Some(key), Some(ver)) = (be32(p, 0), be16(p, 4), be16(p, 6)) else {
        return if p.len() < 8 && p.first().is_none_or(|&b| b == 0) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let size = size as usize;
    if !(10..=1 << 24).contains(&size) || key > 74 || ver > 17 {
        return Probe::NotForUs;
    }
    // A client sends one request and waits: the first payload is exactly one request.
    if p.len() > size + 4 {
        return Probe::NotForUs;
    }
    let Some(cid_len) = be16(p, 12) else {
        return Probe::Unsure;
    };
    let cid_len = usize::from(cid_len);
    if cid_len == 0 || cid_len + 10 > size || cid_len > 256 {
        return Probe::NotForUs;
    }
    match p.get(14..14 + cid_len) {
        Some(cid) if cid.iter().all(|&b| b.is_ascii_graphic()) => Probe::Certain,
        Some(_) => Probe::NotForUs,
        None => Probe::Unsure,
    }
}

/// Detector for Kafka.
pub struct KafkaDetector;

impl Detector for KafkaDetector {
    fn proto(&self) -> AppProto {
        AppProto::Kafka
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.dir {
            Direction::ToServer => request(ctx.prefix),
            Direction::ToClient if ctx.payload_index == ctx.dir_index => Probe::NotForUs,
            Direction::ToClient => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    #[test]
    fn api_versions_request() {
        // ApiVersions v3 (key 18) from client "adminclient-1", as in kafka.pcapng.
        let mut d = vec![0, 0, 0, 0, 0, 18, 0, 3, 0, 0, 0, 1, 0, 13];
        d.extend_from_slice(b"adminclient-1");
        d.extend_from_slice(&[0, 0x12, b'a', 0x05, b'3', 0x00]);
        let n = (d.len() - 4) as u32;
        d[..4].copy_from_slice(&n.to_be_bytes());
        assert_eq!(
            KafkaDetector.probe(&ctx_tcp(Direction::ToServer, &d)),
            Probe::Certain
        );
        assert_eq!(
            KafkaDetector.probe(&ctx_tcp(Direction::ToServer, &d[..5])),
            Probe::Unsure
        );
        assert_eq!(
            KafkaDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
    }
}
