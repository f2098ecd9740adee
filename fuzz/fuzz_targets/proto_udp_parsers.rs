//! Every built-in parser that takes UDP, fed datagrams in either direction: never panics, and emits a bounded
//! number of events (the TCP parsers have their own target, `proto_tcp_parsers`).
#![no_main]

use flowbundle_protocols::{AppEvent, Direction, Limits, Transport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    for det in &flowbundle_protocols::registry::builtin_detectors() {
        // Only the protocols registered on UDP: the registry never gives a UDP flow to another's parser (HTTP/2's,
        // fed frames from a byte stream, makes several events from one payload, as it should).
        if !det.transports().contains(&Transport::Udp) {
            continue;
        }
        let Some(mut parser) = det.parser(Transport::Udp, &limits) else {
            continue;
        };
        let mut out: Vec<AppEvent> = Vec::new();
        let mut rest = data;
        let mut datagrams = 0usize;
        let mut i = 0u64;
        while let [flags, hi, lo, tail @ ..] = rest {
            let n = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
            let dir = if flags & 1 == 0 {
                Direction::ToServer
            } else {
                Direction::ToClient
            };
            parser.parse(dir, &tail[..n], i, &mut out);
            datagrams += 1;
            rest = &tail[n..];
            i += 1;
        }
        parser.finish(&mut out);
        let events = out
            .iter()
            .filter(|e| !matches!(e, AppEvent::Fileinfo(_)))
            .count();
        assert!(
            events <= 2 * datagrams + 1,
            "{:?}: {events} events from {datagrams} datagrams",
            det.proto()
        );
    }
});
