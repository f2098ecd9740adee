//! The ANCS'10 paper's qualitative findings (§4.3–4.6), as checks on a simulated sweep. Each check reads only the
//! report (raw throughput, the model's misses and per-worker figures), says whether the finding holds, and explains
//! with the numbers, so a failed finding is a result to investigate and report, not a hidden assertion.
//!
//! The paper compared `dh`, `ph` and `lfb`; "the next best" and "highest" are among those three unless said
//! otherwise. Other policies in the sweep are reported beside them.

use crate::exec::{Exec, ExecReport};
use crate::input::SimInput;
use crate::report::SimReport;
use serde::{Deserialize, Serialize};

/// The three policies of the paper.
pub const PAPER: &[&str] = &["dh", "ph", "lfb"];

/// One checked finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub name: String,
    pub holds: bool,
    pub detail: String,
}

fn cores_of(r: &SimReport) -> Vec<usize> {
    let mut v: Vec<usize> = r.bench.runs.iter().map(|m| m.threads).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// "LFB has the highest throughput at every thread count tested" (§4.3.1–4.3.3), against `dh` and `ph`.
pub fn lfb_highest(r: &SimReport) -> Finding {
    let mut worst: Option<(usize, f64, &str)> = None;
    let mut holds = true;
    let mut checked = 0;
    for n in cores_of(r) {
        let Some(lfb) = r.raw_pps("lfb", n) else {
            continue;
        };
        for other in ["dh", "ph"] {
            let Some(o) = r.raw_pps(other, n) else {
                continue;
            };
            checked += 1;
            let ratio = lfb / o;
            if ratio <= 1.0 {
                holds = false;
            }
            if worst.is_none_or(|w| ratio < w.1) {
                worst = Some((n, ratio, other));
            }
        }
    }
    Finding {
        name: "lfb has the highest raw throughput at every core count".into(),
        holds: holds && checked > 0,
        detail: match worst {
            Some((n, ratio, o)) => format!("smallest margin: lfb / {o} = {ratio:.3} at {n} cores"),
            None => "no lfb, dh or ph runs".into(),
        },
    }
}

/// "DH ... does not do as well ... due to load imbalances" (§4.3.3, Balanced): at the largest core count, `dh`'s
/// busiest worker is busy for most of the run while the mean worker is not, and `dh` is below `lfb`.
pub fn dh_limited_by_imbalance(r: &SimReport) -> Finding {
    let Some(&n) = cores_of(r).last() else {
        return Finding {
            name: "dh limited by imbalance".into(),
            holds: false,
            detail: "no runs".into(),
        };
    };
    let (Some(dh), Some(info), Some(lfb)) = (r.run("dh", n), r.info("dh", n), r.raw_pps("lfb", n))
    else {
        return Finding {
            name: "dh limited by imbalance".into(),
            holds: false,
            detail: format!("no dh or lfb run at {n} cores"),
        };
    };
    let dh_pps = dh.raw.as_ref().map_or(0.0, |t| t.pps);
    let busy: Vec<u64> = info.workers.iter().map(|w| w.busy_cycles).collect();
    let max = busy.iter().copied().max().unwrap_or(0) as f64;
    let mean = busy.iter().sum::<u64>() as f64 / busy.len().max(1) as f64;
    let elapsed = info.elapsed_cycles.max(1) as f64;
    let busiest_util = max / elapsed;
    let mean_util = mean / elapsed;
    let holds = busiest_util >= 0.9 && max >= 1.2 * mean && dh_pps < lfb;
    Finding {
        name: format!("dh limited by imbalance at {n} cores"),
        holds,
        detail: format!(
            "busiest dh worker busy {:.0}% of the run, mean worker {:.0}% (max/mean {:.2}); dh {:.3} vs lfb {:.3} Mpps",
            busiest_util * 100.0,
            mean_util * 100.0,
            max / mean.max(1.0),
            dh_pps / 1e6,
            lfb / 1e6
        ),
    }
}

/// "DH ... does not perform as well as LFB" on Many (§4.3.2): `dh` below `lfb` at every core count.
pub fn dh_below_lfb(r: &SimReport) -> Finding {
    let mut holds = true;
    let mut worst: Option<(usize, f64)> = None;
    for n in cores_of(r) {
        let (Some(dh), Some(lfb)) = (r.raw_pps("dh", n), r.raw_pps("lfb", n)) else {
            continue;
        };
        let ratio = lfb / dh;
        holds &= ratio > 1.0;
        if worst.is_none_or(|w| ratio < w.1) {
            worst = Some((n, ratio));
        }
    }
    Finding {
        name: "dh below lfb at every core count".into(),
        holds: holds && worst.is_some(),
        detail: worst.map_or("no runs".into(), |(n, x)| {
            format!("smallest margin: lfb / dh = {x:.3} at {n} cores")
        }),
    }
}

/// "The considerable number of cache misses for PH" (§4.5, Figure 8): `ph` has the most flow-state misses per packet
/// (L1 + L2 + L3) at every core count from `min_cores` (at one core `ph` processes in arrival order, as `dh` does).
pub fn ph_most_misses(r: &SimReport, min_cores: usize) -> Finding {
    let mut holds = true;
    let mut worst: Option<(usize, f64, &str)> = None;
    for n in cores_of(r).into_iter().filter(|&n| n >= min_cores) {
        let Some(ph) = r.info("ph", n).map(|i| i.misses.total()) else {
            continue;
        };
        for other in ["dh", "lfb"] {
            let Some(o) = r.info(other, n).map(|i| i.misses.total()) else {
                continue;
            };
            let ratio = ph / o.max(1e-9);
            holds &= ph > o;
            if worst.is_none_or(|w| ratio < w.1) {
                worst = Some((n, ratio, other));
            }
        }
    }
    Finding {
        name: format!("ph has the most misses per packet (from {min_cores} cores)"),
        holds: holds && worst.is_some(),
        detail: worst.map_or("no runs".into(), |(n, x, o)| {
            format!("smallest margin: ph / {o} misses = {x:.2} at {n} cores")
        }),
    }
}

/// The dominant connection's plateau (§4.3.1): from the first core count at which one `scheduler` worker processes
/// (nearly) only the dominant connection, throughput stops growing: no later core count exceeds it by more than
/// `tolerance`. Also reports that core count.
pub fn dominant_plateau(
    r: &SimReport,
    input: &SimInput,
    scheduler: &str,
    tolerance: f64,
) -> (Finding, Option<usize>) {
    let name = format!(
        "{scheduler}: throughput stops growing once one core processes only the dominant connection"
    );
    let Some((dom, share)) = input.largest_flow() else {
        return (
            Finding {
                name,
                holds: false,
                detail: "empty trace".into(),
            },
            None,
        );
    };
    let dom_packets = (share * input.len() as f64).round();
    let cores = cores_of(r);
    let alone = cores.iter().copied().find(|&n| {
        r.info(scheduler, n).is_some_and(|i| {
            i.workers.iter().any(|w| {
                w.top_flow == Some(dom)
                    && w.top_flow_share >= 0.99
                    && w.packets as f64 >= 0.99 * dom_packets
            })
        })
    });
    let Some(n0) = alone else {
        return (
            Finding {
                name,
                holds: false,
                detail: format!(
                    "no core count up to {} had one worker processing only the dominant connection ({:.0}% of packets)",
                    cores.last().copied().unwrap_or(0),
                    share * 100.0
                ),
            },
            None,
        );
    };
    let base = r.raw_pps(scheduler, n0).unwrap_or(0.0);
    let later: Vec<(usize, f64)> = cores
        .iter()
        .copied()
        .filter(|&n| n > n0)
        .filter_map(|n| r.raw_pps(scheduler, n).map(|p| (n, p / base.max(1e-9))))
        .collect();
    let peak = later.iter().map(|x| x.1).fold(1.0, f64::max);
    let first = cores
        .first()
        .and_then(|&n| r.raw_pps(scheduler, n))
        .unwrap_or(0.0);
    let holds = peak <= 1.0 + tolerance && !later.is_empty();
    (
        Finding {
            name,
            holds,
            detail: format!(
                "dominant connection {:.0}% of packets; alone on one core from {n0} cores at {:.3} Mpps ({:.2}× the \
                 first core count); later core counts reach at most {:.3}× that",
                share * 100.0,
                base / 1e6,
                base / first.max(1e-9),
                peak
            ),
        },
        Some(n0),
    )
}

/// The headline ratio at the largest core count: `lfb` over the next best of `dh` and `ph` (the paper: 1.38 on
/// Balanced at 14 threads), and over the next best of every other policy in the sweep.
pub fn headline(r: &SimReport) -> Option<(usize, f64, String, f64, String)> {
    let n = *cores_of(r).last()?;
    let lfb = r.raw_pps("lfb", n)?;
    let best_of = |names: &mut dyn Iterator<Item = &str>| -> Option<(f64, String)> {
        names
            .filter(|&s| s != "lfb")
            .filter_map(|s| r.raw_pps(s, n).map(|p| (p, s.to_string())))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let (paper, pname) = best_of(&mut PAPER.iter().copied())?;
    let all: Vec<String> = r.bench.runs.iter().map(|m| m.scheduler.clone()).collect();
    let (any, aname) =
        best_of(&mut all.iter().map(String::as_str)).unwrap_or((paper, pname.clone()));
    Some((n, lfb / paper, pname, lfb / any, aname))
}

/// The findings that apply to a profile (`dominant`, `many`, `balanced`; others get the general ones).
pub fn check(profile: &str, r: &SimReport, input: &SimInput) -> Vec<Finding> {
    let mut v = vec![lfb_highest(r), ph_most_misses(r, 2)];
    match profile {
        "dominant" => v.push(dominant_plateau(r, input, "lfb", 0.05).0),
        "many" => v.push(dh_below_lfb(r)),
        "balanced" => v.push(dh_limited_by_imbalance(r)),
        _ => {}
    }
    v
}

/// The Verdú thesis' ordering of execution models (§6.4.3): at every core count from `min_cores`, throughput
/// multilayer > pipeline > run-to-completion under `scheduler`. The detail gives the smallest margins.
pub fn exec_ordering(r: &ExecReport, scheduler: &str, min_cores: usize) -> Finding {
    let mut cores: Vec<usize> = r
        .runs
        .iter()
        .map(|x| x.cores)
        .filter(|&n| n >= min_cores)
        .collect();
    cores.sort_unstable();
    cores.dedup();
    let mut holds = !cores.is_empty();
    let mut worst_mp: Option<(usize, f64)> = None;
    let mut worst_pr: Option<(usize, f64)> = None;
    for &n in &cores {
        let pps = |e| r.run(e, scheduler, n).map(|x| x.pps);
        let (Some(rtc), Some(pipe), Some(ml)) =
            (pps(Exec::Rtc), pps(Exec::Pipeline), pps(Exec::Multilayer))
        else {
            holds = false;
            continue;
        };
        holds &= ml > pipe && pipe > rtc;
        if worst_mp.is_none_or(|w| ml / pipe < w.1) {
            worst_mp = Some((n, ml / pipe));
        }
        if worst_pr.is_none_or(|w| pipe / rtc < w.1) {
            worst_pr = Some((n, pipe / rtc));
        }
    }
    let fmt = |w: Option<(usize, f64)>| {
        w.map_or("no runs".to_string(), |(n, x)| {
            format!("{x:.3} at {n} cores")
        })
    };
    Finding {
        name: format!("{scheduler}: throughput multilayer > pipeline > rtc from {min_cores} cores"),
        holds,
        detail: format!(
            "smallest margins: multilayer / pipeline = {}, pipeline / rtc = {}",
            fmt(worst_mp),
            fmt(worst_pr)
        ),
    }
}

/// The thesis' I-cache result (§6.4.1.1): multilayer has the lowest L1i miss rate at every core count from
/// `min_cores` (RTC's cores run every layer's code, MLP's one layer's).
pub fn exec_icache_lowest(r: &ExecReport, scheduler: &str, min_cores: usize) -> Finding {
    let mut holds = false;
    let mut all = true;
    let mut worst: Option<(usize, f64, &str)> = None;
    for ml in r
        .runs
        .iter()
        .filter(|x| x.exec == Exec::Multilayer && x.scheduler == scheduler && x.cores >= min_cores)
    {
        for other in [Exec::Rtc, Exec::Pipeline] {
            let Some(o) = r.run(other, scheduler, ml.cores) else {
                continue;
            };
            holds = true;
            all &= ml.icache_miss_rate < o.icache_miss_rate;
            let ratio = ml.icache_miss_rate / o.icache_miss_rate.max(1e-12);
            if worst.is_none_or(|w| ratio > w.1) {
                worst = Some((ml.cores, ratio, other.name()));
            }
        }
    }
    Finding {
        name: format!(
            "{scheduler}: multilayer has the lowest I-cache miss rate from {min_cores} cores"
        ),
        holds: holds && all,
        detail: worst.map_or("no runs".into(), |(n, x, o)| {
            format!("largest ratio: multilayer / {o} I$ misses = {x:.2} at {n} cores")
        }),
    }
}
