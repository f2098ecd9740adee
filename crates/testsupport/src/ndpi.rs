//! nDPI's per-flow ground truth (`ndpi/groundtruth.csv`), read once here for every test that compares with it.

use std::net::IpAddr;
use std::path::Path;

/// A ground-truth label that two things contradict: the capture's own bytes, as the engine reads them (it names
/// the flows [`Dispute::actual`] from their payload), and a source outside the project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispute {
    /// The capture (under `ndpi/pcap`).
    pub pcap: &'static str,
    /// nDPI's master protocol on the disputed flows.
    pub ndpi: &'static str,
    /// What the flows are, as the engine names it. The dispute holds only for a flow the engine names so: a flow it
    /// leaves unknown, or names otherwise, is counted against nDPI's label as usual.
    pub actual: &'static str,
    /// What the bytes show.
    pub bytes: &'static str,
    /// The outside source that says the same.
    pub source: &'static str,
}

/// Every dispute. The agreement tests count a disputed flow the engine names [`Dispute::actual`] as neither
/// agreement nor confident error, print it apart, and report the protocol's figures both raw and set aside.
pub const DISPUTES: &[Dispute] = &[
    Dispute {
        pcap: "coap_mqtt.pcap",
        ndpi: "Dropbox",
        actual: "COAP",
        bytes: "UDP 17500 both ways: CoAP version 1 confirmable PUTs (token, Uri-Path options, JSON body after the \
                0xFF marker) each answered by an ACK 2.04 with the same message id and token (RFC 7252); no Dropbox \
                LAN sync announcement (a JSON object with host_int and namespaces)",
        source: "ntop/nDPI pull request 170 (2016-04-03): the capture's author says it holds only traffic between \
                 4 CoAP and 4 MQTT clients on ports he chose (17500, 17501) and no Dropbox traffic; later nDPI \
                 results still say Dropbox because its Dropbox dissector matches the string Bus17Cmd, this \
                 capture's CoAP resource name, on UDP 17500",
    },
    Dispute {
        pcap: "i3d.pcap",
        ndpi: "i3D",
        actual: "Discord",
        bytes: "Discord voice: a 74-byte IP discovery request (type 1, length 70, SSRC) answered by type 2 with the \
                same SSRC and the client's address as text, then RTP with payload type 0x78 and the same SSRC, \
                and the 0x1337cafe keepalive",
        source: "the IP discovery format Discord documents for voice connections (reproduced by voice libraries, \
                 e.g. the discortp crate's IpDiscovery); nDPI's own IP column names the server Discord (58), and \
                 its i3D dissector matches this capture's SSRC value (0x0003cfa8), so later results keep the label",
    },
];

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

    /// The dispute over this flow's label, if [`DISPUTES`] has one.
    pub fn dispute(&self) -> Option<&'static Dispute> {
        DISPUTES
            .iter()
            .find(|d| d.pcap == self.pcap && d.ndpi == self.master())
    }

    /// Whether the flow's label is disputed and `named` (what an identifier named the flow) is what the dispute
    /// says the flow is: only then is the flow set aside.
    pub fn disputed_as(&self, named: &str) -> bool {
        self.dispute().is_some_and(|d| d.actual == named)
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

/// One flow of an ndpiReader listing (`ndpiReader -i CAPTURE -v 2`): the flow lines of its detected and undetected
/// sections, in the ground truth's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReaderFlow {
    /// nDPI's transport name (`TCP`, `UDP`, ...).
    pub l4: String,
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
    /// nDPI's `MASTER` or `MASTER.APP` name (`Unknown` for undetected flows).
    pub proto_name: String,
    /// How nDPI decided (`DPI` when from payload), empty when the line has no `[Confidence: ...]`.
    pub confidence: String,
}

impl ReaderFlow {
    /// The master protocol (the part of `MASTER.APP` before the dot).
    pub fn master(&self) -> &str {
        self.proto_name.split('.').next().unwrap_or("")
    }
    /// The application (the part after the dot; empty when nDPI gave one name).
    pub fn app(&self) -> &str {
        self.proto_name.split_once('.').map_or("", |(_, a)| a)
    }
}

/// The flows of an ndpiReader listing: every line `\t<n>\t<L4> <src>:<port> <-> <dst>:<port> [...][proto: ID/NAME]...`
/// (IPv6 addresses in brackets, `->` for flows seen one way). Lines that do not parse are skipped.
pub fn reader_flows(listing: &str) -> Vec<ReaderFlow> {
    fn endpoint(s: &str) -> Option<(IpAddr, u16)> {
        let (addr, port) = match s.strip_prefix('[') {
            Some(v6) => v6.split_once("]:")?,
            None => s.rsplit_once(':')?,
        };
        Some((addr.parse().ok()?, port.parse().ok()?))
    }
    fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
        let at = line.find(name)? + name.len();
        let rest = line.get(at..)?;
        rest.get(..rest.find(']')?)
    }
    let mut out = Vec::new();
    for line in listing.lines() {
        let Some(rest) = line.strip_prefix('\t') else {
            continue;
        };
        let Some((num, rest)) = rest.split_once('\t') else {
            continue;
        };
        if num.parse::<u32>().is_err() {
            continue;
        }
        let mut words = rest.split(' ');
        let (Some(l4), Some(a), Some(arrow), Some(b)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        if !matches!(arrow, "<->" | "->") {
            continue;
        }
        let (Some((src, sport)), Some((dst, dport)), Some(proto)) =
            (endpoint(a), endpoint(b), field(line, "[proto: "))
        else {
            continue;
        };
        let Some((_, name)) = proto.split_once('/') else {
            continue;
        };
        out.push(ReaderFlow {
            l4: l4.to_string(),
            src,
            sport,
            dst,
            dport,
            proto_name: name.to_string(),
            confidence: field(line, "[Confidence: ").unwrap_or("").to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_flow_lines_parse() {
        let listing = "Detected protocols:\n\
            \t1\tTCP 172.29.9.146:38856 <-> 172.29.9.147:8009 [VLAN: 7][proto: 139/AJP][ClearText][Confidence: DPI][cat: Web/5]\n\
            \t2\tUDP [bbbb::1]:46819 -> [bbbb::3]:5683 [proto: 7.178/HTTP.Amazon][Confidence: Match by port]\n\
            \tnot a flow\n";
        let f = reader_flows(listing);
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].l4.as_str(), f[0].sport, f[0].dport),
            ("TCP", 38856, 8009)
        );
        assert_eq!((f[0].master(), f[0].confidence.as_str()), ("AJP", "DPI"));
        assert_eq!(f[1].src, "bbbb::1".parse::<IpAddr>().unwrap());
        assert_eq!((f[1].master(), f[1].app()), ("HTTP", "Amazon"));
        assert_eq!(f[1].confidence, "Match by port");
    }
}
