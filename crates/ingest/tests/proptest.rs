//! Property tests: what the writer writes the readers read back; no byte sequence makes either reader panic, hang
//! or disagree with the other (the same check the fuzz target `ingest_reader` runs).

mod common;

use std::io::{Cursor, Write};

use common::Ng;
use flowbundle_ingest::testing::read_both;
use flowbundle_ingest::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Pkt {
    ts_ns: u64,
    data: Vec<u8>,
    orig_extra: u32,
}

fn pkt() -> impl Strategy<Value = Pkt> {
    (
        0u64..(u64::from(u32::MAX) + 1) * 1_000_000_000,
        proptest::collection::vec(any::<u8>(), 0..300),
        0u32..3000,
    )
        .prop_map(|(ts_ns, data, orig_extra)| Pkt {
            ts_ns,
            data,
            orig_extra,
        })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// One step of a generated pcapng file.
#[derive(Clone, Debug)]
enum Op {
    Shb(bool),
    Idb(u16, u32, Option<u8>, Option<i64>),
    Epb(u32, u64, Vec<u8>, u32),
    Spb(Vec<u8>, u32),
    Pb(u16, u64, Vec<u8>, u32),
    Other(u32, Vec<u8>),
}

fn op() -> impl Strategy<Value = Op> {
    let data = || proptest::collection::vec(any::<u8>(), 0..80);
    prop_oneof![
        1 => any::<bool>().prop_map(Op::Shb),
        3 => (
            any::<u16>(),
            any::<u32>(),
            proptest::option::of(prop_oneof![0u8..=19, 0x80u8..=0xbf, any::<u8>()]),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(|(l, s, r, o)| Op::Idb(l, s, r, o)),
        6 => (0u32..3, any::<u64>(), data(), any::<u32>()).prop_map(|(i, t, d, o)| Op::Epb(i, t, d, o)),
        2 => (data(), any::<u32>()).prop_map(|(d, o)| Op::Spb(d, o)),
        1 => (0u16..3, any::<u64>(), data(), any::<u32>()).prop_map(|(i, t, d, o)| Op::Pb(i, t, d, o)),
        1 => (prop_oneof![Just(4u32), Just(5), Just(0xa), Just(0xbad), any::<u32>()], data())
            .prop_map(|(t, d)| Op::Other(t, d)),
    ]
}

fn build(ops: &[Op]) -> Vec<u8> {
    let mut ng = Ng::new();
    ng.shb(false);
    for op in ops {
        match op {
            Op::Shb(be) => ng.shb(*be),
            Op::Idb(l, s, r, o) => ng.idb(*l, *s, *r, *o, None),
            Op::Epb(i, t, d, o) => ng.epb(*i, *t, d, *o),
            Op::Spb(d, o) => ng.spb(d, *o),
            Op::Pb(i, t, d, o) => ng.pb(*i, *t, d, *o),
            Op::Other(t, d) => ng.block(*t, d),
        };
    }
    ng.buf
}

fn check(bytes: &[u8]) -> Result<testing::Agreement, TestCaseError> {
    read_both(bytes).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn writer_then_readers_round_trip(
        pkts in proptest::collection::vec(pkt(), 0..40),
        nano in any::<bool>(),
        link in any::<u16>(),
        snaplen in prop_oneof![Just(0u32), 1u32..400],
    ) {
        let precision = if nano { PcapPrecision::Nano } else { PcapPrecision::Micro };
        let opts = WriterOptions::new(LinkType(u32::from(link))).precision(precision).snaplen(snaplen);
        let mut w = PcapWriter::new(Vec::new(), opts).unwrap();
        for p in &pkts {
            w.write_packet(p.ts_ns, &p.data, p.data.len() as u32 + p.orig_extra).unwrap();
        }
        let bytes = w.finish().unwrap();
        let cut = if snaplen == 0 { usize::MAX } else { snaplen as usize };
        let mut r = CaptureReader::new(Cursor::new(bytes.clone())).unwrap();
        let t = Trace::from_vec(bytes.clone()).unwrap();
        prop_assert_eq!(t.len(), pkts.len());
        for (i, p) in pkts.iter().enumerate() {
            let got = r.next_packet().unwrap().unwrap();
            let want_ts = if nano { p.ts_ns } else { p.ts_ns / 1000 * 1000 };
            prop_assert_eq!(got.ts_ns, want_ts);
            prop_assert_eq!(got.data, &p.data[..p.data.len().min(cut)]);
            prop_assert_eq!(got.orig_len, p.data.len() as u32 + p.orig_extra);
            prop_assert_eq!(got.link_type, LinkType(u32::from(link)));
            prop_assert_eq!(got, t.get(i));
        }
        prop_assert!(r.next_packet().unwrap().is_none());
        prop_assert_eq!(r.stats().truncated_records, 0);
        let a = check(&bytes)?;
        let b = check(&gzip(&bytes))?;
        prop_assert_eq!(a.packets, pkts.len() as u64);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_readers_agree(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        check(&bytes)?;
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_header(
        header in 0usize..6,
        tail in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut bytes = match header {
            0 => common::Pcap::new(false, false, 1, 65535).buf,
            1 => common::Pcap::new(true, true, 113, 0).buf,
            2 => {
                let mut p = common::Pcap::new(false, false, 1, 65535).buf;
                p[6] = 2; // format 2.2: swapped record lengths
                p
            }
            3 => { let mut n = Ng::new(); n.shb(false); n.buf }
            4 => { let mut n = Ng::new(); n.shb(true).idb(1, 0, Some(9), None, None); n.buf }
            _ => { let mut n = Ng::new(); n.shb(false).idb(1, 0, Some(0x8a), Some(-3), None); n.buf }
        };
        bytes.extend_from_slice(&tail);
        check(&bytes)?;
        check(&gzip(&bytes))?;
    }

    #[test]
    fn generated_pcapng_reads_and_survives_mutation(
        ops in proptest::collection::vec(op(), 0..30),
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<proptest::sample::Index>(),
    ) {
        let bytes = build(&ops);
        check(&bytes)?;
        let mut mutated = bytes.clone();
        for (at, x) in &flips {
            let i = at.index(mutated.len());
            mutated[i] ^= x;
        }
        check(&mutated)?;
        let n = cut.index(mutated.len() + 1);
        check(&mutated[..n])?;
    }
}
