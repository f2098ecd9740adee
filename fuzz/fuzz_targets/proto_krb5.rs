//! Arbitrary bytes into the Kerberos message reader and the Kerberos parser over UDP and TCP (4-byte record
//! markers): no panic, no unbounded growth, at most one event per message. Same entry points as the proptests in
//! `crates/protocols/tests/no_panic_extra.rs` (`kerberos::message::parse`, the detector's parser).
//!
//! Input: the first byte picks where the TCP stream is cut; the rest is one UDP datagram and the TCP stream.
#![no_main]

use flowbundle_protocols::kerberos::{KerberosDetector, message};
use flowbundle_protocols::{AppEvent, Detector, Direction, Limits, Transport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, msg)) = data.split_first() else {
        return;
    };
    if let Some(m) = message::parse(msg) {
        assert!(m.etypes.len() <= message::MAX_ETYPES);
    }
    let limits = Limits::default();
    let mut out: Vec<AppEvent> = Vec::new();
    if let Some(mut udp) = KerberosDetector.parser(Transport::Udp, &limits) {
        udp.parse(Direction::ToServer, msg, 0, &mut out);
        assert!(out.len() <= 1, "one event per datagram");
    }
    out.clear();
    if let Some(mut tcp) = KerberosDetector.parser(Transport::Tcp, &limits) {
        let cut = usize::from(cut).min(msg.len());
        tcp.parse(Direction::ToClient, &msg[..cut], 0, &mut out);
        tcp.parse(Direction::ToClient, &msg[cut..], 0, &mut out);
        tcp.finish(&mut out);
        // A record is a 4-byte marker and a message of at least a few bytes.
        assert!(out.len() <= msg.len() / 6 + 1, "one event per record");
    }
});
