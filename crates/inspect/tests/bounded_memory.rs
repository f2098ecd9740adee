//! Memory stays under the configured caps on hostile input: the malformed captures and a SYN flood of a
//! million new flows run with memory under the configured caps.
//!
//! The proof uses the engine's own gauges, not RSS: the flow table's count and peak against its cap, the reassembly
//! memcap's bytes held and peak against its cap, the defragmenter's bytes held against its cap, checked after every
//! packet; and the counters that say where packets went (flows created, evicted, not tracked), which must add up to
//! every packet inspected.

mod common;

use std::path::PathBuf;

use flowbundle_ingest::{CaptureReader, LinkType, PacketRecord};
use flowbundle_inspect::reassembly::ReassemblyConfig;
use flowbundle_inspect::{Engine, EngineConfig, Event, EventKind, Prestage};

/// Small caps, so that ordinary captures already reach them.
fn tight_config() -> EngineConfig {
    let d = EngineConfig::default();
    EngineConfig {
        max_flows: 256,
        reassembly: ReassemblyConfig {
            max_segments: 16,
            max_bytes: 16 << 10,
            ..d.reassembly
        },
        reassembly_memcap: 64 << 10,
        ..d
    }
}

/// Packets in the flow records of `events`, and how many flow records there are.
fn tally(events: &[Event]) -> (u64, u64) {
    events.iter().fold((0, 0), |(p, n), e| match &e.kind {
        EventKind::Flow(r) => (p + r.pkts_toserver + r.pkts_toclient, n + 1),
        _ => (p, n),
    })
}

/// The gauges after a packet: nothing above its cap.
fn check_caps(engine: &Engine, pre: &Prestage, what: &str) {
    let cfg = engine.config();
    assert!(
        engine.table().len() <= cfg.max_flows,
        "{what}: {} flows tracked, cap {}",
        engine.table().len(),
        cfg.max_flows
    );
    let m = engine.reassembly_memcap();
    assert!(
        m.held() <= m.cap(),
        "{what}: reassembly holds {} bytes, cap {}",
        m.held(),
        m.cap()
    );
    let (datagrams, bytes) = pre.defrag_held();
    assert!(
        datagrams <= cfg.defrag.max_datagrams && bytes <= cfg.defrag.max_bytes,
        "{what}: defragmenter holds {datagrams} datagrams / {bytes} bytes, caps {} / {}",
        cfg.defrag.max_datagrams,
        cfg.defrag.max_bytes
    );
}

#[test]
fn malformed_captures_stay_under_the_caps() {
    let Some(dir) = flowbundle_testsupport::data("malformed") else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension()
                        .is_some_and(|x| x == "pcap" || x == "pcapng" || x == "gz")
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(files.len() > 800, "malformed corpus mostly present");
    let (mut total_packets, mut total_flows, mut opened) = (0u64, 0u64, 0usize);
    let (mut forced, mut memcap_flows, mut memcap_refused) = (0u64, 0u64, 0u64);
    for path in &files {
        let what = path.display().to_string();
        let Ok(mut reader) = CaptureReader::open(path) else {
            continue;
        };
        opened += 1;
        let mut engine = Engine::new(tight_config(), None, None);
        let mut pre = Prestage::new(engine.config());
        let mut ctx = engine.new_ctx();
        let mut n = 0u64;
        let mut events = Vec::new();
        // A reader error ends the input, as in `flowbundle inspect`.
        while let Ok(Some(rec)) = reader.next_packet() {
            engine.process_serial(&mut ctx, &mut pre, n, &rec);
            n += 1;
            check_caps(&engine, &pre, &what);
            ctx.take_events(&mut events);
        }
        let memcap = engine.reassembly_memcap();
        memcap_refused += memcap.refused();
        let peak_reasm = memcap.peak();
        let fin = engine.finish([ctx]);
        events.extend(fin.events);
        let s = &fin.stats;
        let ps = pre.stats();
        // Every packet read went through the prestage; every one it dispatched was inspected.
        assert_eq!(ps.packets, n, "{what}");
        assert_eq!(s.packets, ps.dispatched, "{what}");
        // Every inspected packet is in a flow record, or counted as not tracked, not IP or an unreassembled
        // fragment; the rest are the packets decode rejected or that have no flow key (counted in `s.decode`).
        let (flow_pkts, records) = tally(&events);
        assert_eq!(records, s.flows_created, "{what}: a record per flow");
        assert!(
            flow_pkts + s.untracked_packets + s.not_ip + s.fragments_unreassembled <= s.packets,
            "{what}: packets counted twice"
        );
        assert_eq!(s.untracked_packets, s.flow_memcap, "{what}");
        // Peaks under the caps; everything given back at the end.
        assert!(fin.peak_flows <= engine.config().max_flows, "{what}");
        assert!(peak_reasm <= engine.config().reassembly_memcap, "{what}");
        assert_eq!(engine.table().len(), 0, "{what}: flows left after finish");
        assert_eq!(
            engine.reassembly_memcap().held(),
            0,
            "{what}: reassembly bytes left after finish"
        );
        total_packets += n;
        total_flows += s.flows_created;
        forced += s.flows_forced;
        memcap_flows += s.flow_memcap;
    }
    println!(
        "malformed: {opened} of {} captures opened, {total_packets} packets, {total_flows} flows; \
         {forced} evicted, {memcap_flows} not tracked, {memcap_refused} segments refused by the reassembly memcap",
        files.len()
    );
    assert!(opened > 700, "most captures readable");
    assert!(total_packets > 10_000);
}

/// Writes an IPv4/TCP packet (20-byte headers, no options) into `buf`.
#[allow(clippy::too_many_arguments)]
fn tcp_packet(
    buf: &mut Vec<u8>,
    src: [u8; 4],
    sport: u16,
    dst: [u8; 4],
    dport: u16,
    seq: u32,
    flags: u8,
    payload_len: usize,
) {
    buf.clear();
    let total = 40 + payload_len;
    buf.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ]);
    buf.extend_from_slice(&src);
    buf.extend_from_slice(&dst);
    flowbundle_decode::wire::ipv4::Packet::new_checked(&mut buf[..20])
        .expect("an IPv4 header")
        .fill_checksum();
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&seq.to_be_bytes());
    buf.extend_from_slice(&0u32.to_be_bytes());
    buf.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    buf.extend((0..payload_len).map(|i| b'a' + (i % 26) as u8));
}

/// A SYN flood of `flows` new connections from distinct sources to one server, one SYN every 2 µs of capture time;
/// every fourth connection also sends a data segment 100 bytes past its next sequence number (a hole reassembly has
/// to buffer out of order). Run through the single-threaded path with a flow cap and a reassembly memcap far below
/// what the flood asks for.
fn syn_flood(flows: u32) {
    const CAP: usize = 50_000;
    const MEMCAP: usize = 1 << 20;
    const BASE: u64 = 1_700_000_000_000_000_000;
    let cfg = EngineConfig {
        max_flows: CAP,
        reassembly_memcap: MEMCAP,
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(cfg, None, None);
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let mut buf = Vec::with_capacity(1600);
    let mut events = Vec::new();
    let (mut flow_pkts, mut records, mut num) = (0u64, 0u64, 0u64);
    let server = [192, 168, 0, 1];
    for i in 0..flows {
        let src = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
        let sport = 1024 + (i % 50_000) as u16;
        let isn = i.wrapping_mul(2_654_435_761);
        let ts = BASE + u64::from(i) * 2_000;
        let mut send = |buf: &[u8], ts_ns: u64| {
            let rec = PacketRecord {
                ts_ns,
                orig_len: buf.len() as u32,
                interface: 0,
                link_type: LinkType::RAW,
                data: buf,
            };
            engine.process_serial(&mut ctx, &mut pre, num, &rec);
            num += 1;
        };
        tcp_packet(&mut buf, src, sport, server, 80, isn, 0x02, 0);
        send(&buf, ts);
        if i % 4 == 0 {
            tcp_packet(
                &mut buf,
                src,
                sport,
                server,
                80,
                isn.wrapping_add(101),
                0x18,
                400,
            );
            send(&buf, ts + 1_000);
        }
        if i % 1024 == 0 {
            check_caps(&engine, &pre, "syn flood");
            ctx.take_events(&mut events);
            let (p, n) = tally(&events);
            flow_pkts += p;
            records += n;
            events.clear();
        }
    }
    check_caps(&engine, &pre, "syn flood");
    ctx.take_events(&mut events);
    let memcap = engine.reassembly_memcap();
    let (peak_reasm, refused) = (memcap.peak(), memcap.refused());
    let fin = engine.finish([ctx]);
    events.extend(fin.events);
    let (p, n) = tally(&events);
    flow_pkts += p;
    records += n;
    let s = &fin.stats;
    println!(
        "SYN flood of {flows} flows, {num} packets: cap {CAP} flows (peak {}), {} created, {} evicted, \
         {} timed out, {} not tracked; reassembly memcap {MEMCAP} B (peak {peak_reasm}), {refused} segments refused, \
         {} skipped on memcap",
        fin.peak_flows,
        s.flows_created,
        s.flows_forced,
        s.flows_timeout,
        s.flow_memcap,
        s.reassembly.memcap_skips
    );
    // Bounded: the table never passed its cap, reassembly never its memcap, and both are empty at the end.
    assert!(fin.peak_flows <= CAP);
    assert_eq!(fin.peak_flows, CAP, "the flood filled the table");
    assert!(peak_reasm <= MEMCAP);
    assert!(refused > 0, "the flood reached the reassembly memcap");
    assert_eq!(engine.table().len(), 0);
    assert_eq!(engine.reassembly_memcap().held(), 0);
    // Accounted: every packet inspected, each in a flow record or counted as not tracked; evictions counted.
    assert_eq!(s.packets, num);
    assert_eq!(flow_pkts + s.untracked_packets, num);
    assert_eq!(s.untracked_packets, s.flow_memcap);
    assert_eq!(records, s.flows_created);
    assert!(s.flows_forced > 0, "full table evicted idle flows");
    assert!(
        s.flow_memcap > 0,
        "full table refused flows it could not evict for"
    );
    assert_eq!(
        s.flows_created,
        s.flows_forced + s.flows_timeout + s.flows_shutdown + s.flows_tcp_reuse,
        "every flow ended once"
    );
    // The flood's flows are one SYN each (plus the data segment for one in four); a new flow is created per
    // source unless the table refused it.
    let sources = u64::from(flows);
    assert!(s.flows_created + s.flow_memcap >= sources);
}

#[test]
fn syn_flood_of_a_million_flows_stays_under_the_caps() {
    syn_flood(1_000_000);
}

/// One generated packet: raw bytes, or a TCP segment between a few hosts and ports (so flows collide, evict and
/// reassemble) with its sequence number near one base, flags, payload length.
#[derive(Debug, Clone)]
enum Gen {
    Raw(Vec<u8>),
    Tcp {
        host: u8,
        port: u8,
        rev: bool,
        seq: u16,
        flags: u8,
        len: u16,
    },
}

fn gen_packet() -> impl proptest::strategy::Strategy<Value = (Gen, u64)> {
    use proptest::prelude::*;
    let raw = proptest::collection::vec(any::<u8>(), 0..120).prop_map(Gen::Raw);
    let tcp = (
        0u8..6,
        0u8..3,
        any::<bool>(),
        0u16..3000,
        any::<u8>(),
        0u16..700,
    )
        .prop_map(|(host, port, rev, seq, flags, len)| Gen::Tcp {
            host,
            port,
            rev,
            seq,
            flags,
            len,
        });
    (prop_oneof![1 => raw, 4 => tcp], 0u64..200)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Arbitrary packets (random bytes, and TCP segments among a few endpoints with random sequence numbers, flags
    /// and sizes), any timing: the caps hold after every packet and `finish` ends everything. The fuzz target
    /// `engine_packets` drives the same path with libFuzzer.
    #[test]
    fn arbitrary_packets_stay_under_the_caps(packets in proptest::collection::vec(gen_packet(), 0..60)) {
        let cfg = EngineConfig { max_flows: 4, evict_min_idle_ns: 1_000, reassembly_memcap: 1024, ..tight_config() };
        let mut engine = Engine::new(cfg, None, None);
        let mut pre = Prestage::new(engine.config());
        let mut ctx = engine.new_ctx();
        let mut ts = 1_700_000_000_000_000_000u64;
        let mut buf = Vec::new();
        for (i, (g, step)) in packets.into_iter().enumerate() {
            match g {
                Gen::Raw(b) => buf = b,
                Gen::Tcp { host, port, rev, seq, flags, len } => {
                    let (c, s) = ([10, 0, 0, host], [10, 0, 1, 1]);
                    let (cp, sp) = (40_000 + u16::from(port), 80);
                    let seq = 1_000_000u32.wrapping_add(u32::from(seq));
                    let len = usize::from(len);
                    if rev {
                        tcp_packet(&mut buf, s, sp, c, cp, seq, flags, len);
                    } else {
                        tcp_packet(&mut buf, c, cp, s, sp, seq, flags, len);
                    }
                }
            }
            ts += step * step * step * 1_000_000;
            let rec = PacketRecord { ts_ns: ts, orig_len: buf.len() as u32, interface: 0, link_type: LinkType::RAW, data: &buf };
            engine.process_serial(&mut ctx, &mut pre, i as u64, &rec);
            check_caps(&engine, &pre, "arbitrary packets");
        }
        let fin = engine.finish([ctx]);
        proptest::prop_assert_eq!(engine.table().len(), 0);
        proptest::prop_assert_eq!(engine.reassembly_memcap().held(), 0);
        proptest::prop_assert_eq!(tally(&fin.events).1, fin.stats.flows_created);
        proptest::prop_assert_eq!(fin.stats.packets, pre.stats().dispatched);
    }
}
