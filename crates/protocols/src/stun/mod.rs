//! STUN (RFC 5389 / 8489, and classic RFC 3489) with its TURN (RFC 8656) cousins: nDPI's `STUN`.
//!
//! A STUN message has a 20-byte header: a type whose two top bits are zero, a body length that is a multiple of 4,
//! the magic cookie `0x2112A442` (absent in RFC 3489) and a 96-bit transaction id. With the cookie, a known
//! method, and a length consistent with the payload, one message is certain. Without it (classic STUN), the type
//! must be a Binding request/response and the attributes must chain exactly to the end of the datagram.
//!
//! **ICE.** WebRTC and VoIP clients run STUN Binding checks on the very 5-tuple that then carries DTLS and SRTP
//! (RFC 7983 demultiplexes them by first byte: 0..=3 STUN, 20..=63 DTLS, 128..=191 RTP/RTCP), and nDPI names such a
//! flow after the media. So a Binding message does not make the flow certain before [`ICE_WAIT`] payloads:
//! [`IceMediaDetector`] claims the flow if DTLS or (S)RTP follows, [`StunDetector`] if only STUN does.
//!
//! TURN relays media in *ChannelData* messages: a channel number in `0x4000..=0x7FFF` and a length. Four bytes
//! prove little, so a ChannelData message counts only when the previous datagram of the same direction was one on
//! the same channel.

use crate::scan::{be16, be32};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Payloads a flow that opened with STUN Binding messages is watched for DTLS or SRTP before it is called STUN.
pub const ICE_WAIT: u32 = 8;

/// RFC 5389 magic cookie.
pub const MAGIC_COOKIE: u32 = 0x2112_a442;

/// STUN/TURN methods registered with IANA that appear in practice (Binding, Allocate, Refresh, Send, Data,
/// CreatePermission, ChannelBind, Connect, ConnectionBind, ConnectionAttempt), plus the Google/Microsoft
/// extension methods seen in WebRTC and Teams captures.
fn known_method(method: u16) -> bool {
    matches!(method, 0x001..=0x00c | 0x080 | 0x0ff..=0x10f)
}

/// Message type → method (12 bits, interleaved with the 2 class bits, RFC 5389 §6).
fn method_of(ty: u16) -> u16 {
    (ty & 0x000f) | ((ty & 0x00e0) >> 1) | ((ty & 0x3e00) >> 2)
}

/// Whether `d` starts with a STUN message (RFC 5389 with cookie, or classic with an exact attribute chain).
/// `udp`: the message must fill the datagram exactly (several may follow each other on TCP).
pub fn is_stun(d: &[u8], udp: bool) -> bool {
    let (Some(ty), Some(len)) = (be16(d, 0), be16(d, 2)) else {
        return false;
    };
    if ty & 0xc000 != 0 {
        return false;
    }
    let total = 20 + usize::from(len);
    if (udp && total != d.len()) || total > d.len().max(20 + 4096) {
        return false;
    }
    if be32(d, 4) == Some(MAGIC_COOKIE) {
        // Standard messages: a known method, 4-byte aligned attributes. WhatsApp's relays use their own methods
        // (0x800..) and unaligned lengths; the cookie at its fixed offset plus an exact datagram length is still
        // a 1-in-2^48 coincidence, so any method is accepted on UDP.
        let standard =
            len % 4 == 0 && known_method(method_of(ty)) && (!udp || attributes_chain(&d[20..]));
        return standard || udp;
    }
    if len % 4 != 0 {
        return false;
    }
    // Classic STUN: Binding request/response/error, shared-secret request/response.
    matches!(ty, 0x0001 | 0x0101 | 0x0111 | 0x0002 | 0x0102 | 0x0112)
        && d.len() >= total
        && attributes_chain(&d[20..total])
}

/// Whether `body` is a sequence of STUN attributes (type, length, value padded to 4) that ends exactly at its end.
fn attributes_chain(body: &[u8]) -> bool {
    let mut i = 0;
    while i < body.len() {
        let Some(len) = be16(body, i + 2) else {
            return false;
        };
        i += 4 + usize::from(len).div_ceil(4) * 4;
    }
    i == body.len()
}

/// Microsoft's ICE extension attribute MS-IMPLEMENTATION-VERSION ([MS-ICE2] §2.2.2.2), which Skype for
/// Business and Teams clients put in their connectivity checks.
const MS_IMPLEMENTATION_VERSION: u16 = 0x8070;

/// Whether `d` is one STUN datagram whose attributes include MS-IMPLEMENTATION-VERSION: Microsoft's ICE, nDPI's
/// `STUN.Skype_TeamsCall`.
fn microsoft_ice(d: &[u8]) -> bool {
    if !is_stun(d, true) || be32(d, 4) != Some(MAGIC_COOKIE) {
        return false;
    }
    let body = &d[20..];
    let mut i = 0;
    while let (Some(ty), Some(len)) = (be16(body, i), be16(body, i + 2)) {
        if ty == MS_IMPLEMENTATION_VERSION {
            return true;
        }
        i += 4 + usize::from(len).div_ceil(4) * 4;
    }
    false
}

/// Names the calling service of a STUN flow from its attributes (Microsoft's ICE: `Skype_TeamsCall`).
#[derive(Default)]
struct AttributeParser {
    named: bool,
}

impl crate::Parser for AttributeParser {
    fn parse(
        &mut self,
        _dir: crate::Direction,
        data: &[u8],
        _ts_ns: u64,
        out: &mut dyn crate::EventSink,
    ) {
        if !self.named && microsoft_ice(data) {
            self.named = true;
            out.application("Skype_TeamsCall");
        }
    }
}

/// A TURN ChannelData header: `(channel, length)`, when the datagram is consistent with it.
fn channel_data(d: &[u8]) -> Option<(u16, u16)> {
    let ch = be16(d, 0)?;
    let len = be16(d, 2)?;
    ((0x4000..=0x7fff).contains(&ch)
        && usize::from(len) + 4 <= d.len()
        && d.len() <= usize::from(len) + 4 + 3)
        .then_some((ch, len))
}

/// Detector for STUN and TURN.
pub struct StunDetector;

impl Detector for StunDetector {
    fn proto(&self) -> AppProto {
        AppProto::Stun
    }
    fn parser(
        &self,
        transport: Transport,
        _limits: &crate::Limits,
    ) -> Option<Box<dyn crate::Parser>> {
        (transport == Transport::Udp)
            .then(|| Box::new(AttributeParser::default()) as Box<dyn crate::Parser>)
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Udp => {
                if is_stun(ctx.data, true) {
                    let binding = be16(ctx.data, 0).is_some_and(|t| method_of(t) == 1)
                        && be32(ctx.data, 4) == Some(MAGIC_COOKIE);
                    return if binding && ctx.payload_index + 1 < ICE_WAIT {
                        Probe::Unsure
                    } else {
                        Probe::Certain
                    };
                }
                match (channel_data(ctx.data), channel_data(ctx.prev)) {
                    (Some((a, _)), Some((b, _))) if a == b => Probe::Certain,
                    (Some(_), _) => Probe::Unsure,
                    // Something else after STUN that no media detector claimed: still a STUN flow.
                    _ if is_stun(ctx.prev, true) => Probe::Certain,
                    _ => Probe::NotForUs,
                }
            }
            Transport::Tcp => {
                let p = ctx.prefix;
                // RFC 4571 framing (a 2-byte length before each message) is used by some TURN-over-TCP clients.
                let framed = be16(p, 0).is_some_and(|l| usize::from(l) + 2 <= p.len())
                    && p.get(2..).is_some_and(|m| is_stun(m, false));
                if is_stun(p, false) || framed {
                    Probe::Certain
                } else if p.len() < 20 && be16(p, 0).is_none_or(|t| t & 0xc000 == 0) {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
        }
    }
}

/// Whether `d` starts with a DTLS record header (RFC 6347 §4.1: a content type of TLS's, a DTLS version, epoch and
/// sequence number, and a length the datagram holds). On the 5-tuple ICE opened with STUN this is the DTLS that
/// RFC 7983 demultiplexes there, even when its handshake body is one a stricter parser would not take.
fn dtls_record(d: &[u8]) -> bool {
    matches!(d.first(), Some(20..=25))
        && matches!(be16(d, 1), Some(0xfeff | 0xfefd | 0xfefc))
        && be16(d, 11).is_some_and(|len| len > 0 && 13 + usize::from(len) <= d.len())
}

/// ICE media: a flow that opened with STUN and then carries DTLS (`dtls: true`, nDPI's `DTLS`) or RTP/RTCP
/// (`dtls: false`, nDPI's `SRTP`: media keyed through ICE is SRTP). Probed before [`StunDetector`] and
/// [`crate::rtp::RtpDetector`].
pub struct IceMediaDetector {
    pub dtls: bool,
}

impl Detector for IceMediaDetector {
    fn proto(&self) -> AppProto {
        if self.dtls {
            AppProto::Dtls
        } else {
            AppProto::Srtp
        }
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if is_stun(d, true) || channel_data(d).is_some() {
            return Probe::Unsure;
        }
        if ctx.payload_index == 0 {
            return Probe::NotForUs;
        }
        // Connectivity checks that name their calling service (Microsoft's ICE) keep the flow STUN, as nDPI names
        // such a flow after the service: `STUN.Skype_TeamsCall`, not the media behind it.
        if microsoft_ice(ctx.prev) || microsoft_ice(ctx.peer) {
            return Probe::NotForUs;
        }
        match d.first() {
            Some(20..=63)
                if self.dtls && (crate::tls::probe_dtls(d) == Probe::Certain || dtls_record(d)) =>
            {
                Probe::Certain
            }
            // RTP, or SRTCP (only its first 8 bytes are in clear, so the chain of lengths cannot be checked).
            Some(128..=191)
                if !self.dtls
                    && (crate::rtp::rtp_header(d).is_some()
                        || d.get(1).is_some_and(|pt| (200..=207).contains(pt))) =>
            {
                Probe::Certain
            }
            _ => Probe::NotForUs,
        }
    }
    fn parser(
        &self,
        transport: Transport,
        limits: &crate::Limits,
    ) -> Option<Box<dyn crate::Parser>> {
        if self.dtls {
            crate::tls::DtlsDetector.parser(transport, limits)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    // A Binding request with a SOFTWARE attribute ("test") as WebRTC clients send it.
    fn binding() -> Vec<u8> {
        let mut d = vec![0x00, 0x01, 0x00, 0x08];
        d.extend_from_slice(&MAGIC_COOKIE.to_be_bytes());
        d.extend_from_slice(&[0x42; 12]);
        d.extend_from_slice(&[0x80, 0x22, 0x00, 0x04, b't', b'e', b's', b't']);
        d
    }

    #[test]
    fn binding_request() {
        let d = binding();
        // A Binding message waits for possible ICE media; other methods and later payloads decide at once.
        assert_eq!(
            StunDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Unsure
        );
        let mut late = ctx_udp(Direction::ToServer, &d, &[]);
        late.payload_index = ICE_WAIT;
        assert_eq!(StunDetector.probe(&late), Probe::Certain);
        let mut alloc = d.clone();
        alloc[1] = 0x03;
        assert_eq!(
            StunDetector.probe(&ctx_udp(Direction::ToServer, &alloc, &[])),
            Probe::Certain
        );
        assert_eq!(
            StunDetector.probe(&ctx_tcp(Direction::ToServer, &d)),
            Probe::Certain
        );
        let mut bad = d.clone();
        bad[2] = 1;
        assert_eq!(
            StunDetector.probe(&ctx_udp(Direction::ToServer, &bad, &[])),
            Probe::NotForUs
        );
        bad[4] = 0;
        assert_eq!(
            StunDetector.probe(&ctx_tcp(Direction::ToServer, &bad)),
            Probe::NotForUs
        );
        assert_eq!(
            StunDetector.probe(&ctx_udp(Direction::ToServer, &d[..24], &[])),
            Probe::NotForUs
        );
    }

    #[test]
    fn classic_and_channel_data() {
        // RFC 3489 Binding request: no cookie, CHANGE-REQUEST attribute.
        let mut c = vec![0x00, 0x01, 0x00, 0x08];
        c.extend_from_slice(&[0x17; 16]);
        c.extend_from_slice(&[0x00, 0x03, 0x00, 0x04, 0, 0, 0, 0]);
        let mut c2 = ctx_udp(Direction::ToServer, &c, &[]);
        c2.payload_index = ICE_WAIT;
        assert_eq!(StunDetector.probe(&c2), Probe::Certain);
        let a = [0x40, 0x01, 0x00, 0x04, 1, 2, 3, 4];
        let b = [0x40, 0x01, 0x00, 0x02, 1, 2, 0, 0];
        assert_eq!(
            StunDetector.probe(&ctx_udp(Direction::ToServer, &a, &[])),
            Probe::Unsure
        );
        assert_eq!(
            StunDetector.probe(&ctx_udp(Direction::ToServer, &b, &a)),
            Probe::Certain
        );
    }

    #[test]
    fn ice_then_media() {
        // stun_dtls_rtp.pcapng: Binding request, then a DTLS ClientHello record header on the same 5-tuple.
        let stun = binding();
        let mut dtls = vec![0x16, 0xfe, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x04];
        dtls.extend_from_slice(&[1, 0, 0, 0]);
        let d = IceMediaDetector { dtls: true };
        let s = IceMediaDetector { dtls: false };
        assert_eq!(
            d.probe(&ctx_udp(Direction::ToServer, &stun, &[])),
            Probe::Unsure
        );
        let mut c = ctx_udp(Direction::ToServer, &dtls, &stun);
        c.payload_index = 2;
        assert_eq!(d.probe(&c), Probe::Certain);
        assert_eq!(s.probe(&c), Probe::NotForUs);
        // A record whose handshake body a ClientHello parser would refuse is still DTLS by its record header.
        let mut odd = vec![0x16, 0xfe, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x08];
        odd.extend_from_slice(&[0xfe, 0xff, 0xff, 0xa4, 0, 0, 0, 0, 0, 0]);
        let mut c = ctx_udp(Direction::ToServer, &odd, &stun);
        c.payload_index = 1;
        assert_eq!(d.probe(&c), Probe::Certain);
        let mut short = odd.clone();
        short[12] = 0x40;
        let mut c = ctx_udp(Direction::ToServer, &short, &stun);
        c.payload_index = 1;
        assert_eq!(d.probe(&c), Probe::NotForUs, "a length past the datagram");
        let mut rtp = vec![0x80, 0x78, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9];
        rtp.extend_from_slice(&[0; 20]);
        let mut c = ctx_udp(Direction::ToServer, &rtp, &stun);
        c.payload_index = 3;
        assert_eq!(s.probe(&c), Probe::Certain);
        // Microsoft's connectivity checks keep the flow STUN, and name the service.
        let mut ms = vec![0x01, 0x01, 0x00, 0x08];
        ms.extend_from_slice(&MAGIC_COOKIE.to_be_bytes());
        ms.extend_from_slice(&[0x42; 12]);
        ms.extend_from_slice(&[0x80, 0x70, 0x00, 0x04, 0, 0, 0, 7]);
        let mut c = ctx_udp(Direction::ToServer, &rtp, &ms);
        c.payload_index = 1;
        assert_eq!(s.probe(&c), Probe::NotForUs);
        assert_eq!(StunDetector.probe(&c), Probe::Certain);
        struct Named(Vec<&'static str>);
        impl crate::EventSink for Named {
            fn event(&mut self, _: crate::AppEvent) {}
            fn application(&mut self, name: &'static str) {
                self.0.push(name);
            }
        }
        let mut named = Named(Vec::new());
        use crate::Parser;
        let mut p = AttributeParser::default();
        p.parse(Direction::ToServer, &stun, 0, &mut named);
        p.parse(Direction::ToServer, &ms, 0, &mut named);
        p.parse(Direction::ToServer, &ms, 0, &mut named);
        assert_eq!(named.0, ["Skype_TeamsCall"]);
        // A flow that did not open with STUN is not ICE media.
        assert_eq!(
            s.probe(&ctx_udp(Direction::ToServer, &rtp, &[])),
            Probe::NotForUs
        );
    }
}
