//! Text tables of a [`BenchReport`], in Markdown so they paste into `BENCHMARKS.md` as printed.

use crate::metrics::{BenchReport, RunMetrics};
use std::fmt::Write;

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// Raw throughput of the same scheduler at the smallest thread count measured.
fn base_pps(r: &BenchReport, m: &RunMetrics) -> Option<f64> {
    r.runs
        .iter()
        .filter(|x| x.scheduler == m.scheduler)
        .min_by_key(|x| x.threads)
        .and_then(|x| x.raw.as_ref().map(|t| t.pps))
}

/// The main table: throughput, speedup, latency, order and balance per scheduler and thread count.
pub fn summary(r: &BenchReport) -> String {
    let mut s = String::new();
    let scaled = r.runs.iter().any(|m| m.scaled.is_some());
    let _ = write!(
        s,
        "| scheduler | threads | raw Mpps (median of {}) | min–max | speedup |",
        r.config.reps
    );
    if scaled {
        s.push_str(" max scaled Mpps | latency mean / p50 / p99 / max (µs) |");
    }
    s.push_str(" reordered % | IPDV p99 (µs) | pkts max/mean | idle % | handoffs | collisions | migrations |");
    s.push_str(" L1d miss/pkt | LLC miss/pkt |\n");
    let cols = if scaled { 16 } else { 14 };
    s.push_str(&"|---".repeat(cols));
    s.push_str("|\n");
    for m in &r.runs {
        let raw = m.raw.as_ref();
        let pps = raw.map_or(0.0, |t| t.pps);
        let speedup = base_pps(r, m).filter(|b| *b > 0.0).map_or(0.0, |b| pps / b);
        let _ = write!(
            s,
            "| {} | {} | {:.3} | {:.3}–{:.3} | {:.2} |",
            m.scheduler,
            m.threads,
            pps / 1e6,
            raw.map_or(0.0, |t| t.pps_min) / 1e6,
            raw.map_or(0.0, |t| t.pps_max) / 1e6,
            speedup
        );
        if scaled {
            match &m.scaled {
                Some(sc) if sc.found => {
                    let _ = write!(s, " {:.3} |", sc.max_pps / 1e6);
                }
                Some(_) => s.push_str(" none found |"),
                None => s.push_str(" – |"),
            }
            match &m.latency {
                Some(l) => {
                    let _ = write!(
                        s,
                        " {} / {} / {} / {} |",
                        us(l.mean_ns),
                        us(l.p50_ns as f64),
                        us(l.p99_ns as f64),
                        us(l.max_ns as f64)
                    );
                }
                None => s.push_str(" – |"),
            }
        }
        let b = &m.balance;
        let busy: u64 = b.workers.iter().map(|w| w.busy_ns + w.idle_ns).sum();
        let idle: u64 = b.workers.iter().map(|w| w.idle_ns).sum();
        let cache = |v: Option<f64>| v.map_or("n/s".to_string(), |x| format!("{x:.1}"));
        let _ = writeln!(
            s,
            " {:.2} | {} | {:.2} | {:.1} | {} | {} | {} | {} | {} |",
            m.order.reordered_fraction * 100.0,
            us(m.order.ipdv_p99_abs_ns as f64),
            b.packets_max_over_mean,
            if busy > 0 {
                idle as f64 * 100.0 / busy as f64
            } else {
                0.0
            },
            b.handoffs,
            b.collisions,
            b.migrations,
            cache(m.cache.l1d_per_packet),
            cache(m.cache.llc_per_packet),
        );
    }
    if !r.cache_counters.supported {
        let _ = writeln!(
            s,
            "\nCache counters: not supported on this machine ({}); n/s = not supported.",
            r.cache_counters
                .reason
                .as_deref()
                .unwrap_or("unknown reason")
        );
    }
    s
}

/// Life of a packet (L7-filter ANCS'08 Figures 7–8): mean ns in dispatch, queues, service and its stages.
pub fn life(r: &BenchReport) -> String {
    let mut stage_names: Vec<String> = Vec::new();
    for m in &r.runs {
        for st in &m.life.stages {
            if !stage_names.contains(&st.name) {
                stage_names.push(st.name.clone());
            }
        }
    }
    let mut s = String::from(
        "| scheduler | threads | measured on | dispatch (ns) | queues (ns) | service (ns) |",
    );
    for n in &stage_names {
        let _ = write!(s, " {n} (ns) |");
    }
    s.push('\n');
    s.push_str(&"|---".repeat(6 + stage_names.len()));
    s.push_str("|\n");
    for m in &r.runs {
        let l = &m.life;
        let _ = write!(
            s,
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} |",
            m.scheduler, m.threads, l.from, l.dispatch_ns, l.queue_ns, l.service_ns
        );
        for n in &stage_names {
            match l.stages.iter().find(|x| &x.name == n) {
                Some(st) => {
                    let _ = write!(s, " {:.0} |", st.mean_ns);
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s
}

/// A one-paragraph header: trace, workload, machine.
pub fn header(r: &BenchReport) -> String {
    let t = &r.trace;
    let c = &r.config;
    format!(
        "trace {}: {} packets, {} flows, {:.1} s, {:.1} Mb/s average ({:.1} max over 1 ms), connection density {:.1}\n\
         workload {} ({}); mode {}; {} repetitions; max outstanding {}; {} cores; ph late claim {}; {}\n",
        t.name,
        t.packets,
        t.flows,
        t.duration_ns as f64 / 1e9,
        t.avg_mbps,
        t.max_mbps_1ms,
        t.connection_density,
        c.workload,
        c.workload_detail,
        c.mode,
        c.reps,
        c.max_outstanding,
        c.cores,
        if c.ph_late_claim { "on" } else { "off" },
        c.pinning.join("; "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::*;

    #[test]
    fn rows_carry_speedup_and_unsupported_counters_are_explained() {
        let run = |t: usize, pps: f64| RunMetrics {
            scheduler: "lfb".into(),
            threads: t,
            raw: Some(Throughput {
                pps,
                pps_min: pps,
                pps_max: pps,
                ..Throughput::default()
            }),
            ..RunMetrics::default()
        };
        let r = BenchReport {
            schema: SCHEMA.into(),
            source: Source::Measured,
            tool: "t".into(),
            trace: TraceInfo::default(),
            config: RunConfigInfo {
                reps: 3,
                ..RunConfigInfo::default()
            },
            cache_counters: CacheSupport {
                supported: false,
                reason: Some("perf_event_open: No such file or directory".into()),
            },
            runs: vec![run(1, 100_000.0), run(2, 190_000.0)],
        };
        let t = summary(&r);
        assert!(t.contains("| lfb | 2 | 0.190 |"), "{t}");
        assert!(t.contains("| 1.90 |"), "{t}");
        assert!(t.contains("not supported on this machine (perf_event_open: No such file"));
        let header_cols = t.lines().next().unwrap().matches('|').count();
        for line in t.lines().take(4).skip(1) {
            assert_eq!(line.matches('|').count(), header_cols, "{line}");
        }
        assert!(super::life(&r).lines().count() >= 4);
    }
}
