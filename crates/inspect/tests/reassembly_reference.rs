//! The reassembler against PcapPlusPlus's reference streams, byte for byte.
//!
//! `shared/data/reassembly/*_output.txt` are the files PcapPlusPlus's own tests (`Tests/Pcap++Test/Tests/
//! TcpReassemblyTests.cpp`) compare its `TcpReassembly` with: for one connection, every chunk its message callback
//! received, both directions concatenated in delivery order, a gap rendered as `[N bytes missing]` in front of the
//! data that followed it. Each test here rebuilds the packet sequence PcapPlusPlus's test builds (the capture, or the
//! capture with packets removed, moved, or turned into partial retransmissions the way its
//! `tcpReassemblyAddRetransmissions` does) and feeds it, in that order, to one [`Reassembler`] per connection.
//!
//! The driver only does what PcapPlusPlus's connection manager does around the reassembly: one reassembler per
//! 5-tuple, packets of a closed connection ignored, and `closeAllConnections` at the end where its test calls it.

use std::collections::HashMap;

use flowbundle_decode::wire::tcp::flags;
use flowbundle_decode::{DecodeOptions, FlowKey, KeySide, L4};
use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::reassembly::{
    Ctx, Reassembler, ReassemblyConfig, ReassemblyMemcap, ReassemblyStats, Segment, StreamSink,
};

/// A TCP packet as the test needs it (owned, so tests can rewrite it).
#[derive(Clone, Debug)]
struct Pkt {
    /// False for packets that are not TCP (kept so that indices match PcapPlusPlus's packet vectors).
    tcp: bool,
    key: FlowKey,
    dir: KeySide,
    seq: u32,
    flags: u16,
    payload: Vec<u8>,
    ts: u64,
}

fn read(name: &str) -> Option<Vec<Pkt>> {
    let path = flowbundle_testsupport::data(&format!("reassembly/{name}"))?;
    let mut reader = CaptureReader::open(&path).expect("open capture");
    let mut out = Vec::new();
    while let Some(rec) = reader.next_packet().expect("read capture") {
        // Keep the raw bytes of every packet (even non-TCP) so that packet indices match PcapPlusPlus's vectors.
        out.push(raw_to_pkt(rec.link_type, rec.data, rec.ts_ns));
    }
    Some(out)
}

/// Raw packets of a capture, for the one test that edits header bytes.
fn read_raw(name: &str) -> Option<Vec<(flowbundle_ingest::LinkType, Vec<u8>, u64)>> {
    let path = flowbundle_testsupport::data(&format!("reassembly/{name}"))?;
    let mut reader = CaptureReader::open(&path).expect("open capture");
    let mut out = Vec::new();
    while let Some(rec) = reader.next_packet().expect("read capture") {
        out.push((rec.link_type, rec.data.to_vec(), rec.ts_ns));
    }
    Some(out)
}

fn raw_to_pkt(link: flowbundle_ingest::LinkType, data: &[u8], ts: u64) -> Pkt {
    let d = flowbundle_decode::decode_bytes(link, data, &DecodeOptions::default());
    let key = FlowKey::from_decoded(&d);
    let (L4::Tcp(t), Some((key, dir))) = (d.l4, key) else {
        let (key, _) = FlowKey::new([0u8; 4].into(), 0, [0u8; 4].into(), 0, 0);
        return Pkt {
            tcp: false,
            key,
            dir: KeySide::Forward,
            seq: 0,
            flags: 0,
            payload: Vec::new(),
            ts,
        };
    };
    Pkt {
        tcp: true,
        key,
        dir,
        seq: t.seq,
        flags: t.flags,
        payload: d.payload.to_vec(),
        ts,
    }
}

/// PcapPlusPlus's `tcpReassemblyAddRetransmissions(packet, beginning, numOfBytes)`: a copy of the packet whose
/// payload is `numOfBytes` bytes starting `beginning` bytes in (padded with `*` past the original payload), with
/// the sequence number moved forward by `beginning`. `numOfBytes <= 0` means "to the end of the payload".
///
/// One quirk of that helper is reproduced because the reference files depend on it: it removes "the layer after
/// TCP" and appends the new payload, and PcapPlusPlus parses a port-80 payload that starts an HTTP message as an
/// HTTP layer (up to the blank line) followed by a payload layer (the body bytes in the packet). Only the HTTP layer
/// is removed, so the body bytes stay in front of the new payload.
fn retrans(p: &Pkt, beginning: usize, num: isize) -> Pkt {
    let len = if num <= 0 {
        p.payload.len() - beginning
    } else {
        num as usize
    };
    let starts_http = [
        &b"GET "[..],
        b"POST ",
        b"PUT ",
        b"HEAD ",
        b"DELETE ",
        b"OPTIONS ",
        b"HTTP/1.",
    ]
    .iter()
    .any(|m| p.payload.starts_with(m));
    let kept: &[u8] = if starts_http {
        p.payload
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(&[], |i| &p.payload[i + 4..])
    } else {
        &[]
    };
    let mut payload = Vec::with_capacity(kept.len() + len);
    payload.extend_from_slice(kept);
    for i in beginning..beginning + len {
        payload.push(p.payload.get(i).copied().unwrap_or(b'*'));
    }
    Pkt {
        seq: p.seq.wrapping_add(beginning as u32),
        payload,
        ..p.clone()
    }
}

#[derive(Default)]
struct Out {
    bytes: Vec<u8>,
    data_chunks: usize,
    missing: u64,
}

impl StreamSink for Out {
    fn data(&mut self, _dir: KeySide, _offset: u64, bytes: &[u8], _ts: u64) {
        self.bytes.extend_from_slice(bytes);
        self.data_chunks += 1;
    }
    fn gap(&mut self, _dir: KeySide, _offset: u64, len: u64) {
        self.bytes
            .extend_from_slice(format!("[{len} bytes missing]").as_bytes());
        self.missing += len;
    }
}

struct Conn {
    r: Reassembler,
    out: Out,
    /// Order of first appearance.
    order: usize,
}

/// PcapPlusPlus's connection manager around our reassembler.
struct Driver {
    cfg: ReassemblyConfig,
    memcap: ReassemblyMemcap,
    stats: ReassemblyStats,
    conns: HashMap<FlowKey, Conn>,
    /// Close a connection once it delivered this many data chunks (the "manual close in the callback" tests).
    close_after: Option<usize>,
}

impl Driver {
    fn new() -> Self {
        Driver {
            cfg: ReassemblyConfig::default(),
            memcap: ReassemblyMemcap::new(1 << 30),
            stats: ReassemblyStats::default(),
            conns: HashMap::new(),
            close_after: None,
        }
    }

    fn feed(&mut self, pkts: &[Pkt]) {
        for p in pkts.iter().filter(|p| p.tcp) {
            let is_pure_ack =
                p.payload.is_empty() && p.flags & (flags::SYN | flags::FIN | flags::RST) == 0;
            if is_pure_ack {
                continue;
            }
            let n = self.conns.len();
            let c = self.conns.entry(p.key).or_insert_with(|| Conn {
                r: Reassembler::new(),
                out: Out::default(),
                order: n,
            });
            let mut cx = Ctx {
                cfg: &self.cfg,
                memcap: &self.memcap,
                stats: &mut self.stats,
                sink: &mut c.out,
            };
            c.r.segment(
                p.dir,
                &Segment {
                    seq: p.seq,
                    flags: p.flags,
                    payload: &p.payload,
                    ts_ns: p.ts,
                },
                &mut cx,
            );
            if let Some(limit) = self.close_after
                && c.out.data_chunks >= limit
            {
                let mut cx = Ctx {
                    cfg: &self.cfg,
                    memcap: &self.memcap,
                    stats: &mut self.stats,
                    sink: &mut c.out,
                };
                c.r.close(&mut cx);
            }
        }
    }

    fn close_all(&mut self) {
        let mut conns: Vec<&mut Conn> = self.conns.values_mut().collect();
        conns.sort_by_key(|c| c.order);
        for c in conns {
            let mut cx = Ctx {
                cfg: &self.cfg,
                memcap: &self.memcap,
                stats: &mut self.stats,
                sink: &mut c.out,
            };
            c.r.close(&mut cx);
        }
    }

    /// Outputs in order of first appearance.
    fn outputs(&self) -> Vec<&Out> {
        let mut v: Vec<&Conn> = self.conns.values().collect();
        v.sort_by_key(|c| c.order);
        v.into_iter().map(|c| &c.out).collect()
    }

    fn only(&self) -> &Out {
        let o = self.outputs();
        assert_eq!(o.len(), 1, "one connection expected");
        o[0]
    }
}

fn expected(name: &str) -> Vec<u8> {
    let path = flowbundle_testsupport::data(&format!("reassembly/{name}")).expect("reference file");
    std::fs::read(&path).expect("reference file")
}

#[track_caller]
fn same(got: &[u8], want_file: &str) {
    let want = expected(want_file);
    if got != want.as_slice() {
        let at = got
            .iter()
            .zip(&want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        let ctx = |v: &[u8]| {
            String::from_utf8_lossy(&v[at.saturating_sub(40)..(at + 40).min(v.len())]).into_owned()
        };
        panic!(
            "{want_file}: {} bytes reassembled, {} expected; first difference at byte {at}:\n got  {:?}\n want {:?}",
            got.len(),
            want.len(),
            ctx(got),
            ctx(&want)
        );
    }
}

/// Removes and returns element `i` (PcapPlusPlus's `erase(begin() + i)`).
fn erase(v: &mut Vec<Pkt>, i: usize) -> Pkt {
    v.remove(i)
}

#[test]
fn sanity_one_tcp_stream() {
    let Some(pkts) = read("one_tcp_stream.pcap") else {
        return;
    };
    let mut d = Driver::new();
    d.feed(&pkts);
    d.close_all();
    same(&d.only().bytes, "one_tcp_stream_output.txt");
    assert_eq!(
        d.only().data_chunks,
        19,
        "PcapPlusPlus counts 19 data callbacks"
    );
}

#[test]
fn retransmissions() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    let r1 = retrans(&p[4], 0, 0);
    let r2 = retrans(&p[10], 10, 0);
    let r3 = retrans(&p[13], 0, 1340);
    let r4 = retrans(&p[21], 0, 1430);
    let r5 = retrans(&p[28], 10, 1370);
    let r6 = retrans(&p[34], 10, 91);
    p.insert(5, r1);
    p.insert(12, r2);
    p.insert(16, r3);
    p.insert(25, r4);
    p.insert(33, r5);
    p.insert(40, r6);
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_tcp_stream_retransmission_output.txt");
    assert_eq!(d.only().data_chunks, 21);
}

#[test]
fn missing_data() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    let mut loss = 0;
    let m1 = retrans(&p[3], 20, 0);
    p.insert(4, m1);
    erase(&mut p, 3);
    loss += 20;
    let m2 = retrans(&p[20], 0, 1390);
    p.insert(21, m2);
    erase(&mut p, 20);
    loss += 30;
    loss += p[28].payload.len() as u64;
    loss += p[30].payload.len() as u64;
    erase(&mut p, 28);
    erase(&mut p, 30);
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_tcp_stream_missing_data_output.txt");
    assert_eq!(d.only().missing, loss);
    assert_eq!(d.stats.gaps, 4);
    assert_eq!(d.stats.gap_bytes, loss);
}

#[test]
fn midstream_without_syn() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    erase(&mut p, 0);
    erase(&mut p, 0);
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_tcp_stream_output.txt");
}

/// "reverse order of all packets in message": the 12 packets from index 35 moved, reversed, to index 24.
fn reverse_message(p: &mut Vec<Pkt>) {
    for i in 0..12 {
        let t = erase(p, 35);
        p.insert(24 + i, t);
    }
}

#[test]
fn out_of_order() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    p.swap(9, 10);
    let t = erase(&mut p, 18);
    p.insert(23, t);
    reverse_message(&mut p);
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_tcp_stream_out_of_order_output.txt");
    assert_eq!(d.stats.gaps, 0);
}

#[test]
fn out_of_order_with_missing_data() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    reverse_message(&mut p);
    erase(&mut p, 29);
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(
        &d.only().bytes,
        "one_tcp_stream_missing_data_output_ooo.txt",
    );
}

#[test]
fn out_of_order_with_manual_close() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    p.swap(9, 10);
    let t = erase(&mut p, 18);
    p.insert(23, t);
    reverse_message(&mut p);
    let mut d = Driver::new();
    d.close_after = Some(10);
    d.feed(&p);
    d.close_all();
    same(
        &d.only().bytes,
        "one_tcp_stream_out_of_order_with_manual_close_output.txt",
    );
}

#[test]
fn missing_data_with_manual_close() {
    let Some(mut p) = read("one_tcp_stream.pcap") else {
        return;
    };
    p.swap(9, 10);
    erase(&mut p, 13);
    let mut d = Driver::new();
    d.close_after = Some(10);
    d.feed(&p);
    d.close_all();
    same(
        &d.only().bytes,
        "one_tcp_stream_missing_date_with_manual_close_output.txt",
    );
}

#[test]
fn fin_and_rst() {
    let Some(p) = read("one_http_stream_fin.pcap") else {
        return;
    };
    let mut d = Driver::new();
    d.feed(&p);
    same(&d.only().bytes, "one_http_stream_fin_output.txt");
    assert!(d.conns.values().all(|c| c.r.is_closed()), "closed by FIN");

    let p = read("one_http_stream_rst.pcap").unwrap_or_default();
    let mut d = Driver::new();
    d.feed(&p);
    same(&d.only().bytes, "one_http_stream_rst_output.txt");
    assert!(d.conns.values().all(|c| c.r.is_closed()), "closed by RST");

    let p = read("one_tcp_rst.pcap").unwrap_or_default();
    let mut d = Driver::new();
    d.feed(&p);
    assert!(d.only().bytes.is_empty());
    assert!(d.conns.values().all(|c| c.r.is_closed()));

    let p = read("one_http_stream_fin2.pcap").unwrap_or_default();
    let mut d = Driver::new();
    d.feed(&p);
    same(&d.only().bytes, "one_http_stream_fin2_output.txt");

    // Missing data before the FIN: the second server packet moved after the FIN.
    let mut p = read("one_http_stream_fin2.pcap").unwrap_or_default();
    let t = erase(&mut p, 6);
    p.insert(12, t);
    let mut d = Driver::new();
    d.feed(&p);
    same(&d.only().bytes, "one_http_stream_fin2_output2.txt");
}

#[test]
fn ip_length_beyond_the_capture() {
    let Some(mut raw) = read_raw("one_http_stream_fin2.pcap") else {
        return;
    };
    // PcapPlusPlus's malformed-packet test: packet 8's IPv4 total length grows by 40 bytes that were never captured.
    let (link, data, _) = &mut raw[8];
    let ip = if *link == flowbundle_ingest::LinkType::ETHERNET {
        14
    } else {
        0
    };
    let tl = u16::from_be_bytes([data[ip + 2], data[ip + 3]]) + 40;
    data[ip + 2..ip + 4].copy_from_slice(&tl.to_be_bytes());
    let pkts: Vec<Pkt> = raw
        .iter()
        .map(|(l, d, ts)| raw_to_pkt(*l, d, *ts))
        .collect();
    let mut d = Driver::new();
    d.feed(&pkts);
    same(&d.only().bytes, "one_http_stream_fin2_output.txt");
}

#[test]
fn three_connections() {
    let Some(mut p) = read("three_http_streams.pcap") else {
        return;
    };
    // The test holds back two FIN packets (indices 13 and 15 of the original vector).
    erase(&mut p, 13);
    erase(&mut p, 14);
    let mut d = Driver::new();
    d.feed(&p);
    let outs: Vec<&[u8]> = d.outputs().iter().map(|o| o.bytes.as_slice()).collect();
    assert_eq!(outs.len(), 3);
    for f in [
        "three_http_streams_conn_1_output.txt",
        "three_http_streams_conn_2_output.txt",
        "three_http_streams_conn_3_output.txt",
    ] {
        let want = expected(f);
        assert!(
            outs.contains(&want.as_slice()),
            "{f}: no connection reassembled to it"
        );
    }
    let closed = d.conns.values().filter(|c| c.r.is_closed()).count();
    assert_eq!(closed, 2, "two connections closed by FIN, one left open");
}

#[test]
fn ipv6_streams() {
    let Some(p) = read("one_ipv6_http_stream.pcap") else {
        return;
    };
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_ipv6_http_stream.txt");

    // Out of order: two pairs of non-consecutive packets swapped.
    let mut p = p;
    let t = erase(&mut p, 10);
    p.insert(12, t);
    let t = erase(&mut p, 15);
    p.insert(17, t);
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_ipv6_http_stream.txt");

    let p = read("four_ipv6_http_streams.pcap").unwrap_or_default();
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    let outs: Vec<&[u8]> = d.outputs().iter().map(|o| o.bytes.as_slice()).collect();
    assert_eq!(outs.len(), 4);
    for f in [
        "one_ipv6_http_stream2.txt",
        "one_ipv6_http_stream3.txt",
        "one_ipv6_http_stream4.txt",
    ] {
        let want = expected(f);
        assert!(
            outs.contains(&want.as_slice()),
            "{f}: no connection reassembled to it"
        );
    }
}

#[test]
fn sequence_wraparound() {
    let Some(p) = read("one_tcp_stream_max_seq.pcap") else {
        return;
    };
    let mut d = Driver::new();
    d.feed(&p);
    d.close_all();
    same(&d.only().bytes, "one_tcp_stream_output.txt");
}

#[test]
fn fragment_limit_skips_the_missing_packet() {
    let Some(p) = read("unidirectional_tcp_stream_with_missing_packet.pcap") else {
        return;
    };
    // Unlimited buffering: only the first data packet is delivered until the connection is closed.
    let mut d = Driver::new();
    d.feed(&p);
    assert_eq!(d.only().data_chunks, 1);
    d.close_all();
    assert_eq!(d.only().data_chunks, 7);
    // PcapPlusPlus's `maxOutOfOrderFragments = 5`: the limit gives up the hole and the rest flows.
    let mut d = Driver::new();
    d.cfg.max_segments = 5;
    d.feed(&p);
    assert_eq!(d.only().data_chunks, 7);
    assert_eq!(d.stats.limit_skips, 1);
}
