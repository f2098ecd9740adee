//! The result schema shared by measured (`flowbundle bench`) and simulated (`flowbundle simulate`) runs, and the
//! functions that compute it from a run's per-packet records.
//!
//! # JSON schema `flowbundle-bench/1`
//!
//! One [`BenchReport`] per invocation, written with `serde_json`. Times are integer or float **nanoseconds**, rates
//! **packets per second** (`pps`) and **megabits per second** of wire bytes (`mbps`, 10^6 bit/s). Stability rule:
//! fields are only ever *added* (readers must ignore unknown fields; every field added after `/1` is optional with a
//! default), and a change of meaning bumps [`SCHEMA`]. A simulator writes the same document with
//! `"source": "simulated"` so both can be drawn together ([`crate::plot`]).
//!
//! ```text
//! BenchReport {
//!   schema: "flowbundle-bench/1", source: "measured" | "simulated", tool: "flowbundle bench 0.1.0",
//!   trace: TraceInfo { name, packets, flows, wire_bytes, duration_ns, avg_mbps, max_mbps_1ms, avg_pps,
//!                      connection_density, prep: PrepStats | null },
//!   config: RunConfigInfo { mode: "raw" | "scaled", workload, workload_detail, reps, max_outstanding,
//!                           tolerance, clobber_bytes, pinning, cores, ph_late_claim, fbq_table, capacity },
//!   cache_counters: CacheSupport { supported, reason },
//!   runs: [RunMetrics {
//!     scheduler, threads,
//!     raw: Throughput { pps, pps_min, pps_max, mbps, elapsed_ns, samples_pps: [..], full_waits },
//!     scaled: ScaledSearch | null { max_pps, max_mbps, tolerance, found, probes: [Probe { pps, attempts, drop_free, dropped }] },
//!     latency: Latency | null { rate_pps, packets, dropped, mean_ns, p50_ns, p99_ns, max_ns },
//!     order: Order { from: "raw" | "latency", packets, reordered_packets, reordered_fraction, flows,
//!                    flows_reordered, ipdv_mean_abs_ns, ipdv_p99_abs_ns, ipdv_max_abs_ns, pdv_p99_ns, pdv_max_ns,
//!                    top_flows: [FlowOrder { flow, packets, reordered, ipdv_mean_abs_ns, ipdv_max_abs_ns }] },
//!     balance: Balance { workers: [WorkerBalance { packets, busy_ns, idle_ns, parks, handoffs }],
//!                        packets_max_over_mean, busy_max_over_mean, handoffs, bundle_joins, collisions,
//!                        migrations, affinity_hits, steals, dropped },
//!     life: Life { from, dispatch_ns, queue_ns, service_ns, stages: [Stage { name, mean_ns }] },
//!     cache: CacheMisses { supported, reason, l1d_per_packet, llc_per_packet },
//!   }]
//! }
//! ```
//!
//! Definitions (ANCS'10 §4.1 unless said otherwise):
//! * **raw throughput**: packets processed / the time from the start barrier to the last worker's last packet
//!   ("the largest cycle count recorded by a thread"); `pps` is the median over repetitions.
//! * **scaled throughput**: the highest average rate, after rescaling the capture's timestamps, at which no arrival
//!   was dropped with `max_outstanding` packets in the system (see [`crate::search`]).
//! * **latency**: from enqueue to the end of processing, at 80% of the maximum scaled rate.
//! * **reordering**: a packet is reordered when it finishes processing before an earlier-arrived packet of its flow
//!   (the end, not the start: with `ph`'s late claim a worker starts a packet, decodes it, and may then lose its
//!   connection to another worker, which processes it later; a bundle's packets are processed one at a time, so
//!   the order of their ends is the order in which the flow's state saw them).
//! * **IPDV** (RFC 3393): for consecutive packets of a flow, the latency of one minus the latency of the previous;
//!   summarised by its absolute value. **PDV** (RFC 5481): a packet's latency minus its flow's minimum latency.
//! * **life of a packet** (L7-filter ANCS'08 Figures 7–8): mean time in dispatch (arrival to enqueue), waiting in
//!   queues (enqueue to start), and in service (start to end), the last split into the workload's stages.

use crate::prep::NO_FLOW;
use flowbundle_scheduler::SchedStats;
use flowbundle_worker::{Records, RunReport, Status};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The schema name and version written in every report.
pub const SCHEMA: &str = "flowbundle-bench/1";

/// Raw or scaled (scaled includes the raw runs, which bound its search).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchMode {
    Raw,
    Scaled,
}

impl BenchMode {
    pub fn name(self) -> &'static str {
        match self {
            BenchMode::Raw => "raw",
            BenchMode::Scaled => "scaled",
        }
    }
}

/// Who produced a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Measured,
    Simulated,
}

/// One invocation's results. See the module documentation for the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema: String,
    pub source: Source,
    /// Program and version that wrote it.
    pub tool: String,
    pub trace: TraceInfo,
    pub config: RunConfigInfo,
    /// Whether hardware cache counters could be read on this machine.
    pub cache_counters: CacheSupport,
    pub runs: Vec<RunMetrics>,
}

impl BenchReport {
    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail; NaN and infinities become `null`.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Read a report written by [`BenchReport::to_json`] (by the bench or the simulator).
    pub fn from_json(text: &str) -> Result<BenchReport, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// What was replayed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceInfo {
    pub name: String,
    pub packets: u64,
    pub flows: u64,
    pub wire_bytes: u64,
    pub duration_ns: u64,
    pub avg_pps: f64,
    pub avg_mbps: f64,
    /// Highest rate sustained over one millisecond (the paper's "maximum bandwidth").
    pub max_mbps_1ms: f64,
    /// Unique flows per 100 consecutive packets, averaged over windows (Table 1's "CD").
    pub connection_density: f64,
    pub prep: Option<crate::prep::PrepStats>,
}

/// How the runs were made.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunConfigInfo {
    pub mode: String,
    pub workload: String,
    /// Parameters of the workload (cost model, cost file, engine configuration).
    pub workload_detail: String,
    pub reps: usize,
    pub max_outstanding: usize,
    /// Relative tolerance of the scaled-rate search.
    pub tolerance: f64,
    pub clobber_bytes: usize,
    /// "pinned" or why threads floated (per thread count, the first run's answer).
    pub pinning: Vec<String>,
    pub cores: usize,
    pub ph_late_claim: bool,
    pub fbq_table: usize,
    pub capacity: usize,
}

/// Hardware cache counters on this machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheSupport {
    pub supported: bool,
    /// Why not (the error perf_event_open gave), when not supported.
    pub reason: Option<String>,
}

/// Everything measured for one scheduler at one thread count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunMetrics {
    pub scheduler: String,
    pub threads: usize,
    pub raw: Option<Throughput>,
    pub scaled: Option<ScaledSearch>,
    pub latency: Option<Latency>,
    pub order: Order,
    pub balance: Balance,
    pub life: Life,
    pub cache: CacheMisses,
}

/// Maximum raw throughput over the repetitions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Throughput {
    /// Median over repetitions.
    pub pps: f64,
    pub pps_min: f64,
    pub pps_max: f64,
    /// `pps` × mean wire bits per packet.
    pub mbps: f64,
    /// Elapsed time of the median repetition.
    pub elapsed_ns: u64,
    pub samples_pps: Vec<f64>,
    /// Times the dispatcher found a queue full (median repetition).
    pub full_waits: u64,
}

/// The search for the maximum scaled throughput.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScaledSearch {
    /// Highest rate that passed (0 when none did).
    pub max_pps: f64,
    pub max_mbps: f64,
    pub tolerance: f64,
    /// Whether some probed rate passed.
    pub found: bool,
    pub probes: Vec<Probe>,
}

/// One probed rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Probe {
    pub pps: f64,
    pub attempts: usize,
    pub drop_free: usize,
    /// Drops of each attempt.
    pub dropped: Vec<u64>,
    pub passed: bool,
}

/// Per-packet latency (enqueue to end of processing).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// Offered rate (80% of the maximum scaled rate).
    pub rate_pps: f64,
    pub packets: u64,
    pub dropped: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// Per-flow processing order and delay variation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Order {
    /// Which run it was measured on: "raw" (the recorded raw run: the median repetition when timed runs keep records,
    /// else one extra run made with them) or "latency" (the 80% scaled run).
    pub from: String,
    pub packets: u64,
    pub reordered_packets: u64,
    pub reordered_fraction: f64,
    pub flows: u64,
    pub flows_reordered: u64,
    pub ipdv_mean_abs_ns: f64,
    pub ipdv_p99_abs_ns: u64,
    pub ipdv_max_abs_ns: u64,
    pub pdv_p99_ns: u64,
    pub pdv_max_ns: u64,
    /// The ten flows with the most packets.
    pub top_flows: Vec<FlowOrder>,
}

/// Order and delay variation of one flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlowOrder {
    pub flow: u32,
    pub packets: u64,
    pub reordered: u64,
    pub ipdv_mean_abs_ns: f64,
    pub ipdv_max_abs_ns: u64,
}

/// Work per worker and the policy's counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Balance {
    pub workers: Vec<WorkerBalance>,
    /// Most packets on one worker over the mean (1 = perfect balance).
    pub packets_max_over_mean: f64,
    pub busy_max_over_mean: f64,
    pub handoffs: u64,
    pub bundle_joins: u64,
    pub collisions: u64,
    pub migrations: u64,
    pub affinity_hits: u64,
    pub steals: u64,
    pub dropped: u64,
}

/// One worker's share.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerBalance {
    pub packets: u64,
    pub busy_ns: u64,
    pub idle_ns: u64,
    pub parks: u64,
    pub handoffs: u64,
}

/// Where a packet's time goes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Life {
    pub from: String,
    pub dispatch_ns: f64,
    pub queue_ns: f64,
    pub service_ns: f64,
    /// The workload's stages inside `service_ns` (the engine: decode, flow lookup, reassembly, detection).
    pub stages: Vec<Stage>,
}

/// Mean time per packet in one stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stage {
    pub name: String,
    pub mean_ns: f64,
}

/// Cache misses per packet (all workers, the timed region only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheMisses {
    pub supported: bool,
    pub reason: Option<String>,
    pub l1d_per_packet: Option<f64>,
    pub llc_per_packet: Option<f64>,
}

/// Percentile `p` (0..=100) of sorted values, nearest rank; 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Latency of every processed packet, from its arrival to the end of its processing, and its summary at offered
/// rate `rate_pps`. In scaled mode the arrival is the packet's scheduled time (`Records::arrival_ns`), so the
/// dispatcher's release tick (packets released in batches every 50 µs) and any lateness of the dispatcher count as
/// delay, like queueing before the scheduler.
pub fn latency(rec: &Records, rate_pps: f64) -> Latency {
    let mut lat: Vec<u64> = processed(rec).map(|i| latency_of(rec, i)).collect();
    let dropped = rec
        .status
        .iter()
        .filter(|s| matches!(s, Status::DroppedOutstanding | Status::DroppedFull))
        .count() as u64;
    lat.sort_unstable();
    let sum: u128 = lat.iter().map(|&x| u128::from(x)).sum();
    Latency {
        rate_pps,
        packets: lat.len() as u64,
        dropped,
        mean_ns: if lat.is_empty() {
            0.0
        } else {
            sum as f64 / lat.len() as f64
        },
        p50_ns: percentile(&lat, 50.0),
        p99_ns: percentile(&lat, 99.0),
        max_ns: lat.last().copied().unwrap_or(0),
    }
}

fn processed(rec: &Records) -> impl Iterator<Item = usize> + '_ {
    (0..rec.status.len()).filter(move |&i| {
        rec.status[i] == Status::Processed
            && i < rec.end_ns.len()
            && i < rec.enqueue_ns.len()
            && i < rec.arrival_ns.len()
    })
}

/// Arrival to end of processing of processed packet `i` (see [`latency`]).
fn latency_of(rec: &Records, i: usize) -> u64 {
    rec.end_ns[i].saturating_sub(rec.arrival_ns[i])
}

/// Per-flow order and delay variation. `flows[i]` is packet `i`'s flow (`NO_FLOW` to leave it out); packets are in
/// arrival order by index.
pub fn order(rec: &Records, flows: &[u32], from: &str) -> Order {
    struct F {
        packets: u64,
        reordered: u64,
        max_end: u64,
        last_lat: Option<u64>,
        min_lat: u64,
        ipdv_sum: u128,
        ipdv_n: u64,
        ipdv_max: u64,
    }
    let mut per: HashMap<u32, F> = HashMap::new();
    let mut ipdv_all: Vec<u64> = Vec::new();
    let mut packets = 0u64;
    for i in processed(rec) {
        let Some(&flow) = flows.get(i) else { continue };
        if flow == NO_FLOW || i >= rec.start_ns.len() {
            continue;
        }
        packets += 1;
        let end = rec.end_ns[i];
        let lat = latency_of(rec, i);
        let f = per.entry(flow).or_insert(F {
            packets: 0,
            reordered: 0,
            max_end: 0,
            last_lat: None,
            min_lat: u64::MAX,
            ipdv_sum: 0,
            ipdv_n: 0,
            ipdv_max: 0,
        });
        if f.packets > 0 && end < f.max_end {
            f.reordered += 1;
        }
        f.max_end = f.max_end.max(end);
        f.packets += 1;
        if let Some(prev) = f.last_lat {
            let d = lat.abs_diff(prev);
            f.ipdv_sum += u128::from(d);
            f.ipdv_n += 1;
            f.ipdv_max = f.ipdv_max.max(d);
            ipdv_all.push(d);
        }
        f.last_lat = Some(lat);
        f.min_lat = f.min_lat.min(lat);
    }
    // PDV needs each flow's minimum first: a second pass.
    let mut pdv: Vec<u64> = Vec::with_capacity(packets as usize);
    for i in processed(rec) {
        let Some(f) = flows.get(i).and_then(|fl| per.get(fl)) else {
            continue;
        };
        let lat = latency_of(rec, i);
        pdv.push(lat.saturating_sub(f.min_lat));
    }
    ipdv_all.sort_unstable();
    pdv.sort_unstable();
    let reordered: u64 = per.values().map(|f| f.reordered).sum();
    let mut top: Vec<(u32, &F)> = per.iter().map(|(k, f)| (*k, f)).collect();
    top.sort_by(|a, b| b.1.packets.cmp(&a.1.packets).then(a.0.cmp(&b.0)));
    top.truncate(10);
    let sum: u128 = ipdv_all.iter().map(|&x| u128::from(x)).sum();
    Order {
        from: from.to_string(),
        packets,
        reordered_packets: reordered,
        reordered_fraction: if packets == 0 {
            0.0
        } else {
            reordered as f64 / packets as f64
        },
        flows: per.len() as u64,
        flows_reordered: per.values().filter(|f| f.reordered > 0).count() as u64,
        ipdv_mean_abs_ns: if ipdv_all.is_empty() {
            0.0
        } else {
            sum as f64 / ipdv_all.len() as f64
        },
        ipdv_p99_abs_ns: percentile(&ipdv_all, 99.0),
        ipdv_max_abs_ns: ipdv_all.last().copied().unwrap_or(0),
        pdv_p99_ns: percentile(&pdv, 99.0),
        pdv_max_ns: pdv.last().copied().unwrap_or(0),
        top_flows: top
            .into_iter()
            .map(|(flow, f)| FlowOrder {
                flow,
                packets: f.packets,
                reordered: f.reordered,
                ipdv_mean_abs_ns: if f.ipdv_n == 0 {
                    0.0
                } else {
                    f.ipdv_sum as f64 / f.ipdv_n as f64
                },
                ipdv_max_abs_ns: f.ipdv_max,
            })
            .collect(),
    }
}

/// Mean dispatch, queueing and service time of processed packets.
pub fn life(rec: &Records, from: &str, stages: Vec<Stage>) -> Life {
    let (mut d, mut q, mut s, mut n) = (0u128, 0u128, 0u128, 0u64);
    for i in processed(rec) {
        if i >= rec.start_ns.len() || i >= rec.arrival_ns.len() {
            continue;
        }
        d += u128::from(rec.enqueue_ns[i].saturating_sub(rec.arrival_ns[i]));
        q += u128::from(rec.start_ns[i].saturating_sub(rec.enqueue_ns[i]));
        s += u128::from(rec.end_ns[i].saturating_sub(rec.start_ns[i]));
        n += 1;
    }
    let mean = |x: u128| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    Life {
        from: from.to_string(),
        dispatch_ns: mean(d),
        queue_ns: mean(q),
        service_ns: mean(s),
        stages,
    }
}

/// Work per worker and the policy's counters of a run.
pub fn balance<L>(r: &RunReport<L>) -> Balance {
    let workers: Vec<WorkerBalance> = r
        .workers
        .iter()
        .map(|w| WorkerBalance {
            packets: w.packets,
            busy_ns: w.busy_ns,
            idle_ns: w.idle_ns,
            parks: w.parks,
            handoffs: w.handoffs,
        })
        .collect();
    let ratio = |v: Vec<u64>| {
        let n = v.len().max(1) as f64;
        let mean = v.iter().sum::<u64>() as f64 / n;
        let max = v.iter().copied().max().unwrap_or(0) as f64;
        if mean > 0.0 { max / mean } else { 1.0 }
    };
    let s: &SchedStats = &r.sched;
    Balance {
        packets_max_over_mean: ratio(workers.iter().map(|w| w.packets).collect()),
        busy_max_over_mean: ratio(workers.iter().map(|w| w.busy_ns).collect()),
        workers,
        handoffs: s.handoffs,
        bundle_joins: s.bundle_joins,
        collisions: s.collisions,
        migrations: s.migrations,
        affinity_hits: s.affinity_hits,
        steals: s.steals,
        dropped: r.dispatcher.dropped_outstanding + r.dispatcher.dropped_full,
    }
}

/// Average and 1-ms peak rates and the connection density of a prepared trace.
pub fn trace_info(p: &crate::prep::Prepared) -> TraceInfo {
    let n = p.len() as u64;
    let bytes = p.wire_bytes();
    let dur = p.duration_ns();
    let secs = dur as f64 / 1e9;
    let (avg_pps, avg_mbps) = if secs > 0.0 {
        (n as f64 / secs, bytes as f64 * 8.0 / secs / 1e6)
    } else {
        (0.0, 0.0)
    };
    // Highest bit rate over any 1 ms window (sliding over packets sorted by time).
    let mut by_time: Vec<(u64, u64)> = p
        .ts_ns
        .iter()
        .zip(p.trace.iter())
        .map(|(&t, r)| (t, u64::from(r.orig_len)))
        .collect();
    by_time.sort_unstable();
    let (mut lo, mut sum, mut best) = (0usize, 0u64, 0u64);
    for hi in 0..by_time.len() {
        sum += by_time[hi].1;
        while by_time[hi].0 - by_time[lo].0 >= 1_000_000 {
            sum -= by_time[lo].1;
            lo += 1;
        }
        best = best.max(sum);
    }
    let max_mbps_1ms = if dur >= 1_000_000 {
        best as f64 * 8.0 / 1e-3 / 1e6
    } else {
        avg_mbps
    };
    TraceInfo {
        name: p.name.clone(),
        packets: n,
        flows: p.stats.flows,
        wire_bytes: bytes,
        duration_ns: dur,
        avg_pps,
        avg_mbps,
        max_mbps_1ms,
        connection_density: connection_density(&p.flows),
        prep: Some(p.stats.clone()),
    }
}

/// Unique flows per window of 100 consecutive packets, averaged over the whole windows (non-IP packets count as one
/// flow).
pub fn connection_density(flows: &[u32]) -> f64 {
    let windows = flows.chunks_exact(100);
    let n = windows.len();
    if n == 0 {
        let mut v = flows.to_vec();
        v.sort_unstable();
        v.dedup();
        return if flows.is_empty() {
            0.0
        } else {
            v.len() as f64 * 100.0 / flows.len() as f64
        };
    }
    let mut total = 0usize;
    let mut seen: Vec<u32> = Vec::with_capacity(100);
    for w in windows {
        seen.clear();
        seen.extend_from_slice(w);
        seen.sort_unstable();
        seen.dedup();
        total += seen.len();
    }
    total as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records for packets given as (enqueue, start, end), all processed, arrival = enqueue.
    fn recs(v: &[(u64, u64, u64)]) -> Records {
        Records {
            arrival_ns: v.iter().map(|x| x.0).collect(),
            enqueue_ns: v.iter().map(|x| x.0).collect(),
            start_ns: v.iter().map(|x| x.1).collect(),
            end_ns: v.iter().map(|x| x.2).collect(),
            worker: vec![0; v.len()],
            status: vec![Status::Processed; v.len()],
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[7], 99.0), 7);
    }

    #[test]
    fn latency_is_enqueue_to_end_and_drops_are_left_out() {
        let mut r = recs(&[(0, 10, 20), (5, 20, 105), (10, 0, 0)]);
        r.status[2] = Status::DroppedOutstanding;
        let l = latency(&r, 1000.0);
        assert_eq!((l.packets, l.dropped), (2, 1));
        assert_eq!((l.p50_ns, l.max_ns), (20, 100));
        assert_eq!(l.mean_ns, 60.0);
    }

    #[test]
    fn latency_counts_from_the_scheduled_arrival_not_the_batch_release() {
        // Released together at 50 (the dispatcher's tick), scheduled at 0 and 30: the wait for the tick counts.
        let mut r = recs(&[(50, 60, 70), (50, 70, 80)]);
        r.arrival_ns = vec![0, 30];
        let l = latency(&r, 1000.0);
        assert_eq!((l.p50_ns, l.max_ns), (50, 70));
        assert_eq!(life(&r, "latency", Vec::new()).dispatch_ns, 35.0);
    }

    #[test]
    fn a_packet_overtaking_an_earlier_one_of_its_flow_is_reordered() {
        // Flow 0: packets 0, 1, 3; packet 1 ends before packet 0. Flow 1: packet 2 alone.
        let r = recs(&[(0, 50, 60), (1, 10, 20), (2, 30, 40), (3, 70, 80)]);
        let o = order(&r, &[0, 0, 1, 0], "raw");
        assert_eq!(
            (o.packets, o.reordered_packets, o.flows, o.flows_reordered),
            (4, 1, 2, 1)
        );
        // Latencies of flow 0 in arrival order: 60, 19, 77 → IPDV |−41|, |58|.
        assert_eq!(o.ipdv_max_abs_ns, 58);
        assert_eq!(o.ipdv_mean_abs_ns, 49.5);
        // PDV of flow 0: 60−19, 0, 77−19; flow 1: 0.
        assert_eq!(o.pdv_max_ns, 58);
        assert_eq!(o.top_flows[0].flow, 0);
        assert_eq!(o.top_flows[0].reordered, 1);
    }

    #[test]
    fn in_order_flows_and_flowless_packets() {
        let r = recs(&[(0, 1, 2), (1, 2, 3), (2, 3, 4)]);
        let o = order(&r, &[0, NO_FLOW, 0], "raw");
        assert_eq!((o.packets, o.reordered_packets, o.flows), (2, 0, 1));
        assert_eq!(o.ipdv_max_abs_ns, 0);
    }

    #[test]
    fn life_splits_dispatch_queue_and_service() {
        let mut r = recs(&[(10, 30, 100)]);
        r.arrival_ns[0] = 4;
        let l = life(&r, "raw", vec![]);
        assert_eq!((l.dispatch_ns, l.queue_ns, l.service_ns), (6.0, 20.0, 70.0));
    }

    #[test]
    fn connection_density_counts_unique_flows_per_hundred_packets() {
        let one: Vec<u32> = vec![3; 300];
        assert_eq!(connection_density(&one), 1.0);
        let all: Vec<u32> = (0..300).collect();
        assert_eq!(connection_density(&all), 100.0);
        let half: Vec<u32> = (0..200).map(|i| i % 50).collect();
        assert_eq!(connection_density(&half), 50.0);
        assert_eq!(connection_density(&[1, 1, 2, 2]), 50.0);
        assert_eq!(connection_density(&[]), 0.0);
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let report = BenchReport {
            schema: SCHEMA.into(),
            source: Source::Simulated,
            tool: "test".into(),
            trace: TraceInfo::default(),
            config: RunConfigInfo::default(),
            cache_counters: CacheSupport::default(),
            runs: vec![RunMetrics {
                scheduler: "lfb".into(),
                threads: 2,
                raw: Some(Throughput {
                    pps: 1.5,
                    ..Throughput::default()
                }),
                ..RunMetrics::default()
            }],
        };
        let s = serde_json::to_string(&report).unwrap();
        assert!(s.contains("\"source\":\"simulated\""));
        let back: BenchReport = serde_json::from_str(&s).unwrap();
        assert_eq!(back, report);
    }
}
