//! The human summary of an `inspect` run: a protocol table like ndpiReader's (protocol, flows, packets, bytes) and
//! every counter that says where packets went or what a cap cut (decode outcomes, defragmentation drops,
//! `flow.memcap`, `tcp.reassembly_gap`, parser cuts, rules loaded and skipped, alerts per rule), then the cost
//! figures (average cycles per packet, by position in flow, per stage, the ten most expensive connections).

use std::fmt::{self, Write as _};
use std::time::Duration;

use flowbundle_decode::prestage::PrestageStats;
use flowbundle_events::Finished;

use crate::eve::proto_name;

/// How a rule set loaded.
#[derive(Debug, Default, Clone)]
pub struct RulesInfo {
    pub loaded: usize,
    pub skipped: usize,
    pub errors: usize,
    /// Skipped rules per reason, most frequent first.
    pub skip_reasons: Vec<(String, usize)>,
    /// Lines of the classification and threshold files that were not applied (malformed, or not UTF-8), each
    /// reported on standard error as it was read.
    pub config_lines_skipped: usize,
    /// Lines of the dataset files that were not loaded (malformed, too long, past a set's memcap), each reported
    /// on standard error as it was read.
    pub dataset_lines_skipped: usize,
}

/// A live run's rule reloads (SIGHUP, SIGUSR2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReloadInfo {
    /// New sets made the engine's.
    pub applied: u64,
    /// Signals after which the files read the same as the sets in use (nothing to reload).
    pub unchanged: u64,
    /// Reloads that failed (a file unreadable, no rule loaded): the sets in use were kept.
    pub failed: u64,
    /// When the sets in use were loaded (ns since the Unix epoch): the start, or the last reload applied.
    pub last_ns: u64,
}

/// What the summary reports besides the engine's own figures.
#[derive(Debug, Default, Clone)]
pub struct RunInfo {
    pub inputs: Vec<String>,
    /// Packets read from the inputs (before defragmentation).
    pub packets_read: u64,
    /// Packets the capture dropped (live capture: the kernel's count), `None` when reading files.
    pub capture_drops: Option<u64>,
    /// Inputs that could not be opened, or not read to their end.
    pub input_errors: u64,
    /// Records cut by the end of their file (at most one per input).
    pub truncated_records: u64,
    /// Packets whose recorded original length was impossible, read as their captured length.
    pub clamped_lengths: u64,
    pub elapsed: Option<Duration>,
    /// Capture time of the earliest and of the latest packet read.
    pub capture_span: Option<(u64, u64)>,
    /// Workers and scheduler, for a parallel run.
    pub threads: Option<(usize, String)>,
    /// Rules loaded, skipped (with reasons) and in error.
    pub rules: Option<RulesInfo>,
    /// Signatures loaded and rejected.
    pub signatures: Option<(usize, usize)>,
    /// Rule messages by signature id, for the hit table.
    pub rule_names: Vec<(u32, String)>,
    /// Rule reloads of a live run.
    pub reloads: Option<ReloadInfo>,
    /// What the EVE output did, when it is one of Suricata's kinds (a file appended to, a socket, Redis).
    pub eve_output: Option<crate::OutputCounters>,
    /// Live capture: the capture's own counters (`None` when reading files).
    pub live: Option<CaptureCounters>,
    /// Inline mode: what was forwarded and dropped, and the receive-to-send latency.
    pub inline: Option<flowbundle_events::InlineReport>,
    /// The link types of the inputs the decoder does not follow, by name (`DLT_USER0 (147)`), to name them where
    /// their packets are counted.
    pub link_types: Vec<String>,
    /// Show the cost block (cycles per packet, by stage and position in flow, the costliest connections).
    pub cost: bool,
}

/// The counters of a live capture, as the summary and the EVE `stats` record report them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureCounters {
    /// How the interface was read, e.g. "afpacket on eth0, 2 rings, fanout hash".
    pub method: String,
    /// Frames the kernel received for the capture, dropped ones included (Suricata's `capture.kernel_packets`).
    pub kernel_packets: u64,
    /// Frames the kernel dropped for want of ring space (`capture.kernel_drops`).
    pub kernel_drops: u64,
    /// Times a ring froze with every block in user space.
    pub kernel_freeze_q: u64,
    /// Frames the reader dropped because every packet buffer was in use.
    pub queue_full: u64,
    /// Frames the capture cut to its snaplen.
    pub snaplen_cut: u64,
    /// Frames whose VLAN tag the device had stripped and the reader put back.
    pub vlan_restored: u64,
    /// Frames whose ring header was unreadable (skipped).
    pub malformed: u64,
    /// Frames longer than their ring slot (TPACKET_V2), fetched whole from the socket.
    pub whole_copies: u64,
}

/// The summary; `Display` renders it.
pub struct Summary<'a> {
    pub finished: &'a Finished,
    pub prestage: Option<&'a PrestageStats>,
    pub info: &'a RunInfo,
}

fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < U.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", U[i])
    }
}

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fin = self.finished;
        let s = &fin.stats;
        let info = self.info;
        writeln!(f, "flowbundle inspect summary")?;
        // A long list (a directory's worth of captures) is shortened to its first few and a count.
        const LISTED: usize = 5;
        match info.inputs.len() {
            0 => {}
            n if n <= LISTED + 1 => writeln!(f, "  inputs: {}", info.inputs.join(", "))?,
            n => writeln!(
                f,
                "  inputs: {}, ... and {} more ({n} in all)",
                info.inputs[..LISTED].join(", "),
                n - LISTED
            )?,
        }
        if let Some((first, last)) = info.capture_span {
            writeln!(
                f,
                "  capture: {} to {} ({:.3} s of capture time)",
                crate::time::timestamp(first),
                crate::time::timestamp(last),
                last.saturating_sub(first) as f64 / 1e9
            )?;
        }
        if let Some((n, sched)) = &info.threads {
            writeln!(f, "  workers: {n} ({sched} scheduler)")?;
        }
        let flows = s.flows_created;
        write!(
            f,
            "  traffic: {} packets read, {} inspected, {} on the wire, {} flows (peak {} tracked at once, cap {} \
             for all workers together)",
            info.packets_read,
            s.packets,
            human_bytes(s.bytes),
            flows,
            fin.peak_flows,
            fin.max_flows
        )?;
        if let Some(el) = info.elapsed {
            let secs = el.as_secs_f64().max(1e-9);
            write!(
                f,
                "\n  processing time: {:.3} s, {:.3} Mpps, {:.3} Gbit/s",
                secs,
                info.packets_read as f64 / secs / 1e6,
                s.bytes as f64 * 8.0 / secs / 1e9
            )?;
        }
        writeln!(f)?;
        if info.truncated_records > 0 || info.clamped_lengths > 0 {
            writeln!(
                f,
                "  read: {} records cut by the end of their file, {} impossible original lengths read as the \
                 captured length",
                info.truncated_records, info.clamped_lengths
            )?;
        }

        // Protocol table, like ndpiReader's "Detected protocols".
        writeln!(f, "\nDetected protocols:")?;
        writeln!(
            f,
            "  {:<28} {:>10} {:>12} {:>16}",
            "protocol", "flows", "packets", "bytes"
        )?;
        let mut rows: Vec<_> = s.protocols.iter().collect();
        rows.sort_by(|a, b| b.1.packets.cmp(&a.1.packets).then(a.0.cmp(b.0)));
        for (name, c) in rows {
            writeln!(
                f,
                "  {:<28} {:>10} {:>12} {:>16}",
                name, c.flows, c.packets, c.bytes
            )?;
        }
        let ev: Vec<String> = s
            .by_evidence
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(f, "  identified by: {}", ev.join(", "))?;
        // Flow risks, like ndpiReader's "Risk stats", by nDPI's risk names, most flows first.
        let mut risks: Vec<_> = s.risks.iter().collect();
        risks.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let risks: Vec<String> = risks.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(
            f,
            "  flows with risks: {}",
            if risks.is_empty() {
                "none".to_string()
            } else {
                risks.join(", ")
            }
        )?;

        writeln!(f, "\nCounters:")?;
        let d = &s.decode;
        // Frames without IP (ARP, LLDP, ...) are not IP, not decode failures; an unsupported link type is named.
        let no_ip = |o: &flowbundle_decode::Outcome| matches!(o, flowbundle_decode::Outcome::Unsupported(u) if u.carries_no_ip());
        let fails: Vec<String> = d
            .failures()
            .iter()
            .filter(|(o, _)| !no_ip(o))
            .map(|(o, n)| match o {
                flowbundle_decode::Outcome::Unsupported(
                    flowbundle_decode::Unsupported::LinkType,
                ) if !info.link_types.is_empty() => {
                    format!("unsupported link type {} {n}", info.link_types.join(", "))
                }
                o => format!("{o} {n}"),
            })
            .collect();
        let not_decoded = d.failed() - d.not_ip();
        writeln!(
            f,
            "  decode: {} decoded, {} failed{}{}; {} not IP",
            d.decoded,
            not_decoded,
            if fails.is_empty() { "" } else { ": " },
            fails.join(", "),
            s.not_ip + d.not_ip()
        )?;
        if let Some(p) = self.prestage {
            let g = &p.defrag;
            writeln!(
                f,
                "  defrag: {} fragments, {} datagrams reassembled, {} overlaps ({} inconsistent), dropped: \
                 truncated {}, bad length {}, too large {}, conflicting end {}, inconsistent {}, too many {}, \
                 memcap {}; timed out {}, evicted {}, {} incomplete at the end",
                g.fragments,
                g.reassembled,
                g.overlaps,
                g.inconsistent_overlaps,
                g.drop_truncated,
                g.drop_bad_length,
                g.drop_too_large,
                g.drop_conflicting_end,
                g.drop_inconsistent_overlap,
                g.drop_too_many_fragments,
                g.drop_memcap,
                g.timed_out,
                g.evicted_capacity + g.evicted_memcap,
                g.in_progress
            )?;
        }
        if s.fragments_unreassembled > 0 {
            writeln!(
                f,
                "  fragments not reassembled: {}",
                s.fragments_unreassembled
            )?;
        }
        writeln!(
            f,
            "  flows: {} created, ended by timeout {}, shutdown {}, tcp_reuse {}, forced {}; flow.memcap {} \
             ({} packets untracked)",
            s.flows_created,
            s.flows_timeout,
            s.flows_shutdown,
            s.flows_tcp_reuse,
            s.flows_forced,
            s.flow_memcap,
            s.untracked_packets
        )?;
        // What was not inspected in full, by cause (the same counters as above and as the EVE stats record).
        let defrag_dropped = self.prestage.map_or(0, |p| {
            let g = &p.defrag;
            g.drop_truncated
                + g.drop_bad_length
                + g.drop_too_large
                + g.drop_conflicting_end
                + g.drop_inconsistent_overlap
                + g.drop_too_many_fragments
                + g.drop_memcap
                + g.timed_out
                + g.evicted_capacity
                + g.evicted_memcap
        });
        writeln!(
            f,
            "  drops by cause: capture {}, input errors {}, not decoded {}, fragments dropped by \
             defragmentation {}, packets untracked under flow.memcap {}, segments unbuffered under the reassembly \
             memcap {}",
            info.capture_drops
                .map_or_else(|| "none (files)".to_string(), |n| n.to_string()),
            info.input_errors,
            not_decoded,
            defrag_dropped,
            s.untracked_packets,
            s.reassembly.memcap_skips
        )?;
        if let Some(c) = &info.live {
            writeln!(
                f,
                "  capture: {}; capture.kernel_packets {}, capture.kernel_drops {}, ring freezes {}; dropped with \
                 every packet buffer in use {}; cut to the snaplen {}; unreadable ring frames {}; VLAN tags restored {}; \
                 longer than their ring slot, fetched whole {}",
                c.method,
                c.kernel_packets,
                c.kernel_drops,
                c.kernel_freeze_q,
                c.queue_full,
                c.snaplen_cut,
                c.malformed,
                c.vlan_restored,
                c.whole_copies
            )?;
        }
        if let Some(o) = &info.eve_output {
            writeln!(
                f,
                "  eve output ({}): {} events written, {} dropped with the queue full, {} lost to a failed \
                 receiver; {} errors, {} reconnects, {} reopens",
                o.target, o.written, o.dropped, o.lost, o.errors, o.reconnects, o.reopens
            )?;
        }
        if let Some(i) = &info.inline {
            let us = |ns: u64| ns as f64 / 1000.0;
            writeln!(
                f,
                "  inline: {} forwarded, {} dropped (dropped flows), {} fragments forwarded ahead of their datagram, \
                 {} forwarded uninspected with every buffer in use (fail-open, ahead of their flows' queued \
                 packets), {} refused by the egress, {} not forwardable (cut by the snaplen); receive-to-send \
                 latency p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} packets)",
                i.forwarded,
                i.dropped,
                i.fragments,
                i.fail_open,
                i.send_errors,
                i.not_forwardable,
                us(i.latency_p50_ns),
                us(i.latency_p99_ns),
                us(i.latency_max_ns),
                i.latency_samples
            )?;
        }
        let r = &s.reassembly;
        writeln!(
            f,
            "  tcp: {} midstream pickups; tcp.reassembly_gap {} ({} bytes); {} segments buffered out of order \
             (peak {} bytes); {} retransmitted bytes; {} overlap bytes, {} differing; skips: limit {}, memcap {}, \
             timeout {}; {} segments after close",
            s.tcp_midstream,
            r.gaps,
            r.gap_bytes,
            r.segments_buffered,
            fin.peak_reassembly_bytes,
            r.retransmitted_bytes,
            r.overlap_bytes,
            r.overlap_differs,
            r.limit_skips,
            r.memcap_skips,
            r.timeout_skips,
            r.after_close
        )?;
        let p = &s.parsers;
        writeln!(
            f,
            "  parsers: {} events; {} bytes cut by caps, {} decompression bytes cut, {} malformed, {} gave up, {} state entries cut",
            s.app_events, p.bytes_cut, p.decompress_cut, p.malformed, p.gave_up, p.state_cut
        )?;
        let (added, replaced, matched) = fin.expectations;
        if added > 0 {
            writeln!(
                f,
                "  ftp expectations: {added} announced, {matched} matched, {replaced} replaced at the cap"
            )?;
        }
        if let Some((loaded, rejected)) = info.signatures {
            writeln!(f, "  signatures: {loaded} loaded, {rejected} rejected")?;
        }
        if let Some(ri) = &info.rules {
            writeln!(
                f,
                "  rules: {} loaded, {} skipped, {} errors; {} alerts",
                ri.loaded, ri.skipped, ri.errors, s.alerts
            )?;
            for (why, n) in ri.skip_reasons.iter().take(10) {
                writeln!(f, "    skipped {n:>5}: {why}")?;
            }
            if ri.config_lines_skipped > 0 {
                writeln!(
                    f,
                    "  configuration lines not applied: {} (classification and threshold files)",
                    ri.config_lines_skipped
                )?;
            }
            if ri.dataset_lines_skipped > 0 {
                writeln!(
                    f,
                    "  dataset lines not loaded: {}",
                    ri.dataset_lines_skipped
                )?;
            }
            if let Some(r) = info
                .reloads
                .filter(|r| r.applied + r.unchanged + r.failed > 0)
            {
                writeln!(
                    f,
                    "  rule reloads: {} applied, {} unchanged, {} failed (the sets in use kept); the counts above are \
                     the last set's",
                    r.applied, r.unchanged, r.failed
                )?;
            }
            if !fin.rule_hits.is_empty() {
                writeln!(f, "  alerts per rule (sid: hits):")?;
                for (sid, n) in fin.rule_hits.iter().take(20) {
                    let name = info
                        .rule_names
                        .iter()
                        .find(|(s, _)| s == sid)
                        .map_or("", |(_, m)| m.as_str());
                    writeln!(f, "    {sid:>10}: {n:>8}  {name}")?;
                }
                if fin.rule_hits.len() > 20 {
                    writeln!(f, "    ... {} more rules fired", fin.rule_hits.len() - 20)?;
                }
            }
        }

        if !info.cost {
            return Ok(());
        }
        let c = &fin.cost;
        writeln!(f, "\nCost:")?;
        writeln!(
            f,
            "  {:.0} cycles per packet ({:.0} ns at {:.2} GHz) over {} packets",
            c.cycles_per_packet(),
            c.ns_per_packet(),
            c.hz() / 1e9,
            c.packets
        )?;
        let st = &c.stages;
        if st.samples > 0 {
            let n = st.samples as f64;
            writeln!(
                f,
                "  stages (cycles per packet, {} sampled): decode {:.0}, flow lookup {:.0}, reassembly {:.0}, \
                 detection {:.0}",
                st.samples,
                st.decode as f64 / n,
                st.lookup as f64 / n,
                st.reassembly as f64 / n,
                st.detection as f64 / n
            )?;
        }
        let mut line = String::new();
        for (i, (n, cy)) in c.by_position.iter().enumerate().take(10) {
            if *n > 0 {
                let _ = write!(line, " #{}: {:.0}", i + 1, *cy as f64 / *n as f64);
            }
        }
        writeln!(f, "  cycles by position in flow:{line}")?;
        if !c.top.is_empty() {
            writeln!(f, "  most expensive connections (cycles):")?;
            for t in &c.top {
                let (a, b, ap, bp) = t.key.endpoints(flowbundle_decode::KeySide::Forward);
                writeln!(
                    f,
                    "    {:>14}  {} {a}:{ap} <-> {b}:{bp}  {}  {} pkts {} bytes",
                    t.cycles,
                    proto_name(t.key.proto),
                    t.app.name(),
                    t.packets,
                    t.bytes
                )?;
            }
        }
        Ok(())
    }
}
