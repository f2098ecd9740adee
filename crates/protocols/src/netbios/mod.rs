//! NetBIOS over TCP/IP (RFC 1001/1002): the name service (UDP 137), the datagram service (UDP 138) and the session
//! service's session request (TCP 139). nDPI names all three `NetBIOS`.
//!
//! What makes them recognisable is the *first-level encoded* NetBIOS name: a length byte of 32 followed by 32
//! characters in `A`..=`P` (each nibble of the 16-byte name plus `A`). A DNS-shaped header with such a name, a
//! datagram header with one, or a session request (`0x81`) with two, is certain from one packet; anything else is
//! rejected from its first bytes.

use crate::scan::{be16, be24};
use crate::{AppProto, Detector, Direction, EventSink, Limits, Parser, Probe, ProbeCtx, Transport};

/// Whether `d` starts with an encoded NetBIOS name (`0x20` + 32 chars `A`..=`P`), returning the bytes after it
/// (the scope labels, then a zero byte, follow: skipped here up to the terminating zero).
pub fn encoded_name(d: &[u8]) -> Option<&[u8]> {
    if *d.first()? != 0x20 {
        return None;
    }
    let name = d.get(1..33)?;
    if !name.iter().all(|b| (b'A'..=b'P').contains(b)) {
        return None;
    }
    // Scope: DNS-style labels until a zero length.
    let mut i = 33;
    loop {
        let l = usize::from(*d.get(i)?);
        if l == 0 {
            return d.get(i + 1..);
        }
        if l > 63 {
            return None;
        }
        i += 1 + l;
    }
}

/// Decodes the 15-character NetBIOS name (and its suffix byte) from the 32 encoded characters.
pub fn decode_name(encoded: &[u8]) -> Option<(String, u8)> {
    let e = encoded.get(..32)?;
    let mut raw = [0u8; 16];
    for (i, pair) in e.chunks_exact(2).enumerate() {
        let hi = pair[0].checked_sub(b'A')?;
        let lo = pair[1].checked_sub(b'A')?;
        if hi > 15 || lo > 15 {
            return None;
        }
        raw[i] = hi << 4 | lo;
    }
    let name = String::from_utf8_lossy(&raw[..15]).trim_end().to_string();
    Some((name, raw[15]))
}

/// NBNS: DNS-like header (RFC 1002 §4.2.1), opcode query/registration/release/WACK/refresh, one name.
fn name_service(d: &[u8], strict_name: bool) -> bool {
    let (Some(flags), Some(qd), Some(an), Some(ns), Some(ar)) =
        (be16(d, 2), be16(d, 4), be16(d, 6), be16(d, 8), be16(d, 10))
    else {
        return false;
    };
    let opcode = (flags >> 11) & 0x0f;
    let response = flags & 0x8000 != 0;
    if !matches!(opcode, 0 | 5 | 6 | 7 | 8 | 9) || flags & 0x0040 != 0 {
        return false;
    }
    // Requests carry one question (plus one additional record for registrations); responses one answer.
    let shape_ok = if response {
        qd == 0 && an <= 1 && ns == 0 && ar == 0
    } else {
        qd == 1 && an == 0 && ns == 0 && ar <= 1
    };
    // Node status (NBSTAT) queries use the wildcard name "*" which encodes as "CKAAAA...": still A..P.
    let name_ok = if strict_name {
        d.get(12..).and_then(encoded_name).is_some()
    } else {
        d.len() >= 12 + 34 && d.get(12).is_some_and(|&l| (0x20..=0x21).contains(&l))
    };
    shape_ok && (qd + an) == 1 && name_ok
}

/// NBDGM (RFC 1002 §4.4): direct unique/group/broadcast datagrams carry source and destination names;
/// error and query datagrams are short.
fn datagram_service(d: &[u8], strict_name: bool) -> bool {
    let Some(&ty) = d.first() else { return false };
    let Some(&flags) = d.get(1) else { return false };
    if flags & 0xf0 != 0 {
        return false;
    }
    if !strict_name {
        // Header only: type, flags, and the source port field (RFC 1002 puts 138 there).
        return (0x10..=0x16).contains(&ty) && d.len() >= 14 && be16(d, 8) == Some(138);
    }
    match ty {
        0x10..=0x12 => {
            let (Some(len), Some(off)) = (be16(d, 10), be16(d, 12)) else {
                return false;
            };
            usize::from(len) + 14 <= d.len() + 0x100
                && off == 0
                && d.get(14..)
                    .and_then(encoded_name)
                    .and_then(encoded_name)
                    .is_some()
        }
        0x14..=0x16 => {
            d.len() >= 11 && (ty != 0x13) && d.get(10..).and_then(encoded_name).is_some()
        }
        _ => false,
    }
}

/// NBSS session request: type 0x81, length, called and calling names.
fn session_request(d: &[u8]) -> Option<bool> {
    if *d.first()? != 0x81 {
        return Some(false);
    }
    let len = be24(d, 1)?;
    if !(68..=0x1ffff).contains(&len) {
        return Some(false);
    }
    let names = d.get(4..)?;
    if names.len() < 68 {
        // Incomplete: the first name must look right so far.
        return if names.first().is_none_or(|&b| b == 0x20) {
            None
        } else {
            Some(false)
        };
    }
    Some(encoded_name(names).and_then(encoded_name).is_some())
}

/// The SMB1 message a direct datagram carries as its user data (browser announcements and other mailslot
/// messages are SMB `Transaction` requests, MS-BRWS §2.2): the bytes after the header and the two names.
fn datagram_smb1(d: &[u8]) -> bool {
    matches!(d.first(), Some(0x10..=0x12))
        && d.get(14..)
            .and_then(encoded_name)
            .and_then(encoded_name)
            .is_some_and(|user| user.starts_with(b"\xffSMB"))
}

/// Names the service of a datagram-service flow: SMB1 mailslot messages are nDPI's `NetBIOS.SMBv1`.
#[derive(Default)]
struct DatagramParser {
    named: bool,
}

impl Parser for DatagramParser {
    fn parse(&mut self, _dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if !self.named && datagram_smb1(data) {
            self.named = true;
            out.application("SMBv1");
        }
    }
}

/// Detector for the three NetBIOS services.
pub struct NetBiosDetector;

impl Detector for NetBiosDetector {
    fn proto(&self) -> AppProto {
        AppProto::NetBios
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Udp => {
                // A NetBIOS-style name sent to a DNS server (a wildcard node-status query) is DNS.
                if ctx.either_port_is(53) || ctx.either_port_is(5353) || ctx.either_port_is(5355) {
                    return Probe::NotForUs;
                }
                let strict = name_service(d, true) || datagram_service(d, true);
                // On the services' own ports the header alone will do: names in the wild (and in fuzzed
                // captures nDPI still labels) are not always well encoded.
                let lenient = (ctx.either_port_is(137) && name_service(d, false))
                    || (ctx.either_port_is(138) && datagram_service(d, false));
                if strict || lenient {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            Transport::Tcp => match session_request(d) {
                Some(true) => Probe::Certain,
                Some(false) => Probe::NotForUs,
                None => Probe::Unsure,
            },
        }
    }
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        (transport == Transport::Udp)
            .then(|| Box::new(DatagramParser::default()) as Box<dyn Parser>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AppEvent;
    use crate::testkit::{ctx_tcp, ctx_udp};

    /// Records the applications a parser names.
    #[derive(Default)]
    struct Named(Vec<&'static str>);

    impl EventSink for Named {
        fn event(&mut self, _: AppEvent) {}
        fn application(&mut self, name: &'static str) {
            self.0.push(name);
        }
    }

    #[test]
    fn mailslot_datagram_names_smb1() {
        // A direct group datagram (type 0x11) from port 138: header, source and destination names, then the SMB1
        // Transaction request of a browser announcement.
        let mut d = hex("1102a1b2c0a80105008a");
        let mut body = encode("HOST", 0x00);
        body.extend(encode("WORKGROUP", 0x1d));
        body.extend_from_slice(b"\xffSMB\x25\x00\x00\x00\x00");
        body.extend_from_slice(&[0; 24]);
        d.extend_from_slice(&(body.len() as u16 - 68).to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend(body);
        assert_eq!(
            NetBiosDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        let mut p = NetBiosDetector
            .parser(Transport::Udp, &Limits::default())
            .expect("a datagram parser");
        let mut named = Named::default();
        p.parse(Direction::ToServer, &d, 0, &mut named);
        p.parse(Direction::ToServer, &d, 0, &mut named);
        assert_eq!(named.0, ["SMBv1"], "named once");
        let at = d.len() - 33;
        assert_eq!(d[at], 0xff);
        d[at] = 0xfe;
        let mut named = Named::default();
        let mut p = DatagramParser::default();
        p.parse(Direction::ToServer, &d, 0, &mut named);
        assert!(named.0.is_empty(), "SMB2 is not carried in datagrams");
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn encode(name: &str, suffix: u8) -> Vec<u8> {
        let mut raw = [b' '; 16];
        raw[..name.len()].copy_from_slice(name.as_bytes());
        raw[15] = suffix;
        let mut v = vec![0x20];
        for b in raw {
            v.push(b'A' + (b >> 4));
            v.push(b'A' + (b & 0x0f));
        }
        v.push(0);
        v
    }

    #[test]
    fn name_query() {
        // Shape of netbios.pcap's broadcast name query for WORKGROUP<1d>: id, flags 0x0110, one question.
        let mut q = hex("80f0011000010000000000" /* id, flags, qd=1, an, ns, */);
        q.push(0x00); // ar = 0
        q.extend(encode("WORKGROUP", 0x1d));
        q.extend(hex("00200001"));
        assert_eq!(q.len(), 50);
        assert_eq!(
            NetBiosDetector.probe(&ctx_udp(Direction::ToServer, &q, &[])),
            Probe::Certain
        );
        assert_eq!(
            decode_name(&q[13..45]),
            Some(("WORKGROUP".to_string(), 0x1d))
        );
        // A DNS query for example.com is not NetBIOS.
        let dns = hex("1234010000010000000000000765786d706c6503636f6d0000010001");
        assert_eq!(
            NetBiosDetector.probe(&ctx_udp(Direction::ToServer, &dns, &[])),
            Probe::NotForUs
        );
    }

    #[test]
    fn session_request_on_139() {
        let mut d = vec![0x81, 0x00, 0x00, 0x44];
        d.extend(encode("FILESERVER", 0x20));
        d.extend(encode("CLIENT", 0x00));
        assert_eq!(
            NetBiosDetector.probe(&ctx_tcp(Direction::ToServer, &d)),
            Probe::Certain
        );
        assert_eq!(
            NetBiosDetector.probe(&ctx_tcp(Direction::ToServer, &d[..20])),
            Probe::Unsure
        );
        assert_eq!(
            NetBiosDetector.probe(&ctx_tcp(Direction::ToServer, b"\x00\x00\x00\x66\xfeSMB")),
            Probe::NotForUs
        );
    }
}
