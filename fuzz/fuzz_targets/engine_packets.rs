//! Fuzz the whole engine on packets: the input is a first byte choosing the link type and a sequence of packets,
//! each `[len: u16][ts step: u8][len bytes]`, run through the single-threaded path (`Engine::process_serial`:
//! decode, defragmentation, flow table, TCP state and reassembly, identification, parsers, L7-filter signatures)
//! with small caps, the way `crates/inspect/tests/bounded_memory.rs` runs the malformed captures. Checked after every
//! packet: the flow table, the reassembly memcap and the defragmenter stay under their caps; after `finish`, every
//! flow is ended, the memcap is released, and a flow record exists per flow created.
//!
//! Building an engine (65,536 shards, the detector registry, signatures) costs milliseconds, so two engines (with
//! and without signatures) are built once and reused: `finish` must leave an engine empty, which this checks too.
//! Each input starts its engine's capture clock 1,000 s after the previous input's last packet, past every timeout
//! and the FTP expectation TTL, so nothing an input left behind can match the next one; an engine whose clock nears
//! the end of `u64` is replaced by a fresh one.
#![no_main]

use std::sync::Mutex;

use flowbundle_ingest::{LinkType, PacketRecord};
use flowbundle_inspect::reassembly::ReassemblyConfig;
use flowbundle_inspect::signatures::{Options, SignatureSet};
use flowbundle_inspect::{Engine, EngineConfig, EventKind, Prestage};
use libfuzzer_sys::fuzz_target;

/// Two L7-filter patterns (from `l7-protocols`), so the signature path runs too. `SignatureSet` is not `Clone` and
/// the engine owns its set: compiled per input, small enough to stay cheap.
fn signatures() -> Option<SignatureSet> {
    let pats = [
        (
            "http",
            "http/(0\\.9|1\\.0|1\\.1) [1-5][0-9][0-9] [\\x09-\\x0d -~]*(connection:|content-type:|content-length:|date:)|post [\\x09-\\x0d -~]* http/[01]\\.[019]",
        ),
        ("ssh", "^ssh-[12]\\.[0-9]"),
    ];
    SignatureSet::from_patterns(&pats, &Options::default())
        .ok()
        .map(|(s, _)| s)
}

const LINKS: [LinkType; 4] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::LINUX_SLL,
    LinkType::NULL,
];

fn config() -> EngineConfig {
    let d = EngineConfig::default();
    EngineConfig {
        max_flows: 16,
        evict_min_idle_ns: 1_000,
        reassembly: ReassemblyConfig {
            max_segments: 4,
            max_bytes: 2048,
            ..d.reassembly
        },
        reassembly_memcap: 4096,
        max_expectations: 4,
        ..d
    }
}

const START: u64 = 1_700_000_000_000_000_000;
const LIMIT: u64 = 15_000_000_000_000_000_000;
const SPACING: u64 = 1_000_000_000_000;

/// Per slot (without, with signatures): the engine and the capture time its next input starts at.
static ENGINES: [Mutex<Option<(Engine, u64)>>; 2] = [Mutex::new(None), Mutex::new(None)];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let slot = usize::from(sel >> 7);
    let mut guard = ENGINES[slot].lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|(_, clock)| *clock > LIMIT) {
        let sigs = if slot == 1 { signatures() } else { None };
        *guard = Some((Engine::new(config(), sigs, None), START));
    }
    let Some((engine, clock)) = guard.as_mut() else {
        return;
    };
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let link = LINKS[usize::from(sel & 3)];
    let mut ts = *clock;
    let mut num = 0u64;
    while let [l0, l1, step, tail @ ..] = rest {
        let n = usize::from(u16::from_be_bytes([*l0, *l1])).min(tail.len());
        let (pkt, next) = tail.split_at(n);
        rest = next;
        // Steps up to about 4 minutes (cubic: mostly short), so timeouts, eviction and expectation expiry happen.
        ts += u64::from(*step).pow(3) * 15_000;
        let rec = PacketRecord {
            ts_ns: ts,
            orig_len: pkt.len() as u32,
            interface: 0,
            link_type: link,
            data: pkt,
        };
        engine.process_serial(&mut ctx, &mut pre, num, &rec);
        num += 1;
        assert!(engine.table().len() <= engine.config().max_flows);
        let m = engine.reassembly_memcap();
        assert!(m.held() <= m.cap());
        let (dg, bytes) = pre.defrag_held();
        assert!(
            dg <= engine.config().defrag.max_datagrams && bytes <= engine.config().defrag.max_bytes
        );
    }
    *clock = ts + SPACING;
    let fin = engine.finish([ctx]);
    assert_eq!(engine.table().len(), 0);
    assert_eq!(engine.reassembly_memcap().held(), 0);
    let records = fin
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Flow(_)))
        .count() as u64;
    assert_eq!(records, fin.stats.flows_created);
    assert_eq!(fin.stats.packets, pre.stats().dispatched);
});
