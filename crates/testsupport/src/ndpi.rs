//! nDPI's per-flow ground truth (`ndpi/groundtruth.csv`), read once here for every test that compares with it.

use std::net::IpAddr;
use std::path::Path;

/// Ground-truth labels the capture's own bytes contradict: `(capture, nDPI's master protocol, what the bytes are)`.
/// The agreement tests count these flows as misses overall and leave them out of their per-protocol floors, since
/// matching them would mean naming a protocol after its port against the payload.
pub const DISPUTED_LABELS: &[(&str, &str, &str)] = &[(
    "coap_mqtt.pcap",
    "Dropbox",
    "CoAP messages (version 1, confirmable PUT with JSON bodies) on UDP 17500, not LAN sync announcements",
)];

/// Whether capture `pcap` is in the held-out fifth of the ground truth: captures whose name's FNV-1a hash is 0 modulo
/// 5. Detectors are written without looking at these captures (their flows are left out of the verbose listings),
/// and the agreement tests report them apart, as the nearest thing to traffic the project has not seen.
pub fn held_out(pcap: &str) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in pcap.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.is_multiple_of(5)
}

/// One flow of the ground truth, its columns found by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroundTruthFlow {
    /// The capture's file name (under `ndpi/pcap`).
    pub pcap: String,
    /// The flow's number in ndpiReader's listing (`ndpi/result/<pcap>.out`), counted apart in each section.
    pub flow: u32,
    /// Whether the flow is in the listing's detected section (else in `Undetected flows:`).
    pub detected: bool,
    /// nDPI's transport name (`TCP`, `UDP`, `ICMP`, ...).
    pub l4: String,
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
    /// nDPI's `MASTER` or `MASTER.APP` name.
    pub proto_name: String,
    /// How nDPI decided (`DPI` when from payload).
    pub confidence: String,
}

impl GroundTruthFlow {
    /// Whether nDPI labelled the flow from its payload (confidence `DPI`).
    pub fn by_payload(&self) -> bool {
        self.confidence == "DPI"
    }

    /// The IP protocol number of [`GroundTruthFlow::l4`], for the transports the captures hold.
    pub fn ip_proto(&self) -> Option<u8> {
        Some(match self.l4.as_str() {
            "TCP" => 6,
            "UDP" => 17,
            "ICMP" => 1,
            "ICMPV6" => 58,
            "IGMP" => 2,
            "SCTP" => 132,
            "ESP" => 50,
            "VRRP" => 112,
            "OSPF" => 89,
            "PIM" => 103,
            "PGM" => 113,
            _ => return None,
        })
    }

    /// The master protocol (the part of `MASTER.APP` before the dot).
    pub fn master(&self) -> &str {
        self.proto_name.split('.').next().unwrap_or("")
    }

    /// Whether the flow's label is in [`DISPUTED_LABELS`].
    pub fn label_disputed(&self) -> bool {
        DISPUTED_LABELS
            .iter()
            .any(|d| d.0 == self.pcap && d.1 == self.master())
    }

    /// The application (the part after the dot; empty when nDPI gave one name).
    pub fn app(&self) -> &str {
        self.proto_name.split_once('.').map_or("", |(_, a)| a)
    }
}

/// Every flow of the ground truth at `path` whose addresses and ports parse. Panics, naming the file, when it cannot
/// be read or lacks a column: the reference data itself is broken then.
pub fn ground_truth(path: &Path) -> Vec<GroundTruthFlow> {
    let mut table = csv::Reader::from_path(path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let header = table
        .headers()
        .unwrap_or_else(|e| panic!("{}: no header: {e}", path.display()))
        .clone();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| h == n)
            .unwrap_or_else(|| panic!("{}: no column {n}", path.display()))
    };
    let cols = [
        col("pcap"),
        col("l4"),
        col("src"),
        col("sport"),
        col("dst"),
        col("dport"),
        col("proto_name"),
        col("confidence"),
        col("flow"),
        col("section"),
    ];
    let mut out = Vec::new();
    for record in table.records() {
        let r = record.unwrap_or_else(|e| panic!("{}: unreadable row: {e}", path.display()));
        let get = |i: usize| r.get(cols[i]).unwrap_or("");
        let (Ok(src), Ok(sport), Ok(dst), Ok(dport)) = (
            get(2).parse::<IpAddr>(),
            get(3).parse::<u16>(),
            get(4).parse::<IpAddr>(),
            get(5).parse::<u16>(),
        ) else {
            continue;
        };
        out.push(GroundTruthFlow {
            pcap: get(0).to_string(),
            flow: get(8).parse().unwrap_or(0),
            detected: get(9) != "undetected",
            l4: get(1).to_string(),
            src,
            sport,
            dst,
            dport,
            proto_name: get(6).to_string(),
            confidence: get(7).to_string(),
        });
    }
    out
}

/// The risks ndpiReader listed per flow in one result file (`ndpi/result/<pcap>.out`): its labels between `**` in
/// `[Risk: ** A **** B **]`, keyed by (detected section, flow number) as [`GroundTruthFlow`] numbers flows. Flows
/// without risks are absent. Panics, naming the file, when it cannot be read.
pub fn risk_labels(path: &Path) -> std::collections::HashMap<(bool, u32), Vec<String>> {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let text = String::from_utf8_lossy(&bytes);
    let mut out = std::collections::HashMap::new();
    let mut detected = true;
    for line in text.lines() {
        if line.starts_with("Undetected flows:") {
            detected = false;
            continue;
        }
        let Some(rest) = line.strip_prefix('\t') else {
            continue;
        };
        let Some((num, rest)) = rest.split_once('\t') else {
            continue;
        };
        let Ok(flow) = num.trim().parse::<u32>() else {
            continue;
        };
        let Some(start) = rest.find("[Risk: ") else {
            continue;
        };
        let field = &rest[start + 7..];
        let field = &field[..field.find(']').unwrap_or(field.len())];
        let labels: Vec<String> = field
            .split("**")
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if !labels.is_empty() {
            out.insert((detected, flow), labels);
        }
    }
    out
}
