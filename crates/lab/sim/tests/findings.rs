//! The qualitative findings of ANCS'10 (§4.3–4.6), checked on the generated `dominant`, `many` and `balanced`
//! traces at 1–14 simulated cores with the default (Nehalem, PAM-like) parameters: the same parameters for every
//! trace and every policy, nothing tuned per scheduler or per trace.
//!
//! * `lfb` has the highest raw throughput at every core count on all three (against `dh` and `ph`);
//! * `ph` has the most flow-state misses per packet (from 2 cores: on one core `ph` and `dh` both process in arrival
//!   order and are the same schedule, which `tests/engine.rs` checks);
//! * `balanced`: `dh` is limited by imbalance (its busiest worker is busy the whole run while the mean one is not);
//! * `many`: `dh` is below `lfb` at every core count;
//! * `dominant`: `lfb`'s throughput stops growing once one core processes only the dominant connection;
//! * the headline ratio (`lfb` over the next best on `balanced` at 14 cores) is printed (the paper measured 1.38;
//!   `BENCHMARKS.md`, "Simulator", records it on a larger trace) and must favour `lfb`.
//!
//! The traces are 40,000 packets (the Table 1 shapes scaled down, connections in proportion) so that the three
//! sweeps (42 runs each) stay within a few seconds; the findings hold the same at 100,000 and more (BENCHMARKS.md).

use flowbundle_sim::findings::{self, Finding};
use flowbundle_sim::params::Params;
use flowbundle_sim::{SimInput, SimReport, SweepConfig, profiles, sweep};

const PACKETS: u64 = 40_000;

fn run(profile: &str) -> (SimInput, SimReport) {
    let input = profiles::profile(profile, PACKETS, 1).unwrap();
    let cfg = SweepConfig {
        schedulers: vec!["dh".into(), "ph".into(), "lfb".into()],
        cores: (1..=14).collect(),
        ..SweepConfig::default()
    };
    let report = sweep(&input, &Params::default(), &cfg, &mut |_| {}).unwrap();
    assert_eq!(report.bench.runs.len(), 42);
    (input, report)
}

fn assert_holds(profile: &str, found: &[Finding]) {
    for f in found {
        println!("{profile}: [{}] {}: {}", f.holds, f.name, f.detail);
    }
    for f in found {
        assert!(f.holds, "{profile}: {} does not hold: {}", f.name, f.detail);
    }
}

#[test]
fn balanced_lfb_highest_dh_limited_by_imbalance_ph_most_misses() {
    let (input, r) = run("balanced");
    let found = findings::check("balanced", &r, &input);
    assert_eq!(found.len(), 3);
    assert_holds("balanced", &found);
    let (n, ratio, next, _, _) = findings::headline(&r).unwrap();
    println!("balanced: headline at {n} cores: lfb / {next} = {ratio:.3} (ANCS'10: 1.38)");
    assert_eq!(n, 14);
    assert!(ratio > 1.0);
}

#[test]
fn many_lfb_highest_dh_below_lfb_ph_most_misses() {
    let (input, r) = run("many");
    let found = findings::check("many", &r, &input);
    assert_eq!(found.len(), 3);
    assert_holds("many", &found);
}

#[test]
fn dominant_lfb_highest_and_plateaus_once_one_core_has_the_dominant_connection() {
    let (input, r) = run("dominant");
    let found = findings::check("dominant", &r, &input);
    assert_eq!(found.len(), 3);
    assert_holds("dominant", &found);
    let (f, from) = findings::dominant_plateau(&r, &input, "lfb", 0.05);
    assert!(f.holds);
    // Before that core count throughput did grow: the plateau is the dominant connection's, not a flat model.
    let from = from.unwrap();
    let one = r.raw_pps("lfb", 1).unwrap();
    let at = r.raw_pps("lfb", from).unwrap();
    assert!(at > 1.2 * one, "{one} → {at} at {from} cores");
}
