//! Kerberos v5 (RFC 4120): nDPI's `Kerberos`.
//!
//! Messages are DER: an application tag (AS-REQ 10 = `0x6a`, AS-REP `0x6b`, TGS-REQ `0x6c`, TGS-REP `0x6d`,
//! AP-REQ `0x6e`, AP-REP `0x6f`, KRB-ERROR `0x7e`), a SEQUENCE, then the protocol version number 5 as the first
//! field (`[0]` or `[1]` `INTEGER 5`). Over TCP a 4-byte record length precedes the message. The tag, the
//! lengths and `pvno = 5` are checked: certain from one message.
//!
//! The parser reports each message's type (its application tag number: 10 AS-REQ ... 30 KRB-ERROR) to the rules
//! (`krb5_msg_type`) through [`EventSink::krb5_message`], one transaction per message as Suricata counts them: a
//! datagram on UDP, a length-prefixed record on TCP (only the record's first [`HEAD`] bytes are kept to read it;
//! the rest is skipped, so memory stays bounded whatever the record length).

use crate::scan::be32;
use crate::snmp::ber_header;
use crate::{
    AppProto, Detector, Direction, EventSink, Limits, Parser, ParserStats, Probe, ProbeCtx,
    Transport,
};

/// Bytes of a TCP record kept to read its message type (tag, lengths, the SEQUENCE header and `pvno`).
pub const HEAD: usize = 16;

/// The message type of a Kerberos message (its application tag number), if `d` begins with one.
pub fn msg_type(d: &[u8]) -> Option<u8> {
    is_krb(d).then(|| d[0] & 0x1f)
}

/// One direction of a TCP flow: the record being read.
#[derive(Debug, Default)]
struct Record {
    /// The 4-byte length prefix, as it arrives.
    len_buf: Vec<u8>,
    /// The record's first bytes.
    head: Vec<u8>,
    /// Bytes of the record still to come.
    remaining: usize,
    reported: bool,
}

/// Reports each Kerberos message's type (see the module documentation).
struct KerberosParser {
    transport: Transport,
    sides: [Record; 2],
    /// Messages numbered per flow.
    next_tx: u64,
    malformed: u64,
}

impl KerberosParser {
    fn report(&mut self, dir: Direction, d: &[u8], out: &mut dyn EventSink) {
        match msg_type(d) {
            Some(t) => {
                out.krb5_message(self.next_tx, dir == Direction::ToServer, t);
                self.next_tx += 1;
            }
            None => self.malformed += 1,
        }
    }
}

impl Parser for KerberosParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.transport != Transport::Tcp {
            self.report(dir, data, out);
            return;
        }
        let si = usize::from(dir != Direction::ToServer);
        let mut rest = data;
        while !rest.is_empty() {
            let r = &mut self.sides[si];
            if r.remaining == 0 {
                let take = (4 - r.len_buf.len()).min(rest.len());
                r.len_buf.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if r.len_buf.len() < 4 {
                    return;
                }
                // The high bit is reserved (RFC 4120 7.2.2).
                let len = be32(&r.len_buf, 0).unwrap_or(0) & 0x7fff_ffff;
                r.len_buf.clear();
                r.remaining = len as usize;
                r.head.clear();
                r.reported = false;
                continue;
            }
            // This record's bytes in the chunk: the first HEAD are kept, the rest skipped.
            let n = r.remaining.min(rest.len());
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            r.remaining -= n;
            if r.reported {
                continue;
            }
            let room = HEAD.saturating_sub(r.head.len()).min(chunk.len());
            r.head.extend_from_slice(&chunk[..room]);
            if r.head.len() >= HEAD || r.remaining == 0 {
                r.reported = true;
                let head = std::mem::take(&mut r.head);
                self.report(dir, &head, out);
            }
        }
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        // The record boundary is lost: read the next data as a new record.
        self.sides[usize::from(dir != Direction::ToServer)] = Record::default();
    }

    fn stats(&self) -> ParserStats {
        ParserStats {
            malformed: self.malformed,
            ..ParserStats::default()
        }
    }
}

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
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(KerberosParser {
            transport,
            sides: [Record::default(), Record::default()],
            next_tx: 0,
            malformed: 0,
        }))
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

    #[derive(Default)]
    struct Msgs(Vec<(u64, bool, u8)>);
    impl EventSink for Msgs {
        fn event(&mut self, _: crate::AppEvent) {}
        fn krb5_message(&mut self, tx_id: u64, to_server: bool, msg_type: u8) {
            self.0.push((tx_id, to_server, msg_type));
        }
    }

    #[test]
    fn message_types_over_udp_and_tcp_records() {
        let mut udp = KerberosDetector
            .parser(Transport::Udp, &Limits::default())
            .unwrap();
        let mut m = Msgs::default();
        udp.parse(Direction::ToServer, AS_REQ, 0, &mut m);
        udp.parse(Direction::ToClient, b"junk", 0, &mut m);
        assert_eq!(m.0, vec![(0, true, 10)]);
        // Two TCP records, the second a KRB-ERROR, split anywhere; a record longer than what is kept.
        let mut tcp = KerberosDetector
            .parser(Transport::Tcp, &Limits::default())
            .unwrap();
        let mut long = AS_REQ.to_vec();
        long.extend_from_slice(&[0u8; 300]);
        let mut err = AS_REQ.to_vec();
        err[0] = 0x7e;
        let mut bytes = Vec::new();
        for msg in [&long, &err] {
            bytes.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            bytes.extend_from_slice(msg);
        }
        let mut m = Msgs::default();
        for c in bytes.chunks(7) {
            tcp.parse(Direction::ToServer, c, 0, &mut m);
        }
        assert_eq!(m.0, vec![(0, true, 10), (1, true, 30)]);
    }

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
