//! XMPP (Jabber, RFC 6120): nDPI's `Jabber`.
//!
//! A client (or server) opens the stream with an optional XML declaration and a `<stream:stream` element whose
//! default namespace is `jabber:client` or `jabber:server`. Both strings within the first few hundred bytes are
//! certain; a payload that starts with `<?xml` or `<stream` but has not shown them yet waits. A session captured
//! after the stream opened is recognised from a top-level stanza (`<presence`, `<message`, `<iq`) carrying `to=`,
//! `from=` or `xmlns=`, or one that starts with the stream's end tag.

use crate::scan::{Lit, find, lit_ci};
use crate::{AppProto, Detector, Direction, EventSink, Limits, Parser, Probe, ProbeCtx, Transport};

/// The domain a client's stream header addresses (`<stream:stream ... to='example.com'`, RFC 6120 §4.7.2).
fn stream_to(d: &[u8]) -> Option<&str> {
    let open = find(d, b"<stream:stream")?;
    let tag = &d[open..];
    let tag = &tag[..tag.iter().position(|&b| b == b'>').unwrap_or(tag.len())];
    let mut from = 0;
    while let Some(at) = tag.get(from..).and_then(|t| find(t, b"to=")) {
        let at = from + at;
        from = at + 3;
        if !matches!(
            tag.get(at.wrapping_sub(1)),
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'\'' | b'"')
        ) {
            continue;
        }
        let quote = *tag.get(at + 3)?;
        if quote != b'\'' && quote != b'"' {
            return None;
        }
        let value = tag.get(at + 4..)?;
        let end = value.iter().position(|&b| b == quote)?;
        return std::str::from_utf8(&value[..end]).ok();
    }
    None
}

/// Names a stream's service from the domain its client addresses (`im.truphone.com`: `TruPhone`), through the
/// host-suffix table of [`crate::application`].
#[derive(Default)]
struct StreamParser {
    done: bool,
}

impl Parser for StreamParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.done || dir != Direction::ToServer {
            return;
        }
        self.done = true;
        let head = &data[..data.len().min(1024)];
        if let Some(app) = stream_to(head).and_then(crate::application::application_for_host) {
            out.application(app);
        }
    }
}

/// Detector for XMPP.
pub struct JabberDetector;

impl Detector for JabberDetector {
    fn proto(&self) -> AppProto {
        AppProto::Jabber
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        // Port 5223 (legacy "XMPP over TLS") also carries a binary framing seen from Huawei clients: a type byte
        // (0x25 client hello, 0x26 server hello, 0x30 data) and a 16-bit length equal to the whole message.
        if ctx.either_port_is(5223)
            && let (Some(&t), Some(len)) = (p.first(), crate::scan::be16(p, 1))
            && matches!(t, 0x25 | 0x26)
            && usize::from(len) == ctx.data.len()
            && ctx.dir_index == 0
        {
            return Probe::Certain;
        }
        // A session picked up after the stream opened: a top-level stanza with an addressing or namespace attribute.
        if p.starts_with(b"</stream:stream>") {
            return Probe::Certain;
        }
        for stanza in [&b"<presence"[..], b"<message ", b"<iq "] {
            if p.starts_with(stanza) {
                let tag_end = p.iter().position(|&b| b == b'>').unwrap_or(p.len());
                let tag = &p[..tag_end];
                return if find(tag, b" to=").is_some()
                    || find(tag, b" from=").is_some()
                    || find(tag, b"xmlns=").is_some()
                {
                    Probe::Certain
                } else if tag_end == p.len() && p.len() < 512 {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                };
            }
        }
        let starts = lit_ci(p, b"<?xml") != Lit::No || lit_ci(p, b"<stream") != Lit::No;
        if !starts {
            return Probe::NotForUs;
        }
        let head = &p[..p.len().min(512)];
        if find(head, b"<stream:stream").is_some() && find(head, b"jabber:").is_some() {
            Probe::Certain
        } else if p.len() < 512 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
    fn parser(&self, _transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(StreamParser::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_header_names_the_service_domain() {
        let s = b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0' to='im.truphone.com'>";
        assert_eq!(stream_to(s), Some("im.truphone.com"));
        let tight = b"<stream:stream version='1.0'to=\"im.truphone.com\">";
        assert_eq!(stream_to(tight), Some("im.truphone.com"));
        assert_eq!(
            stream_to(b"<stream:stream xmlns='jabber:client' auto='x'>"),
            None
        );
        assert_eq!(stream_to(b"<message to='a@b.c'>"), None);
        struct Named(Vec<&'static str>);
        impl EventSink for Named {
            fn event(&mut self, _: crate::AppEvent) {}
            fn application(&mut self, name: &'static str) {
                self.0.push(name);
            }
        }
        let mut named = Named(Vec::new());
        let mut p = StreamParser::default();
        p.parse(Direction::ToClient, tight, 0, &mut named);
        p.parse(Direction::ToServer, s, 0, &mut named);
        assert_eq!(named.0, ["TruPhone"]);
        let mut named = Named(Vec::new());
        StreamParser::default().parse(
            Direction::ToServer,
            b"<stream:stream to='cs-xmpp.lan'>",
            0,
            &mut named,
        );
        assert!(named.0.is_empty(), "a private server names no service");
    }
    use crate::testkit::ctx_tcp;

    #[test]
    fn stream_open() {
        // jabber.pcap
        let s = b"<?xml version='1.0' ?><stream:stream to='cs-xmpp.lan' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>";
        assert_eq!(
            JabberDetector.probe(&ctx_tcp(Direction::ToServer, s)),
            Probe::Certain
        );
        assert_eq!(
            JabberDetector.probe(&ctx_tcp(Direction::ToServer, &s[..30])),
            Probe::Unsure
        );
        assert_eq!(
            JabberDetector.probe(&ctx_tcp(
                Direction::ToServer,
                b"<?xml version=\"1.0\"?><soap:Envelope>"
            )),
            Probe::Unsure
        );
        assert_eq!(
            JabberDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1")),
            Probe::NotForUs
        );
        let p = b"<presence to='chat-with-tom@conference.cs-xmpp.lan/tom@cs-xmpp.lan'><c xmlns='http://jabber.org/p'/>";
        assert_eq!(
            JabberDetector.probe(&ctx_tcp(Direction::ToServer, p)),
            Probe::Certain
        );
        // jabber.pcap, port 5223: binary framing, type 0x25 and the message's own length.
        let mut hello = vec![0x25, 0x00, 0x45];
        hello.extend_from_slice(&[0x14; 66]);
        let c = crate::testkit::ctx_ports(Transport::Tcp, Direction::ToServer, &hello, 34218, 5223);
        assert_eq!(JabberDetector.probe(&c), Probe::Certain);
        let c = crate::testkit::ctx_ports(Transport::Tcp, Direction::ToServer, &hello, 34218, 443);
        assert_eq!(JabberDetector.probe(&c), Probe::NotForUs);
    }
}
