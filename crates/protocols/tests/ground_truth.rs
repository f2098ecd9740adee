//! Agreement with nDPI, flow by flow, through the engine's own path: [`Registry::builtin`] and one [`FlowApp`] per
//! flow (classifier, then the identified protocol's parser on the rest of the flow).
//!
//! Reads every capture named in `../shared/data/ndpi/groundtruth.csv`, rebuilds flows by 5-tuple (client = the SYN
//! sender, else the first sender), concatenates each direction's TCP payloads in arrival order with retransmitted
//! bytes trimmed (naive: no reordering, no defragmentation, no tunnels other than IP-in-IP), and feeds them to the
//! flow's `FlowApp`. Compares the verdict with nDPI's master protocol on the rows nDPI classified by payload
//! (confidence `DPI`) and prints, per protocol, agreement (our label equals nDPI's) and the flows we gave another
//! protocol (false positives).
//!
//! Asserts the protocols this file's owner wrote (HTTP, TLS, QUIC, DNS, MDNS, LLMNR, DTLS) each reach 80% and
//! together 90%; every other protocol is reported. Parsers run on every identified flow, so this also checks that
//! no real capture makes a parser panic. `GT_VERBOSE=1` lists every disagreement.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use flowbundle_protocols::{AppEvent, Dir, EventSink, FlowApp, Registry, Transport, Verdict};
use pcap_parser::{Block, PcapBlockOwned, PcapError};

/// Payload-carrying packets fed per flow (the classifier stops far earlier; the rest exercises parsers).
const MAX_PAYLOADS: usize = 400;

/// Protocols asserted here, by nDPI name.
const MINE: &[&str] = &["HTTP", "TLS", "QUIC", "DNS", "MDNS", "LLMNR", "DTLS"];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/ndpi")
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Key {
    tcp: bool,
    a: (IpAddr, u16),
    b: (IpAddr, u16),
}

impl Key {
    fn new(tcp: bool, x: (IpAddr, u16), y: (IpAddr, u16)) -> Key {
        if x <= y {
            Key { tcp, a: x, b: y }
        } else {
            Key { tcp, a: y, b: x }
        }
    }
}

#[derive(Default)]
struct Flow {
    client: Option<(IpAddr, u16)>,
    from_syn: bool,
    payloads: Vec<(Dir, Vec<u8>)>,
    /// TCP: next expected sequence number per direction (to trim retransmitted bytes).
    next_seq: [Option<u32>; 2],
}

struct Pkt<'a> {
    src: (IpAddr, u16),
    dst: (IpAddr, u16),
    tcp: bool,
    syn: bool,
    seq: u32,
    payload: &'a [u8],
}

fn be16(d: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(o)?, *d.get(o + 1)?]))
}

fn be32(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(o..o + 4)?.try_into().ok()?))
}

fn decode_l2(linktype: i32, d: &[u8]) -> Option<Pkt<'_>> {
    match linktype {
        1 => {
            let mut off = 12;
            let mut et = be16(d, off)?;
            while et == 0x8100 || et == 0x88a8 {
                off += 4;
                et = be16(d, off)?;
            }
            decode_et(et, d.get(off + 2..)?)
        }
        0 | 108 => decode_ip(d.get(4..)?),
        101 | 12 | 14 | 228 | 229 => decode_ip(d),
        113 => decode_et(be16(d, 14)?, d.get(16..)?),
        276 => decode_et(be16(d, 0)?, d.get(20..)?),
        _ => None,
    }
}

fn decode_et(et: u16, d: &[u8]) -> Option<Pkt<'_>> {
    match et {
        0x0800 | 0x86dd => decode_ip(d),
        0x8864 if matches!(be16(d, 6)?, 0x0021 | 0x0057) => decode_ip(d.get(8..)?),
        _ => None,
    }
}

fn decode_ip(d: &[u8]) -> Option<Pkt<'_>> {
    let v = d.first()? >> 4;
    let (src, dst, proto, l4) = if v == 4 {
        let ihl = usize::from(d[0] & 0x0f) * 4;
        let total = usize::from(be16(d, 2)?);
        if be16(d, 6)? & 0x1fff != 0 {
            return None; // non-first fragment
        }
        let src = IpAddr::from(<[u8; 4]>::try_from(d.get(12..16)?).ok()?);
        let dst = IpAddr::from(<[u8; 4]>::try_from(d.get(16..20)?).ok()?);
        (src, dst, *d.get(9)?, d.get(ihl..total.clamp(ihl, d.len()))?)
    } else if v == 6 {
        let plen = usize::from(be16(d, 4)?);
        let src = IpAddr::from(<[u8; 16]>::try_from(d.get(8..24)?).ok()?);
        let dst = IpAddr::from(<[u8; 16]>::try_from(d.get(24..40)?).ok()?);
        let mut nh = *d.get(6)?;
        let mut rest = d.get(40..(40 + plen).min(d.len()))?;
        while matches!(nh, 0 | 43 | 60) {
            nh = *rest.first()?;
            rest = rest.get((usize::from(*rest.get(1)?) + 1) * 8..)?;
        }
        (src, dst, nh, rest)
    } else {
        return None;
    };
    match proto {
        6 => {
            let off = usize::from(l4.get(12)? >> 4) * 4;
            Some(Pkt {
                src: (src, be16(l4, 0)?),
                dst: (dst, be16(l4, 2)?),
                tcp: true,
                syn: *l4.get(13)? & 0x12 == 0x02,
                seq: be32(l4, 4)?,
                payload: l4.get(off..).unwrap_or(&[]),
            })
        }
        17 => {
            let len = usize::from(be16(l4, 4)?).clamp(8, l4.len());
            Some(Pkt {
                src: (src, be16(l4, 0)?),
                dst: (dst, be16(l4, 2)?),
                tcp: false,
                syn: false,
                seq: 0,
                payload: l4.get(8..len)?,
            })
        }
        4 | 41 => decode_ip(l4),
        _ => None,
    }
}

fn add_packet(flows: &mut HashMap<Key, Flow>, p: Pkt<'_>) {
    let f = flows.entry(Key::new(p.tcp, p.src, p.dst)).or_default();
    if f.client.is_none() || (p.syn && !f.from_syn) {
        f.client = Some(p.src);
        f.from_syn = p.syn;
    }
    if p.tcp && p.syn {
        let i = usize::from(Some(p.src) != f.client);
        f.next_seq[i] = Some(p.seq.wrapping_add(1));
    }
    if p.payload.is_empty() || f.payloads.len() >= MAX_PAYLOADS {
        return;
    }
    let dir = if Some(p.src) == f.client {
        Dir::ToServer
    } else {
        Dir::ToClient
    };
    let mut data = p.payload;
    if p.tcp {
        let i = dir.index();
        if let Some(next) = f.next_seq[i] {
            let end = p.seq.wrapping_add(data.len() as u32);
            if (end.wrapping_sub(next) as i32) <= 0 {
                return; // entirely retransmitted
            }
            let overlap = next.wrapping_sub(p.seq) as i32;
            if overlap > 0 {
                data = &data[overlap as usize..];
            }
        }
        f.next_seq[i] = Some(p.seq.wrapping_add(p.payload.len() as u32));
    }
    f.payloads.push((dir, data.to_vec()));
}

fn read_flows(path: &Path) -> HashMap<Key, Flow> {
    let mut flows = HashMap::new();
    let Ok(file) = std::fs::File::open(path) else {
        return flows;
    };
    let Ok(mut reader) = pcap_parser::create_reader(1 << 20, file) else {
        return flows;
    };
    let mut linktypes: Vec<i32> = Vec::new();
    let mut legacy = 1;
    loop {
        match reader.next() {
            Ok((off, block)) => {
                let pkt = match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        legacy = h.network.0;
                        None
                    }
                    PcapBlockOwned::Legacy(b) => decode_l2(legacy, b.data),
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                        linktypes.clear();
                        None
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        linktypes.push(idb.linktype.0);
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        let lt = linktypes.get(epb.if_id as usize).copied().unwrap_or(1);
                        let n = (epb.caplen as usize).min(epb.data.len());
                        decode_l2(lt, &epb.data[..n])
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                        decode_l2(linktypes.first().copied().unwrap_or(1), spb.data)
                    }
                    PcapBlockOwned::NG(_) => None,
                };
                if let Some(p) = pkt {
                    add_packet(&mut flows, p);
                }
                reader.consume(off);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                if reader.refill().is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    flows
}

struct Row {
    pcap: String,
    key: Key,
    master: String,
}

fn parse_csv_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn load_rows(dir: &Path) -> Option<Vec<Row>> {
    let text = std::fs::read_to_string(dir.join("groundtruth.csv")).ok()?;
    let mut lines = text.lines();
    let header = parse_csv_line(lines.next()?);
    let col = |n: &str| header.iter().position(|h| h == n);
    let (pcap, l4, src, sport, dst, dport, name, conf) = (
        col("pcap")?,
        col("l4")?,
        col("src")?,
        col("sport")?,
        col("dst")?,
        col("dport")?,
        col("proto_name")?,
        col("confidence")?,
    );
    let mut rows = Vec::new();
    for line in lines {
        let f = parse_csv_line(line);
        let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
        if get(conf) != "DPI" || !matches!(get(l4), "TCP" | "UDP") {
            continue;
        }
        let (Ok(s), Ok(sp), Ok(d), Ok(dp)) = (
            get(src).parse::<IpAddr>(),
            get(sport).parse(),
            get(dst).parse::<IpAddr>(),
            get(dport).parse(),
        ) else {
            continue;
        };
        rows.push(Row {
            pcap: get(pcap).to_string(),
            key: Key::new(get(l4) == "TCP", (s, sp), (d, dp)),
            master: get(name).split('.').next().unwrap_or("").to_string(),
        });
    }
    Some(rows)
}

/// Counts events and the bytes of HTTP buffers, so parsers run with a sink that wants everything.
#[derive(Default)]
struct CountSink {
    events: BTreeMap<&'static str, u64>,
    http_buffer_bytes: u64,
}

impl EventSink for CountSink {
    fn event(&mut self, e: AppEvent) {
        *self.events.entry(e.event_type()).or_default() += 1;
    }
    fn http_buffer(&mut self, _tx: u64, _b: flowbundle_protocols::HttpBuffer, data: &[u8]) {
        self.http_buffer_bytes += data.len() as u64;
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    flows: u64,
    agree: u64,
    unknown: u64,
    other: u64,
    /// Flows of other protocols we labelled as this one.
    false_pos: u64,
}

fn run_flow(reg: &Registry, key: &Key, flow: &Flow, sink: &mut CountSink) -> Verdict {
    let Some(client) = flow.client else {
        return Verdict::Unknown;
    };
    let server_port = if key.a == client { key.b.1 } else { key.a.1 };
    let transport = if key.tcp {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    let mut app = FlowApp::new(reg, transport, client.1, server_port);
    for (i, (dir, data)) in flow.payloads.iter().enumerate() {
        app.on_payload(reg, *dir, data, i as u64, sink);
    }
    app.finish(sink)
}

#[test]
fn agreement_with_ndpi() {
    let dir = data_dir();
    let Some(rows) = load_rows(&dir) else {
        eprintln!(
            "SKIP: {} not found (shared test data absent)",
            dir.join("groundtruth.csv").display()
        );
        return;
    };
    let verbose = std::env::var_os("GT_VERBOSE").is_some();
    let reg = Registry::builtin();
    let mut by_pcap: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_pcap.entry(r.pcap.as_str()).or_default().push(r);
    }
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let mut sink = CountSink::default();
    let (mut found, mut missing) = (0u64, 0u64);
    for (pcap, rows) in &by_pcap {
        let path = dir.join("pcap").join(pcap);
        if !path.exists() {
            missing += rows.len() as u64;
            continue;
        }
        let flows = read_flows(&path);
        for r in rows {
            let Some(flow) = flows.get(&r.key) else {
                missing += 1;
                continue;
            };
            found += 1;
            let v = run_flow(&reg, &r.key, flow, &mut sink);
            let ours = match v {
                Verdict::Identified { proto, .. } => proto.name().to_string(),
                _ => "Unknown".to_string(),
            };
            let t = tally.entry(r.master.clone()).or_default();
            t.flows += 1;
            if ours == r.master {
                t.agree += 1;
            } else {
                if ours == "Unknown" {
                    t.unknown += 1;
                } else {
                    t.other += 1;
                    tally.entry(ours.clone()).or_default().false_pos += 1;
                }
                if verbose && (MINE.contains(&r.master.as_str()) || MINE.contains(&ours.as_str())) {
                    eprintln!("  {pcap} {:?}: nDPI {} ours {ours}", r.key, r.master);
                }
            }
        }
    }
    eprintln!("ground truth: {found} DPI flows rebuilt, {missing} not found in the captures");
    eprintln!(
        "{:<28} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6}",
        "protocol", "flows", "agree", "%", "unkn", "other", "fp"
    );
    let (mut mine_flows, mut mine_agree) = (0, 0);
    let mut supported = (0u64, 0u64);
    let mut failures = Vec::new();
    for (name, t) in &tally {
        let pct = if t.flows > 0 {
            100.0 * t.agree as f64 / t.flows as f64
        } else {
            0.0
        };
        let supported_here = t.agree > 0 || t.false_pos > 0;
        if t.flows > 0 && (supported_here || verbose) {
            eprintln!(
                "{name:<28} {:>6} {:>6} {pct:>6.1}% {:>6} {:>6} {:>6}",
                t.flows, t.agree, t.unknown, t.other, t.false_pos
            );
        }
        if supported_here {
            supported.0 += t.flows;
            supported.1 += t.agree;
        }
        if MINE.contains(&name.as_str()) {
            mine_flows += t.flows;
            mine_agree += t.agree;
            if t.flows >= 5 && pct < 80.0 {
                failures.push(format!("{name}: {pct:.1}%"));
            }
        }
    }
    let mine_pct = 100.0 * mine_agree as f64 / mine_flows.max(1) as f64;
    let sup_pct = 100.0 * supported.1 as f64 / supported.0.max(1) as f64;
    eprintln!("HTTP/TLS/QUIC/DNS/MDNS/LLMNR/DTLS: {mine_agree}/{mine_flows} = {mine_pct:.1}%");
    eprintln!(
        "all protocols with a detector: {}/{} = {sup_pct:.1}%",
        supported.1, supported.0
    );
    eprintln!(
        "parser events: {:?}, HTTP buffer bytes: {}",
        sink.events, sink.http_buffer_bytes
    );
    assert!(failures.is_empty(), "protocols below 80%: {failures:?}");
    assert!(mine_pct >= 90.0, "overall agreement {mine_pct:.1}% < 90%");
}
