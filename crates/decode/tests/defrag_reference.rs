//! The defragmenter against PcapPlusPlus' reference reassemblies in `shared/data/reassembly`.
//!
//! The `.txt`/`.dat` files hold one reassembled packet each as a hex string, *with* the link-layer header of the
//! first fragment (PcapPlusPlus keeps the frame); our output is the raw IP datagram, so we compare from the IP
//! header on. For IPv6, PcapPlusPlus' own test overwrites the payload-length field before comparing (with the
//! UDP length, 737 and 1448, which is 4 bytes short of the data the fragments really carry); we check that our
//! field equals the bytes actually present and compare everything else byte for byte.

mod common;

use flowbundle_decode::{
    DecodeOptions, DefragConfig, DefragOutcome, Defragmenter, L4, OverlapPolicy, decode,
    decode_bytes,
};
use flowbundle_ingest::{LinkType, Trace};

/// Runs a trace (in the given packet order) through decode + defrag; returns each reassembled datagram.
fn reassemble(trace: &Trace, order: &[usize], cfg: DefragConfig) -> (Vec<Vec<u8>>, Defragmenter) {
    let opts = DecodeOptions::default();
    let mut df = Defragmenter::new(cfg);
    let mut out = Vec::new();
    for &i in order {
        let rec = trace.get(i);
        let d = decode(&rec, &opts);
        if let DefragOutcome::Reassembled(p) = df.push(&d, rec.ts_ns) {
            out.push(p.to_vec());
        }
    }
    (out, df)
}

fn in_order(t: &Trace) -> Vec<usize> {
    (0..t.len()).collect()
}

fn ip_id(p: &[u8]) -> u16 {
    u16::from_be_bytes([p[4], p[5]])
}

#[test]
fn ipv4_fragments_match_pcapplusplus() {
    let Some(t) = common::load("reassembly/ip4_fragments.pcap") else {
        return;
    };
    let (out, df) = reassemble(&t, &in_order(&t), DefragConfig::default());
    // ids 0x1ea0..0x1ea5 fragmented, each reassembled once; the duplicated last fragments of 0x1ea3 and 0x1ea5
    // arrive after completion and open datagrams that never complete.
    let ids: Vec<u16> = out.iter().map(|p| ip_id(p)).collect();
    assert_eq!(ids, vec![0x1ea0, 0x1ea1, 0x1ea2, 0x1ea3, 0x1ea4, 0x1ea5]);
    for (file, id) in [
        ("packet1", 0x1ea0),
        ("packet4", 0x1ea3),
        ("packet6", 0x1ea4),
    ] {
        let want = common::hex_file(&format!("reassembly/ip4_fragments_{file}.txt")).unwrap();
        let got = out.iter().find(|p| ip_id(p) == id).unwrap();
        assert_eq!(got.len(), want.len() - 14, "{file}");
        assert!(got[..] == want[14..], "{file}: bytes differ");
        // The result decodes as one whole UDP datagram (NFS over UDP, 8,320 bytes).
        let d = decode_bytes(LinkType::RAW, got, &DecodeOptions::default());
        assert!(d.outcome.is_decoded());
        assert!(!d.ip.unwrap().is_fragment());
        assert!(matches!(d.l4, L4::Udp(u) if u.length == 8320));
    }
    let s = df.stats();
    assert_eq!(s.reassembled, 6);
    assert!(s.overlaps >= 2, "retransmitted fragments overlap: {s:?}");
    assert_eq!(s.inconsistent_overlaps, 0);
    assert_eq!(s.in_progress, 2);
}

fn check_v6(t: &Trace, order: &[usize], which: &[(&str, usize)]) {
    let (out, _) = reassemble(t, order, DefragConfig::default());
    for &(file, idx) in which {
        let mut want = common::hex_file(&format!("reassembly/ip6_fragments_{file}.txt")).unwrap();
        let got = &out[idx];
        assert_eq!(got.len(), want.len() - 14, "{file}");
        let plen = u16::from_be_bytes([got[4], got[5]]) as usize;
        assert_eq!(
            plen,
            got.len() - 40,
            "{file}: payload length is the bytes present"
        );
        want[14 + 4..14 + 6].copy_from_slice(&got[4..6]);
        assert!(got[..] == want[14..], "{file}: bytes differ");
        assert_eq!(got[6], 17, "fragment header removed, Next Header is UDP");
    }
}

#[test]
fn ipv6_fragments_match_pcapplusplus() {
    let Some(t) = common::load("reassembly/ip6_fragments.pcap") else {
        return;
    };
    check_v6(&t, &in_order(&t), &[("packet1", 0), ("packet2", 1)]);
    // PcapPlusPlus' out-of-order case: fragments 1 and 3 swapped, and 6 and 7.
    let order = [2, 1, 0, 3, 4, 6, 5];
    check_v6(&t, &order, &[("packet1", 0)]);
}

#[test]
fn http_request_any_order_matches_pcapplusplus() {
    let Some(t) = common::load("reassembly/frag_http_req.pcap") else {
        return;
    };
    let want = common::hex_file("reassembly/frag_http_req_reassembled.txt").unwrap();
    let n = t.len();
    assert_eq!(n, 11);
    let mut orders: Vec<Vec<usize>> = vec![in_order(&t), in_order(&t).into_iter().rev().collect()];
    // PcapPlusPlus' cases: first two swapped; 6↔10 and 3↔7; 6↔last; last first.
    let mut o = in_order(&t);
    o.swap(0, 1);
    orders.push(o);
    let mut o = in_order(&t);
    o.swap(5, 9);
    o.swap(2, 6);
    orders.push(o);
    let mut o = in_order(&t);
    o.swap(5, 10);
    orders.push(o);
    let mut o = in_order(&t);
    o.rotate_right(1);
    orders.push(o);
    for order in orders {
        let (out, _) = reassemble(&t, &order, DefragConfig::default());
        assert_eq!(out.len(), 1, "{order:?}");
        assert!(out[0][..] == want[14..], "{order:?}");
        let d = decode_bytes(LinkType::RAW, &out[0], &DecodeOptions::default());
        assert_eq!(d.ports(), Some((64415, 80)));
        assert!(d.payload.starts_with(
            b"GET /convert_data.js?partner_id=29 HTTP/1.1\r\nHost: js.bizographics.com"
        ));
    }
}

#[test]
fn padded_first_fragment_matches_pcapplusplus() {
    let Some(t) = common::load("reassembly/frag_with_padding.pcap") else {
        return;
    };
    let want = common::hex_file("reassembly/frag_with_padding_defragmented.dat").unwrap();
    let (out, _) = reassemble(&t, &in_order(&t), DefragConfig::default());
    assert_eq!(out.len(), 1);
    // Ethernet + one VLAN tag in front of the reference.
    assert_eq!(out[0].len(), want.len() - 18);
    assert!(out[0][..] == want[18..]);
}

#[test]
fn bad_fragment_is_not_held() {
    let Some(t) = common::load("reassembly/ip4_bad_fragment.pcap") else {
        return;
    };
    let (out, df) = reassemble(&t, &in_order(&t), DefragConfig::default());
    assert!(out.is_empty());
    assert_eq!(df.in_progress(), 0);
    assert_eq!(
        df.stats().fragments,
        0,
        "its IPv4 header is cut, so it never reaches the defragmenter"
    );
}

#[test]
fn reject_policy_and_timeouts_on_real_fragments() {
    let Some(t) = common::load("reassembly/frag_http_req.pcap") else {
        return;
    };
    let opts = DecodeOptions::default();
    // Timeout: the last fragment arrives after the datagram expired.
    let mut df = Defragmenter::new(DefragConfig {
        timeout_ns: 1_000,
        ..DefragConfig::default()
    });
    for i in 0..t.len() {
        let rec = t.get(i);
        let d = decode(&rec, &opts);
        let ts = if i == t.len() - 1 {
            rec.ts_ns + 10_000
        } else {
            rec.ts_ns
        };
        assert!(!matches!(df.push(&d, ts), DefragOutcome::Reassembled(_)));
    }
    assert_eq!(df.stats().timed_out, 1);
    // An inconsistent overlap: a copy of fragment 2 with different bytes, under each policy.
    let frag2 = t.get(1);
    let mut evil = frag2.data.to_vec();
    let last = evil.len() - 1;
    evil[last] ^= 0xff;
    for (policy, complete) in [
        (OverlapPolicy::First, true),
        (OverlapPolicy::Last, true),
        (OverlapPolicy::RejectInconsistent, false),
    ] {
        let mut df = Defragmenter::new(DefragConfig {
            policy,
            ..DefragConfig::default()
        });
        let mut done = None;
        for i in 0..t.len() {
            let rec = t.get(i);
            if i == 2 {
                let d = decode_bytes(LinkType::ETHERNET, &evil, &opts);
                df.push(&d, rec.ts_ns);
            }
            let d = decode(&rec, &opts);
            if let DefragOutcome::Reassembled(p) = df.push(&d, rec.ts_ns) {
                done = Some(p.to_vec());
            }
        }
        assert_eq!(done.is_some(), complete, "{policy:?}");
        assert_eq!(df.stats().inconsistent_overlaps, 1, "{policy:?}");
        if let Some(p) = done {
            let orig_last = frag2.data[frag2.data.len() - 1];
            let at = 20 + 144 + (frag2.data.len() - 14 - 20) - 1;
            let want = if policy == OverlapPolicy::First {
                orig_last
            } else {
                orig_last ^ 0xff
            };
            assert_eq!(p[at], want, "{policy:?}");
        }
    }
}
