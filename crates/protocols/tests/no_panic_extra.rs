//! Property tests for the extra detectors and parsers: arbitrary bytes, in any split, never panic, and the
//! answers are consistent (a detector that is certain names its own protocol; parsers keep their caps).

use flowbundle_protocols::{AppEvent, Direction, Limits, Parser, ProbeCtx, Transport};
use proptest::prelude::*;

/// Every built-in detector but the core ones (HTTP, TLS, QUIC, DNS), which their own tests cover.
fn extra_detectors() -> Vec<Box<dyn flowbundle_protocols::Detector>> {
    flowbundle_protocols::registry::builtin_detectors_by_module()
        .into_iter()
        .filter(|(m, _)| !["http", "tls", "quic", "dns"].contains(m))
        .map(|(_, d)| d)
        .collect()
}

fn dir(b: bool) -> Direction {
    if b {
        Direction::ToServer
    } else {
        Direction::ToClient
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    /// Every detector answers on any payload, prefix, previous datagram and ports.
    #[test]
    fn detectors_never_panic(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        extra in proptest::collection::vec(any::<u8>(), 0..64),
        prev in proptest::collection::vec(any::<u8>(), 0..128),
        udp: bool, to_server: bool, cport: u16, sport: u16, pidx in 0u32..30, didx in 0u32..15,
    ) {
        let mut prefix = extra.clone();
        prefix.extend_from_slice(&data);
        let transport = if udp { Transport::Udp } else { Transport::Tcp };
        let ctx = ProbeCtx {
            transport,
            client_port: cport,
            server_port: sport,
            dir: dir(to_server),
            payload_index: pidx.max(didx),
            dir_index: didx,
            prefix: if udp { &data } else { &prefix },
            data: &data,
            prev: if udp { &prev } else { &[] },
            peer: &extra,
        };
        for d in extra_detectors() {
            if d.transports().contains(&transport) {
                let _ = d.probe(&ctx);
            }
        }
    }

    /// Detectors also survive payloads that start like their protocol: a known magic followed by noise.
    #[test]
    fn detectors_never_panic_on_near_misses(
        magic in prop::sample::select(vec![
            &b"SSH-2.0-"[..], b"220 ", b"+OK ", b"* OK ", b"\x00\x00\x00\x40\xfeSMB", b"\x81\x00\x00\x44 ",
            b"\x13BitTorrent protocol", b"d1:ad2:id20:", b"\x10\x20\x00\x04MQTT", b"\x03\x00\x00\x13\x0e\xe0",
            b"*3\r\n$3\r\n", b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"\x12\x01\x00\x2f\x00\x00\x01\x00", b"INVITE sip:",
            b"\x80\x00", b"\x81\xc8", b"\x00\x01\x00\x00\x21\x12\xa4\x42", b"GND", b"GNUTELLA CONNECT/0.6",
            b"M-SEARCH * HTTP/1.1", b"<34>", b"ZBXD\x01", b"\x05\x64", b"\x81\x0b", b"<?xml version='1.0'?>",
            b"\x38", b"\x01\x00\x00\x00", b"\x6a\x81", b"\x02\x01\x00",
        ]),
        tail in proptest::collection::vec(any::<u8>(), 0..300),
        udp: bool, to_server: bool, sport: u16, pidx in 0u32..12,
    ) {
        let mut data = magic.to_vec();
        data.extend_from_slice(&tail);
        let transport = if udp { Transport::Udp } else { Transport::Tcp };
        let ctx = ProbeCtx {
            transport, client_port: 40000, server_port: sport, dir: dir(to_server), payload_index: pidx,
            dir_index: pidx / 2, prefix: &data, data: &data, prev: if udp { &data } else { &[] }, peer: &data,
        };
        for d in extra_detectors() {
            if d.transports().contains(&transport) {
                let _ = d.probe(&ctx);
            }
        }
    }

    /// The stateful parsers (SSH, FTP) accept any chunks in any direction, with gaps, and emit bounded events.
    #[test]
    fn parsers_never_panic(
        chunks in proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<u8>(), 0..700), any::<bool>()), 0..12),
    ) {
        let limits = Limits::default();
        let mut parsers: Vec<Box<dyn Parser>> = Vec::new();
        for d in extra_detectors() {
            if let Some(p) = d.parser(Transport::Tcp, &limits) {
                parsers.push(p);
            }
        }
        for p in parsers.iter_mut() {
            let mut out: Vec<AppEvent> = Vec::new();
            for (i, (to_server, data, gap)) in chunks.iter().enumerate() {
                p.parse(dir(*to_server), data, i as u64, &mut out);
                if *gap {
                    p.gap(dir(*to_server), 100);
                }
            }
            p.finish(&mut out);
            // At most one event per line (FTP) or one in all (SSH): never more events than newlines + 1.
            let newlines: usize = chunks.iter().map(|c| c.1.iter().filter(|&&b| b == b'\n').count()).sum();
            prop_assert!(out.len() <= newlines + 1);
        }
    }

    /// FTP: a PORT command built from any address and port round-trips into the expectation.
    #[test]
    fn ftp_port_round_trip(a: u8, b: u8, c: u8, d: u8, port in 1u16..) {
        let cmd = format!("PORT {a},{b},{c},{d},{},{}\r\n", port >> 8, port & 0xff);
        let mut p = flowbundle_protocols::ftp::FtpParser::default();
        let mut out: Vec<AppEvent> = Vec::new();
        p.parse(Direction::ToServer, cmd.as_bytes(), 0, &mut out);
        prop_assert_eq!(out.len(), 1);
        let AppEvent::Ftp(e) = &out[0] else { panic!("not an ftp event") };
        prop_assert_eq!(e.dynamic_port, port);
        prop_assert_eq!(e.expected_ip, Some(std::net::IpAddr::from([a, b, c, d])));
    }
}
