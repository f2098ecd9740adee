//! The monitor driven by the paper's modelled profile and rate schedules on a virtual clock: it must add devices
//! when the offered rate exceeds what the active ones sustain, release them when it falls, change batch sizes, and
//! do each within two monitor intervals of the rate change, then hold still until the next change.

use std::sync::Arc;

use flowbundle_hetero::monitor::{Action, Decision, Monitor, MonitorConfig, Policy};
use flowbundle_hetero::schedule::RateSchedule;
use flowbundle_hetero::sim::{RunLog, SimConfig, simulate};
use flowbundle_hetero::{PacketApp, Profile};

const INTERVAL: f64 = 0.1;

fn run(policy: Policy, apps: &[PacketApp], schedule: &str, duration_s: f64) -> RunLog {
    let profile = Arc::new(Profile::pythia_paper());
    let cfg = MonitorConfig::from_profile(&profile);
    let mut m = Monitor::new(profile, policy, cfg, apps);
    let scheds: Vec<RateSchedule> = apps
        .iter()
        .map(|_| RateSchedule::parse(schedule).unwrap())
        .collect();
    let sim = SimConfig {
        interval_s: INTERVAL,
        step_s: 0.01,
        duration_s,
        policy_changes: vec![],
    };
    simulate(&mut m, apps, &scheds, &sim)
}

fn show(d: &[Decision]) -> String {
    d.iter()
        .map(|x| {
            format!(
                "{:.2} {} {:?} {:?}/{} off {:.1}\n",
                x.t_s, x.app, x.action, x.to.devices, x.to.batch, x.offered_gbps
            )
        })
        .collect()
}

/// Every decision after time 0 falls within two intervals after a change point (so each reaction is prompt and
/// the scheduler then holds still).
fn assert_prompt(log: &RunLog, schedule: &str) {
    let changes = RateSchedule::parse(schedule).unwrap().change_points();
    for d in log.decisions.iter().filter(|d| d.t_s > 0.0) {
        let ok = changes
            .iter()
            .any(|&c| d.t_s > c && d.t_s <= c + 2.0 * INTERVAL + 1e-9);
        assert!(
            ok,
            "decision at {:.2}s is not within two intervals of a rate change:\n{}",
            d.t_s,
            show(&log.decisions)
        );
    }
}

fn within(log: &RunLog, app: PacketApp, after: f64, pred: impl Fn(&Decision) -> bool) -> bool {
    log.decisions
        .iter()
        .any(|d| d.app == app && d.t_s > after && d.t_s <= after + 2.0 * INTERVAL + 1e-9 && pred(d))
}

#[test]
fn throughput_policy_adds_and_releases_devices_promptly() {
    let sched = "0:4,4:30,6:12,8:4";
    let log = run(
        Policy::Throughput,
        &[PacketApp::Dpi, PacketApp::Aes],
        sched,
        10.0,
    );
    for app in [PacketApp::Dpi, PacketApp::Aes] {
        assert!(
            within(&log, app, 4.0, |d| d.action == Action::AddDevice),
            "{app} add at 4 s:\n{}",
            show(&log.decisions)
        );
        assert!(
            within(&log, app, 6.0, |d| d.action == Action::ReleaseDevice),
            "{app} release at 6 s:\n{}",
            show(&log.decisions)
        );
    }
    assert_prompt(&log, sched);
    // Batch sizes change with the load as well.
    assert!(
        log.decisions
            .iter()
            .any(|d| d.from.as_ref().is_some_and(|f| f.batch != d.to.batch)),
        "{}",
        show(&log.decisions)
    );
    // The timeline has one sample per interval, and the devices in use grow and shrink with the rate.
    assert_eq!(log.samples.len(), 100);
    let devs_at = |t: f64| {
        log.samples
            .iter()
            .find(|s| (s.t_s - t).abs() < 1e-6)
            .unwrap()
            .active_devices
            .len()
    };
    assert!(devs_at(5.0) > devs_at(3.0));
    assert!(devs_at(7.0) < devs_at(5.0));
}

#[test]
fn energy_policy_starts_on_the_integrated_gpu_and_scales_out_under_load() {
    let sched = "0:3,2:14,5:3";
    let log = run(Policy::Energy, &[PacketApp::Dpi], sched, 7.0);
    let first = &log.decisions[0];
    assert_eq!(first.action, Action::Initial);
    assert_eq!(
        first.to.devices,
        vec!["modelled:uhd630".to_string()],
        "{}",
        show(&log.decisions)
    );
    assert_prompt(&log, sched);
    // Back to the low rate: back to the lowest-power placement.
    let last = log.decisions.last().unwrap();
    assert_eq!(
        last.to.devices,
        vec!["modelled:uhd630".to_string()],
        "{}",
        show(&log.decisions)
    );
}

#[test]
fn latency_policy_adds_a_device_changes_batch_size_and_releases() {
    // AES alone: the CPU at 1024 packets has the lowest latency at 2 Gbit/s; at 16 Gbit/s no single device
    // sustains the rate with headroom, so a second one is added; at 26 Gbit/s the placement needs larger
    // batches; at 2 Gbit/s again it returns to one device and the small batch.
    let sched = "0:2,2:16,4:26,6:2";
    let log = run(Policy::Latency, &[PacketApp::Aes], sched, 8.0);
    assert_prompt(&log, sched);
    assert!(
        within(&log, PacketApp::Aes, 2.0, |d| d.action == Action::AddDevice),
        "{}",
        show(&log.decisions)
    );
    assert!(
        within(&log, PacketApp::Aes, 4.0, |d| d
            .from
            .as_ref()
            .is_some_and(|f| f.batch < d.to.batch)),
        "{}",
        show(&log.decisions)
    );
    assert!(
        within(&log, PacketApp::Aes, 6.0, |d| d.action
            == Action::ReleaseDevice),
        "{}",
        show(&log.decisions)
    );
    assert_eq!(
        log.decisions.first().map(|d| &d.to),
        log.decisions.last().map(|d| &d.to)
    );
}

#[test]
fn policy_switch_on_the_fly_releases_the_discrete_gpu() {
    // Figure 4(c)-(d): maximum throughput, then an energy policy at 1.5 s; the discrete GPU is shut down.
    let profile = Arc::new(Profile::pythia_paper());
    let cfg = MonitorConfig::from_profile(&profile);
    let apps = [PacketApp::Aes];
    let mut m = Monitor::new(profile, Policy::Throughput, cfg, &apps);
    let scheds = [RateSchedule::constant(8.0)];
    let sim = SimConfig {
        interval_s: INTERVAL,
        step_s: 0.01,
        duration_s: 3.0,
        policy_changes: vec![(1.5, Policy::Energy)],
    };
    let log = simulate(&mut m, &apps, &scheds, &sim);
    assert!(
        log.decisions[0]
            .to
            .devices
            .contains(&"modelled:gtx1080ti".to_string()),
        "{}",
        show(&log.decisions)
    );
    let after: Vec<&Decision> = log.decisions.iter().filter(|d| d.t_s >= 1.5).collect();
    assert!(
        after.iter().any(|d| d.policy == Policy::Energy
            && !d.to.devices.contains(&"modelled:gtx1080ti".to_string())),
        "{}",
        show(&log.decisions)
    );
    assert!(after.iter().all(|d| d.t_s <= 1.5 + 2.0 * INTERVAL + 1e-9));
}
