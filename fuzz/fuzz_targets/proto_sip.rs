//! Arbitrary bytes into the SIP head and SDP readers and the SIP parser over UDP and TCP: no panic, no unbounded
//! growth, at most one event per datagram and per header block. Same entry points as the proptests in
//! `crates/protocols/tests/no_panic_extra.rs` (`sip::message::parse_head`, `sip::sdp::parse`, the detector's
//! parser).
//!
//! Input: the first byte picks where the TCP stream is cut; the rest is one UDP datagram and the TCP stream.
#![no_main]

use flowbundle_protocols::sip::{SipDetector, message, sdp};
use flowbundle_protocols::{AppEvent, Detector, Direction, Limits, Transport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, msg)) = data.split_first() else {
        return;
    };
    if let message::Parsed::Head(h) = message::parse_head(msg) {
        assert!(h.len <= msg.len());
        assert!(h.headers.via.len() <= message::MAX_VALUES);
    }
    if let Some(s) = sdp::parse(msg) {
        assert!(s.media_descriptions.len() <= sdp::MAX_ITEMS);
        assert!(s.attributes.len() <= sdp::MAX_ITEMS);
    }
    let limits = Limits::default();
    let mut out: Vec<AppEvent> = Vec::new();
    if let Some(mut udp) = SipDetector.parser(Transport::Udp, &limits) {
        udp.parse(Direction::ToServer, msg, 0, &mut out);
        assert!(out.len() <= 1, "one event per datagram");
    }
    out.clear();
    if let Some(mut tcp) = SipDetector.parser(Transport::Tcp, &limits) {
        let cut = usize::from(cut).min(msg.len());
        for dir in [Direction::ToServer, Direction::ToClient] {
            tcp.parse(dir, &msg[..cut], 0, &mut out);
            tcp.parse(dir, &msg[cut..], 0, &mut out);
        }
        tcp.finish(&mut out);
        // The shortest message (`A a SIP/2\n\n`) is 11 bytes.
        assert!(
            out.len() <= 2 * (msg.len() / 11 + 1),
            "one event per message"
        );
    }
});
