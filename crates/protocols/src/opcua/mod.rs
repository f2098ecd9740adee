//! OPC UA's binary TCP transport (OPC 10000-6, section 7.1): nDPI's `OPC-UA`.
//!
//! Every message chunk starts with a three-letter message type (`HEL`, `ACK`, `ERR`, `RHE`, `OPN`, `MSG`,
//! `CLO`), a chunk type (`F` final; `C` and `A` only for the secured `OPN`/`MSG`/`CLO`) and a 32-bit
//! little-endian message size that includes the header. A client opens with `HEL`, a server answers `ACK`, a
//! reverse-connecting server opens with `RHE`. A complete first chunk of that form is certain.

use crate::scan::le32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Header: type, chunk type, size.
const HEADER: usize = 8;

/// Detector for OPC UA binary.
pub struct OpcUaDetector;

impl Detector for OpcUaDetector {
    fn proto(&self) -> AppProto {
        AppProto::OpcUa
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"HAROE")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let types: [&[u8]; 4] = [b"HELF", b"ACKF", b"RHEF", b"ERRF"];
        let head = &p[..p.len().min(4)];
        if !types.iter().any(|t| t.starts_with(head)) {
            return Probe::NotForUs;
        }
        let Some(size) = le32(p, 4) else {
            return Probe::Unsure;
        };
        let size = size as usize;
        // A Hello carries five 32-bit limits and an endpoint URL of at most 4096 bytes.
        if !(HEADER + 8..=HEADER + 20 + 4 + 4096).contains(&size) {
            return Probe::NotForUs;
        }
        if p.len() < size {
            return Probe::Unsure;
        }
        // The protocol version (the first field of HEL, ACK and RHE's successors) is 0.
        match le32(p, HEADER) {
            Some(0) if !p.starts_with(b"ERR") => Probe::Certain,
            Some(_) if p.starts_with(b"ERR") => Probe::Certain,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn hello(url: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for v in [0u32, 65536, 65536, 0x0100_0000, 0] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&(url.len() as u32).to_le_bytes());
        body.extend_from_slice(url);
        let mut m = b"HELF".to_vec();
        m.extend_from_slice(&((HEADER + body.len()) as u32).to_le_bytes());
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn hello_chunk() {
        let probe = |d: &[u8]| OpcUaDetector.probe(&ctx_tcp(Direction::ToServer, d));
        let h = hello(b"opc.tcp://localhost:4840");
        assert_eq!(probe(&h), Probe::Certain);
        assert_eq!(probe(&h[..20]), Probe::Unsure);
        assert_eq!(probe(b"HE"), Probe::Unsure);
        let mut v = h.clone();
        v[8] = 7;
        assert_eq!(probe(&v), Probe::NotForUs, "protocol version 0");
        assert_eq!(probe(b"HELO mail.example.com\r\n"), Probe::NotForUs);
    }
}
