//! # Suricata's `stats` event
//!
//! One EVE record, `{"timestamp":..,"event_type":"stats","stats":{..}}`, with Suricata's field names (Suricata 8's
//! EVE schema, `etc/schema.json`, validates it) and flowbundle's counters under them: the same counters the final
//! summary prints, so the two never disagree. `inspect` writes it at the end of the run, after every flow has been
//! finished (Suricata writes its last stats record at shutdown), and with `--stats-interval` also during the run:
//! those records carry the counters as they stand then (flows still open are not ended yet, so `flow.active` counts
//! them), and grow from one to the next up to the final one.
//!
//! | section | fields | from |
//! |---|---|---|
//! | `uptime` | seconds since the run started (wall clock) | the run |
//! | `capture` | `kernel_packets` (packets read; in live capture the kernel's count, drops included), `kernel_drops` (the kernel's drops in live capture; 0 for files), `errors` (inputs that could not be read to their end) | the reader |
//! | `decoder` | `pkts`, `bytes`, `invalid` (not decoded), `ipv4`, `ipv6`, `tcp`, `udp`, `icmpv4`, `icmpv6`, `sctp`, `avg_pkt_size` | the engine's decode counters (packets inspected; a reassembled datagram counts once) |
//! | `defrag` | `max_frags_reached`, `max_trackers_reached`, `memuse` | the pre-scheduling stage's defragmenter |
//! | `flow` | `total`, `tcp`, `udp`, `icmpv4`, `icmpv6`, `memcap` (flows not tracked: table full), `tcp_reuse`, `active` | the engine |
//! | `tcp` | `sessions`, `midstream_pickups`, `reassembly_gap`, `overlap_diff_data` | the engine and its reassembler |
//! | `detect` | `alert`; `engines` (Suricata's: `id` 0, `last_reload`, `rules_loaded`, `rules_failed`, `rules_skipped` of the rule set in use) with rules | the engine, the rule loads |
//! | `app_layer` | `flow.<proto>`: flows ended per application protocol, under Suricata's counter names (`http`, `tls`, `dns_udp`, `failed_tcp`, ...; as in EVE's `app_proto`, protocols Suricata has no parser for count as `failed`) | the engine |
//! | `threads` | per worker (`W#01`, ...), the sections above that a worker counts, as it left the run | each worker's own counters |
//!
//! `threads` is Suricata's per-thread form (`eve-log: types: - stats: threads: yes`), off by default as in Suricata;
//! Suricata 8's schema does not describe it, so a record with it validates only without it. Per worker the counters
//! are those of the packets the worker inspected; what finishing the flows at the end of the run adds (flows ended,
//! alerts raised then) is in the totals only. The totals do not depend on the number of workers or the scheduler.

use std::time::Duration;

use flowbundle_decode::prestage::PrestageStats;
use flowbundle_events::EngineStats;
use serde_json::{Value, json};

use crate::summary::RunInfo;

/// What one `stats` record reports.
pub struct StatsRecord<'a> {
    /// Time of the record (ns since the Unix epoch) and since the run started.
    pub now_ns: u64,
    pub uptime: Duration,
    /// The run's counters: the merged engine counters (after the flows were finished), the pre-scheduling stage's,
    /// the reader's.
    pub total: &'a EngineStats,
    pub prestage: Option<&'a PrestageStats>,
    pub info: &'a RunInfo,
    /// Each worker's counters, for the `threads` section; empty: no such section.
    pub workers: &'a [EngineStats],
}

/// Suricata's `decoder.event.*` counters that are not zero, nested as its names are dotted (`ipv6.frag_overlap`
/// under `ipv6`).
fn decoder_events(d: &flowbundle_decode::DecodeStats) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for &e in flowbundle_decode::DecodeEvent::ALL {
        let n = d.event_count(e);
        if n == 0 {
            continue;
        }
        match e.name().split_once('.') {
            Some((group, name)) => {
                let g = out
                    .entry(group.to_string())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(g) = g {
                    g.insert(name.to_string(), json!(n));
                }
            }
            None => {
                out.insert(e.name().to_string(), json!(n));
            }
        }
    }
    out
}

/// The sections a worker's own counters fill.
fn engine_sections(s: &EngineStats) -> serde_json::Map<String, Value> {
    let d = &s.decode;
    let l = &d.layers;
    let f = &s.flows_by_layer;
    let r = &s.reassembly;
    let mut m = serde_json::Map::new();
    m.insert(
        "decoder".into(),
        json!({
            "pkts": s.packets,
            "bytes": s.bytes,
            "invalid": d.failed(),
            "ipv4": l.ipv4,
            "ipv6": l.ipv6,
            "tcp": l.tcp,
            "udp": l.udp,
            "icmpv4": l.icmpv4,
            "icmpv6": l.icmpv6,
            "sctp": l.sctp,
            "avg_pkt_size": s.bytes.checked_div(s.packets).unwrap_or(0),
        }),
    );
    if let Some(Value::Object(dec)) = m.get_mut("decoder") {
        let events = decoder_events(d);
        if !events.is_empty() {
            dec.insert("event".into(), Value::Object(events));
        }
    }
    let ended = s.flows_timeout + s.flows_shutdown + s.flows_forced + s.flows_tcp_reuse;
    m.insert(
        "flow".into(),
        json!({
            "total": s.flows_created,
            "tcp": f.tcp,
            "udp": f.udp,
            "icmpv4": f.icmpv4,
            "icmpv6": f.icmpv6,
            "memcap": s.flow_memcap,
            "tcp_reuse": s.flows_tcp_reuse,
            "active": s.flows_created.saturating_sub(ended),
        }),
    );
    m.insert(
        "tcp".into(),
        json!({
            "sessions": f.tcp,
            "midstream_pickups": s.tcp_midstream,
            "reassembly_gap": r.gaps,
            "overlap_diff_data": r.overlap_differs,
        }),
    );
    m.insert(
        "detect".into(),
        json!({ "alert": s.alerts, "alert_queue_overflow": s.alert_queue_overflow }),
    );
    if !s.app_layer_flows.is_empty() {
        let flows: serde_json::Map<String, Value> = s
            .app_layer_flows
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect();
        m.insert("app_layer".into(), json!({ "flow": flows }));
    }
    m
}

/// The record as JSON. See the module documentation.
pub fn stats_event(r: &StatsRecord<'_>) -> Value {
    let mut stats = serde_json::Map::new();
    stats.insert("uptime".into(), json!(r.uptime.as_secs()));
    stats.insert(
        "capture".into(),
        json!({
            "kernel_packets": r.info.live.as_ref().map_or(r.info.packets_read, |c| c.kernel_packets),
            "kernel_drops": r.info.live.as_ref().map_or(r.info.capture_drops.unwrap_or(0), |c| c.kernel_drops),
            "errors": r.info.input_errors,
        }),
    );
    stats.extend(engine_sections(r.total));
    if let (Some(ri), Some(detect)) = (
        r.info.rules.as_ref(),
        stats.get_mut("detect").and_then(Value::as_object_mut),
    ) {
        let mut engine = json!({
            "id": 0,
            "rules_loaded": ri.loaded,
            "rules_failed": ri.errors,
            "rules_skipped": ri.skipped,
        });
        // When the set in use was loaded: a live run's (its start, or its last reload).
        if let (Some(x), Some(e)) = (r.info.reloads, engine.as_object_mut()) {
            let mut last = Vec::new();
            let _ = crate::time::write_timestamp(&mut last, x.last_ns);
            e.insert("last_reload".into(), json!(String::from_utf8_lossy(&last)));
        }
        detect.insert("engines".into(), json!([engine]));
    }
    if let Some(p) = r.prestage {
        let g = &p.defrag;
        stats.insert(
            "defrag".into(),
            json!({
                "max_frags_reached": g.drop_too_many_fragments,
                "max_trackers_reached": g.evicted_capacity,
                "memuse": g.bytes_held,
            }),
        );
    }
    if !r.workers.is_empty() {
        let threads: serde_json::Map<String, Value> = r
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("W#{:02}", i + 1), Value::Object(engine_sections(w))))
            .collect();
        stats.insert("threads".into(), Value::Object(threads));
    }
    let mut ts = Vec::new();
    let _ = crate::time::write_timestamp(&mut ts, r.now_ns);
    json!({
        "timestamp": String::from_utf8_lossy(&ts),
        "event_type": "stats",
        "stats": stats,
    })
}

/// The record as one EVE line (with its newline).
pub fn render_stats(buf: &mut Vec<u8>, r: &StatsRecord<'_>) {
    let _ = serde_json::to_writer(&mut *buf, &stats_event(r));
    buf.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::CaptureCounters;

    fn record_for(info: &RunInfo) -> Value {
        let total = EngineStats::default();
        stats_event(&StatsRecord {
            now_ns: 0,
            uptime: Duration::ZERO,
            total: &total,
            prestage: None,
            info,
            workers: &[],
        })
    }

    #[test]
    fn live_capture_reports_the_kernels_counters_as_suricata_does() {
        let info = RunInfo {
            packets_read: 90,
            capture_drops: Some(12),
            live: Some(CaptureCounters {
                kernel_packets: 100,
                kernel_drops: 10,
                queue_full: 2,
                ..CaptureCounters::default()
            }),
            ..RunInfo::default()
        };
        let v = record_for(&info);
        assert_eq!(v["stats"]["capture"]["kernel_packets"], 100);
        assert_eq!(v["stats"]["capture"]["kernel_drops"], 10);
        let files = RunInfo {
            packets_read: 90,
            ..RunInfo::default()
        };
        let v = record_for(&files);
        assert_eq!(v["stats"]["capture"]["kernel_packets"], 90);
        assert_eq!(v["stats"]["capture"]["kernel_drops"], 0);
    }
}
