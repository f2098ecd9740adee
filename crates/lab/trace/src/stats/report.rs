//! Turning a [`Collector`]'s counters into a [`TraceStats`], and a [`TraceStats`] into the human table.

use std::fmt::Write as _;

use flowbundle_decode::KeySide;

use super::{
    COST_POSITIONS, Collector, ConnectionDensity, Connections, CostStats, Encapsulation, FlowEntry,
    IpProtocolCount, LinkTypeCount, MaxRate, PositionCost, ProtocolMix, ReadInfo, SIZE_BUCKETS,
    SizeBucket, TimeStats, TopConnection, TraceStats, UniqueFlowRate, ip_proto_name,
};

pub(super) fn build(col: &Collector) -> TraceStats {
    let c = &col.c;
    let duration_ns = c.max_ts - c.min_ts;
    let duration_s = duration_ns as f64 / 1e9;
    let has = c.first_ts.is_some();
    let peak = col.rate.peak();
    let window_ns = col.rate.window_ns();
    let mbps = |bytes: u64, ns: u64| bytes as f64 * 8.0 / (ns as f64 / 1e9) / 1e6;

    let entries = col.flows.entries();
    let by_proto = |p: u8| entries.iter().filter(|e| e.key.proto == p).count() as u64;
    let (tcp, udp) = (by_proto(6), by_proto(17));
    let untracked = col.flows.untracked_packets();
    let connections = Connections {
        tcp,
        udp,
        tcp_udp: tcp + udp,
        other: entries.len() as u64 - tcp - udp,
        flows: entries.len() as u64,
        max_flows: col.flows.cap() as u64,
        untracked_packets: untracked,
        untracked_bytes: col.flows.untracked_bytes(),
        exact: untracked == 0,
    };

    let d = col.density.result();
    let n = c.ufr_samples;
    let mean = |sum: f64| (n > 0).then(|| sum / n as f64);

    let top = |metric: fn(&FlowEntry) -> u64| top_connections(col, metric);
    let cost = col.cost.as_ref().map(|m| {
        let ns = m.ns_per_unit().filter(|x| x.is_finite() && *x > 0.0);
        let per_packet = (c.packets > 0).then(|| c.cost_total as f64 / c.packets as f64);
        let by_position: Vec<PositionCost> = c
            .cost_by_position
            .iter()
            .enumerate()
            .filter(|&(_, &(packets, _))| packets > 0)
            .map(|(i, &(packets, total))| {
                let mean = total as f64 / packets as f64;
                PositionCost {
                    position: i as u32 + 1,
                    exact: i < COST_POSITIONS,
                    packets,
                    total,
                    mean,
                    mean_ns: ns.map(|k| mean * k),
                }
            })
            .collect();
        let (pos_packets, pos_cost) = by_position
            .iter()
            .fold((0, 0), |(p, t), b| (p + b.packets, t + b.total));
        CostStats {
            unit: m.unit().to_string(),
            total: c.cost_total,
            per_packet,
            ns_per_packet: per_packet.zip(ns).map(|(x, k)| x * k),
            top: top(|e| e.cost),
            by_position,
            unpositioned_packets: c.packets - pos_packets,
            unpositioned_cost: c.cost_total - pos_cost,
        }
    });

    let mut link_types: Vec<LinkTypeCount> = c
        .link_types
        .iter()
        .map(|&(lt, packets)| LinkTypeCount {
            link_type: Some(lt.0),
            name: lt.to_string(),
            packets,
        })
        .collect();
    if c.other_link_types > 0 {
        link_types.push(LinkTypeCount {
            link_type: None,
            name: "other".into(),
            packets: c.other_link_types,
        });
    }

    let ip = c.ipv4 + c.ipv6;
    TraceStats {
        source: col.source.clone(),
        format: col.format.clone(),
        link_types,
        packets: c.packets,
        captured_bytes: c.captured_bytes,
        wire_bytes: c.wire_bytes,
        time: TimeStats {
            first_ns: c.first_ts,
            last_ns: has.then_some(c.last_ts),
            min_ns: has.then_some(c.min_ts),
            max_ns: has.then_some(c.max_ts),
            duration_ns,
            duration_s,
            out_of_order: c.out_of_order,
        },
        avg_mbps: (duration_ns > 0).then(|| mbps(c.wire_bytes, duration_ns)),
        max_mbps: has.then(|| mbps(peak.bytes, window_ns)),
        max_rate: MaxRate {
            window_ns,
            bytes: peak.bytes,
            start_ns: has.then_some(peak.start_ns),
            shorter_than_window: has && duration_ns < window_ns,
            reordered: col.rate.reordered(),
            too_late: col.rate.too_late(),
        },
        connections,
        connection_density: ConnectionDensity {
            window: col.cfg.density_window,
            mean: d.mean,
            full_windows: d.full_windows,
            partial_packets: d.partial_packets,
            partial_flows: d.partial_flows,
            partial: d.partial,
        },
        unique_flow_rate: UniqueFlowRate {
            rate: mean(c.ufr_sum_ratio),
            avg_window: mean(c.ufr_sum_window as f64),
            avg_unique_flows: mean(c.ufr_sum_distinct as f64),
            samples: n,
            exact: untracked == 0,
        },
        top_by_packets: top(|e| e.packets),
        top_by_bytes: top(|e| e.bytes),
        packet_sizes: SIZE_BUCKETS
            .iter()
            .zip(c.sizes.iter().zip(&c.size_bytes))
            .map(|(&(min, max), (&packets, &bytes))| SizeBucket {
                min,
                max: (max != u32::MAX).then_some(max),
                packets,
                bytes,
            })
            .collect(),
        protocols: ProtocolMix {
            ipv4: c.ipv4,
            ipv6: c.ipv6,
            non_ip: c.packets - ip,
            tcp: c.tcp,
            udp: c.udp,
            icmp: c.icmp,
            icmpv6: c.icmpv6,
            sctp: c.sctp,
            ip_protocols: (0..=255u8)
                .filter(|&p| c.ip_protocols.0[usize::from(p)] > 0)
                .map(|p| IpProtocolCount {
                    proto: p,
                    name: proto_label(p),
                    packets: c.ip_protocols.0[usize::from(p)],
                    bytes: c.ip_protocol_bytes.0[usize::from(p)],
                })
                .collect(),
        },
        encapsulation: Encapsulation {
            vlan_tagged: c.vlan_tagged,
            multi_tagged: c.multi_tagged,
            mpls: c.mpls,
            pppoe: c.pppoe,
            tunnelled: c.tunnelled,
            fragmented: c.fragments,
            first_fragments: c.first_fragments,
            later_fragments: c.later_fragments,
            ipv4_fragments: c.ipv4_fragments,
            ipv6_fragments: c.ipv6_fragments,
        },
        decode: col.decode_stats.clone(),
        read: ReadInfo {
            truncated_records: col.truncated_records,
            clamped_lengths: col.clamped_lengths,
            skipped_blocks: col.skipped_blocks,
            error: col.read_error.clone(),
        },
        cost,
        memory_bytes: col.memory_bytes() as u64,
    }
}

fn proto_label(p: u8) -> String {
    ip_proto_name(p).map_or_else(|| format!("proto {p}"), str::to_string)
}

/// The `top` flows by `metric` (ties broken by the key, so the order is reproducible), largest first. Partial
/// selection: O(flows) rather than a full sort.
fn top_connections(col: &Collector, metric: fn(&FlowEntry) -> u64) -> Vec<TopConnection> {
    let k = col.cfg.top;
    let mut v: Vec<&FlowEntry> = col.flows.entries().iter().collect();
    if k == 0 || v.is_empty() {
        return Vec::new();
    }
    let order = |a: &&FlowEntry, b: &&FlowEntry| metric(b).cmp(&metric(a)).then(a.key.cmp(&b.key));
    if v.len() > k {
        v.select_nth_unstable_by(k - 1, order);
        v.truncate(k);
    }
    v.sort_unstable_by(order);
    let (packets, bytes) = (col.c.packets, col.c.wire_bytes);
    let share = |x: u64, of: u64| if of == 0 { 0.0 } else { x as f64 / of as f64 };
    let with_cost = col.cost.is_some();
    v.into_iter()
        .map(|e| {
            let (a, b, ap, bp) = e.key.endpoints(KeySide::Forward);
            TopConnection {
                proto: e.key.proto,
                proto_name: proto_label(e.key.proto),
                a: a.to_string(),
                a_port: ap,
                b: b.to_string(),
                b_port: bp,
                packets: e.packets,
                bytes: e.bytes,
                packet_share: share(e.packets, packets),
                byte_share: share(e.bytes, bytes),
                first_ns: e.first_ts_ns,
                last_ns: e.last_ts_ns,
                cost: with_cost.then_some(e.cost),
            }
        })
        .collect()
}

/// `1234567` → `1,234,567`.
pub(super) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn endpoint(addr: &str, port: u16, proto: u8) -> String {
    let a = if addr.contains(':') {
        format!("[{addr}]")
    } else {
        addr.to_string()
    };
    if matches!(proto, 6 | 17 | 132) {
        format!("{a}:{port}")
    } else {
        a
    }
}

impl TraceStats {
    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail; keep a readable message if it ever does.
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise the statistics: {e}\"}}"))
    }

    /// The report as a human-readable table.
    pub fn render_table(&self) -> String {
        let mut o = String::new();
        let w = &mut o;
        let row = |w: &mut String, k: &str, v: String| {
            let _ = writeln!(w, "{k:<22} {v}");
        };
        if let Some(s) = &self.source {
            let fmt = self.format.as_deref().unwrap_or("");
            row(w, "capture", format!("{s} ({fmt})"));
        }
        let lts: Vec<String> = self
            .link_types
            .iter()
            .map(|l| format!("{} {}", l.name, thousands(l.packets)))
            .collect();
        if !lts.is_empty() {
            row(w, "link types", lts.join(", "));
        }
        row(
            w,
            "packets",
            format!(
                "{}   ({} captured bytes, {} wire bytes)",
                thousands(self.packets),
                thousands(self.captured_bytes),
                thousands(self.wire_bytes)
            ),
        );
        let mut dur = format!("{:.6} s", self.time.duration_s);
        if self.time.out_of_order > 0 {
            let _ = write!(
                dur,
                "   ({} packets out of time order)",
                thousands(self.time.out_of_order)
            );
        }
        row(w, "duration", dur);
        row(w, "average Mb/s", opt(self.avg_mbps, 3));
        let mr = &self.max_rate;
        let mut max = format!(
            "{}   (best {} µs window",
            opt(self.max_mbps, 3),
            mr.window_ns / 1000
        );
        if let (Some(start), Some(min)) = (mr.start_ns, self.time.min_ns) {
            let _ = write!(
                max,
                " from +{:.6} s",
                start.saturating_sub(min) as f64 / 1e9
            );
        }
        max.push(')');
        if mr.shorter_than_window {
            max.push_str(", capture shorter than the window");
        }
        row(w, "maximum Mb/s", max);
        let cn = &self.connections;
        let mut conns = format!(
            "{} TCP + {} UDP = {}   ({} other flows)",
            thousands(cn.tcp),
            thousands(cn.udp),
            thousands(cn.tcp_udp),
            thousands(cn.other)
        );
        if !cn.exact {
            let _ = write!(
                conns,
                "   at least: flow table full at {}, {} packets untracked",
                thousands(cn.max_flows),
                thousands(cn.untracked_packets)
            );
        }
        row(w, "connections", conns);
        let cd = &self.connection_density;
        let density = match (cd.mean, cd.partial) {
            (None, _) => "-".to_string(),
            (Some(m), true) => format!(
                "{m:.2}   (only {} IP packets: one partial window)",
                cd.partial_packets
            ),
            (Some(m), false) => format!(
                "{m:.2} per {} packets   ({} windows; last {} packets left out)",
                cd.window,
                thousands(cd.full_windows),
                cd.partial_packets
            ),
        };
        row(w, "connection density", density);
        let u = &self.unique_flow_rate;
        row(
            w,
            "unique flow rate",
            format!(
                "{}   (mean window {} packets holding {} flows, {} samples{})",
                opt(u.rate, 4),
                opt(u.avg_window, 1),
                opt(u.avg_unique_flows, 1),
                thousands(u.samples),
                if u.exact { "" } else { "; approximate" }
            ),
        );
        let p = &self.protocols;
        row(
            w,
            "L3",
            format!(
                "IPv4 {}, IPv6 {}, not IP {}",
                thousands(p.ipv4),
                thousands(p.ipv6),
                thousands(p.non_ip)
            ),
        );
        let l4: Vec<String> = p
            .ip_protocols
            .iter()
            .map(|x| format!("{} {}", x.name, thousands(x.packets)))
            .collect();
        row(w, "L4", l4.join(", "));
        let e = &self.encapsulation;
        row(
            w,
            "encapsulation",
            format!(
                "VLAN-tagged {} (QinQ {}), MPLS {}, PPPoE {}, tunnelled {}",
                thousands(e.vlan_tagged),
                thousands(e.multi_tagged),
                thousands(e.mpls),
                thousands(e.pppoe),
                thousands(e.tunnelled)
            ),
        );
        row(
            w,
            "fragments",
            format!(
                "{}   (first {}, later {}; IPv4 {}, IPv6 {})",
                thousands(e.fragmented),
                thousands(e.first_fragments),
                thousands(e.later_fragments),
                thousands(e.ipv4_fragments),
                thousands(e.ipv6_fragments)
            ),
        );
        let mut outcomes = format!("decoded {}", thousands(self.decode.decoded));
        for (o, n) in self.decode.failures() {
            let _ = write!(outcomes, ", {o} {}", thousands(n));
        }
        row(w, "decode", outcomes);
        if let Some(err) = &self.read.error {
            row(w, "read error", err.clone());
        }
        if self.read.truncated_records > 0 {
            row(w, "read", "last record cut by the end of the file".into());
        }
        if self.read.clamped_lengths > 0 {
            row(
                w,
                "read",
                format!(
                    "{} packets with an impossible original length, counted at their captured length",
                    thousands(self.read.clamped_lengths)
                ),
            );
        }

        let _ = writeln!(w, "\npacket sizes (wire bytes)");
        let most = self
            .packet_sizes
            .iter()
            .map(|b| b.packets)
            .max()
            .unwrap_or(0);
        for b in &self.packet_sizes {
            let label = match b.max {
                Some(m) if m == b.min => format!("{m}"),
                Some(m) => format!("{}-{m}", b.min),
                None => format!("{}+", b.min),
            };
            let bar = if most == 0 {
                0
            } else {
                (b.packets * 40).div_ceil(most) as usize
            };
            let share = if self.packets == 0 {
                0.0
            } else {
                b.packets as f64 / self.packets as f64
            };
            let _ = writeln!(
                w,
                "  {label:>10} {:>12} {:>8} {}",
                thousands(b.packets),
                pct(share),
                "#".repeat(bar)
            );
        }
        top_table(w, "top connections by packets", &self.top_by_packets);
        top_table(w, "top connections by wire bytes", &self.top_by_bytes);
        if let Some(cost) = &self.cost {
            cost_tables(w, cost);
        }
        o
    }
}

/// The `--cost` part of the table: totals, the top connections by cost, and cost by position in flow (positions
/// 1 to 16 one by one, then 17 to [`COST_POSITIONS`] and the rest summed: the JSON has every position).
fn cost_tables(w: &mut String, cost: &CostStats) {
    let ns = cost
        .ns_per_packet
        .map_or(String::new(), |x| format!(" ({x:.1} ns)"));
    let _ = writeln!(
        w,
        "\ninspection cost: {} {} in all, {} {} per packet{ns}",
        thousands(cost.total),
        cost.unit,
        opt(cost.per_packet, 1),
        cost.unit,
    );
    if !cost.top.is_empty() {
        let _ = writeln!(w, "\ntop connections by cost");
        let _ = writeln!(
            w,
            "  {:>2}  {:<56} {:>12} {:>16} {:>8} {:>12}",
            "#",
            "connection",
            "packets",
            cost.unit.as_str(),
            "share",
            "per packet"
        );
        for (i, t) in cost.top.iter().enumerate() {
            let c = t.cost.unwrap_or(0);
            let share = if cost.total == 0 {
                0.0
            } else {
                c as f64 / cost.total as f64
            };
            let _ = writeln!(
                w,
                "  {:>2}  {:<56} {:>12} {:>16} {:>8} {:>12.1}",
                i + 1,
                connection_label(t),
                thousands(t.packets),
                thousands(c),
                pct(share),
                c as f64 / t.packets.max(1) as f64
            );
        }
    }
    if cost.by_position.is_empty() {
        return;
    }
    let _ = writeln!(w, "\ncost by position in flow");
    let _ = writeln!(
        w,
        "  {:>9} {:>12} {:>16} {:>12} {:>10}",
        "position",
        "packets",
        cost.unit.as_str(),
        "per packet",
        "ns"
    );
    let mut line = |label: String, packets: u64, total: u64, ns: Option<f64>| {
        let mean = total as f64 / packets.max(1) as f64;
        let _ = writeln!(
            w,
            "  {label:>9} {:>12} {:>16} {mean:>12.1} {:>10}",
            thousands(packets),
            thousands(total),
            opt(ns.map(|k| mean * k), 1)
        );
    };
    let ns_per_unit = cost
        .ns_per_packet
        .zip(cost.per_packet)
        .and_then(|(n, c)| (c > 0.0).then(|| n / c));
    let (mut mid_p, mut mid_c) = (0, 0);
    for b in &cost.by_position {
        if b.position <= 16 {
            line(b.position.to_string(), b.packets, b.total, ns_per_unit);
        } else if b.exact {
            mid_p += b.packets;
            mid_c += b.total;
        }
    }
    if mid_p > 0 {
        line(format!("17-{COST_POSITIONS}"), mid_p, mid_c, ns_per_unit);
    }
    if let Some(b) = cost.by_position.iter().find(|b| !b.exact) {
        line(format!("{}+", b.position), b.packets, b.total, ns_per_unit);
    }
    if cost.unpositioned_packets > 0 {
        line(
            "no flow".into(),
            cost.unpositioned_packets,
            cost.unpositioned_cost,
            ns_per_unit,
        );
    }
}

fn connection_label(t: &TopConnection) -> String {
    format!(
        "{} {} <-> {}",
        t.proto_name,
        endpoint(&t.a, t.a_port, t.proto),
        endpoint(&t.b, t.b_port, t.proto)
    )
}

fn top_table(w: &mut String, title: &str, rows: &[TopConnection]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(w, "\n{title}");
    let _ = writeln!(
        w,
        "  {:>2}  {:<56} {:>12} {:>8} {:>15} {:>8}",
        "#", "connection", "packets", "share", "wire bytes", "share"
    );
    for (i, t) in rows.iter().enumerate() {
        let conn = format!(
            "{} {} <-> {}",
            t.proto_name,
            endpoint(&t.a, t.a_port, t.proto),
            endpoint(&t.b, t.b_port, t.proto)
        );
        let _ = writeln!(
            w,
            "  {:>2}  {conn:<56} {:>12} {:>8} {:>15} {:>8}",
            i + 1,
            thousands(t.packets),
            pct(t.packet_share),
            thousands(t.bytes),
            pct(t.byte_share)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn endpoints() {
        assert_eq!(endpoint("10.0.0.1", 80, 6), "10.0.0.1:80");
        assert_eq!(endpoint("::1", 53, 17), "[::1]:53");
        assert_eq!(endpoint("10.0.0.1", 0, 1), "10.0.0.1");
    }
}
