//! Arbitrary bytes into the DNS message decoder and the DNS parser over UDP and TCP (2-byte framing): no panic,
//! no hang on compression loops. Same entry points as the proptests in `crates/protocols/src/dns/`.
//!
//! Input: the first byte picks where the TCP stream is cut; the rest is one UDP datagram and the TCP stream.
#![no_main]

use flowbundle_protocols::dns::{DnsParser, Message, event, looks_like_dns};
use flowbundle_protocols::{AppEvent, Direction, Limits, Parser, Transport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, msg)) = data.split_first() else {
        return;
    };
    let _ = looks_like_dns(msg);
    if let Ok(m) = Message::parse(msg, 64) {
        let _ = event(m, 0);
    }
    let limits = Limits::default();
    let mut out: Vec<AppEvent> = Vec::new();
    let mut udp = DnsParser::new(Transport::Udp, &limits);
    udp.parse(Direction::ToServer, msg, 0, &mut out);
    let mut tcp = DnsParser::new(Transport::Tcp, &limits);
    let cut = usize::from(cut).min(msg.len());
    tcp.parse(Direction::ToClient, &msg[..cut], 0, &mut out);
    tcp.parse(Direction::ToClient, &msg[cut..], 0, &mut out);
    tcp.finish(&mut out);
});
