//! SNMP v1, v2c and v3 (RFC 1157, 1901, 3412): nDPI's `SNMP`.
//!
//! A message is a BER `SEQUENCE` that spans the whole datagram, whose first element is `INTEGER version` (0, 1 or
//! 3). v1/v2c follow with an `OCTET STRING` community and a context-specific PDU tag (`0xa0`..=`0xa8`: Get,
//! GetNext, Response, Set, Trap, GetBulk, Inform, TrapV2, Report); v3 with the `msgGlobalData` `SEQUENCE`. Checking
//! these three or four TLVs, with their lengths consistent with the datagram, is certain from one packet.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// One BER TLV header: `(tag, content length, header length)`. Definite lengths only, up to 4 length bytes.
pub fn ber_header(d: &[u8]) -> Option<(u8, usize, usize)> {
    let tag = *d.first()?;
    let l0 = *d.get(1)?;
    if l0 < 0x80 {
        return Some((tag, usize::from(l0), 2));
    }
    let n = usize::from(l0 & 0x7f);
    if n == 0 || n > 4 {
        return None;
    }
    let mut len = 0usize;
    for i in 0..n {
        len = len << 8 | usize::from(*d.get(2 + i)?);
    }
    Some((tag, len, 2 + n))
}

/// The SNMP version number (0 = v1, 1 = v2c, 3 = v3) if `d` is a well-formed SNMP message.
pub fn snmp_version(d: &[u8]) -> Option<u8> {
    let (tag, len, hl) = ber_header(d)?;
    if tag != 0x30 || hl + len != d.len() {
        return None;
    }
    let body = &d[hl..];
    let (t, l, h) = ber_header(body)?;
    if t != 0x02 || l != 1 {
        return None;
    }
    let version = *body.get(h)?;
    let rest = body.get(h + 1..)?;
    match version {
        0 | 1 => {
            let (t, l, h) = ber_header(rest)?;
            if t != 0x04 || l > 255 {
                return None;
            }
            let pdu = rest.get(h + l..)?;
            let (t, l, h) = ber_header(pdu)?;
            ((0xa0..=0xa8).contains(&t) && h + l == pdu.len()).then_some(version)
        }
        3 => {
            let (t, l, h) = ber_header(rest)?;
            (t == 0x30 && h + l <= rest.len()).then_some(3)
        }
        _ => None,
    }
}

/// Detector for SNMP over UDP.
pub struct SnmpDetector;

impl Detector for SnmpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Snmp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if snmp_version(ctx.data).is_some() {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    // snmp.pcap style v1 GetRequest: community "public", request-id 0x26, one varbind sysDescr.0 = NULL.
    const GET: &[u8] = &[
        0x30, 0x26, 0x02, 0x01, 0x00, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x19,
        0x02, 0x01, 0x26, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30, 0x0e, 0x30, 0x0c, 0x06, 0x08,
        0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x01, 0x00, 0x05, 0x00,
    ];

    #[test]
    fn v1_get() {
        assert_eq!(snmp_version(GET), Some(0));
        assert_eq!(
            SnmpDetector.probe(&ctx_udp(Direction::ToServer, GET, &[])),
            Probe::Certain
        );
        assert_eq!(
            SnmpDetector.probe(&ctx_udp(Direction::ToServer, &GET[..GET.len() - 1], &[])),
            Probe::NotForUs
        );
        let mut bad = GET.to_vec();
        bad[13] = 0xb0;
        assert_eq!(
            SnmpDetector.probe(&ctx_udp(Direction::ToServer, &bad, &[])),
            Probe::NotForUs
        );
    }
}
