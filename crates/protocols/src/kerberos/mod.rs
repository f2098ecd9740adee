//! Kerberos v5 (RFC 4120): nDPI's `Kerberos`.
//!
//! Messages are DER: an application tag (AS-REQ 10 = `0x6a`, AS-REP `0x6b`, TGS-REQ `0x6c`, TGS-REP `0x6d`,
//! AP-REQ `0x6e`, AP-REP `0x6f`, KRB-ERROR `0x7e`), a SEQUENCE, then the protocol version number 5 as the first
//! field (`[0]` or `[1]` `INTEGER 5`). Over TCP a 4-byte record length precedes the message. The tag, the
//! lengths and `pvno = 5` are checked: certain from one message.

use crate::scan::be32;
use crate::snmp::ber_header;
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Whether `d` starts with a Kerberos message (not necessarily complete).
pub fn is_krb(d: &[u8]) -> bool {
    let Some((tag, _, h)) = ber_header(d) else {
        return false;
    };
    if !matches!(tag, 0x6a..=0x6f | 0x7e) {
        return false;
    }
    let Some((seq, _, h2)) = d.get(h..).and_then(ber_header) else {
        return false;
    };
    let Some(rest) = d.get(h + h2..) else {
        return false;
    };
    // [0] or [1] (context tags a0/a1), length 3, INTEGER length 1 value 5.
    seq == 0x30
        && rest.len() >= 5
        && matches!(rest[0], 0xa0 | 0xa1)
        && rest[1..5] == [0x03, 0x02, 0x01, 0x05]
}

/// Detector for Kerberos over UDP and TCP.
pub struct KerberosDetector;

impl Detector for KerberosDetector {
    fn proto(&self) -> AppProto {
        AppProto::Kerberos
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Udp => {
                if is_krb(ctx.data) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            Transport::Tcp => {
                let p = ctx.prefix;
                let Some(len) = be32(p, 0) else {
                    return if p.first().is_none_or(|&b| b == 0) {
                        Probe::Unsure
                    } else {
                        Probe::NotForUs
                    };
                };
                if !(20..=1 << 20).contains(&len) {
                    return Probe::NotForUs;
                }
                if p.len() < 16 {
                    return Probe::Unsure;
                }
                if is_krb(&p[4..]) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    // Start of an AS-REQ (kerberos-login.pcap): 6a 81 e6, 30 81 e3, a1 03 02 01 05, a2 03 02 01 0a ...
    const AS_REQ: &[u8] = &[
        0x6a, 0x81, 0xe6, 0x30, 0x81, 0xe3, 0xa1, 0x03, 0x02, 0x01, 0x05, 0xa2, 0x03, 0x02, 0x01,
        0x0a, 0xa3, 0x00,
    ];

    #[test]
    fn as_req() {
        assert_eq!(
            KerberosDetector.probe(&ctx_udp(Direction::ToServer, AS_REQ, &[])),
            Probe::Certain
        );
        let mut tcp = vec![0, 0, 0, 0xe9];
        tcp.extend_from_slice(AS_REQ);
        assert_eq!(
            KerberosDetector.probe(&ctx_tcp(Direction::ToServer, &tcp)),
            Probe::Certain
        );
        let mut v4 = AS_REQ.to_vec();
        v4[10] = 4;
        assert_eq!(
            KerberosDetector.probe(&ctx_udp(Direction::ToServer, &v4, &[])),
            Probe::NotForUs
        );
    }
}
