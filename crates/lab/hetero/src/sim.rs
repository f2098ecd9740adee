//! The online scheduler on a virtual clock: offered traffic from a rate schedule, service from the profile.
//!
//! This is how `hetero run` exercises placements on devices that are not here (modelled devices) and how the
//! tests check the monitor's decisions deterministically. Time advances in fixed steps; in each step every
//! application is offered `rate × step` bits, its placement serves up to `capacity × step` of them plus what was
//! queued before, and the rest waits in a bounded backlog (one second of the offered rate; what overflows is
//! counted as dropped). Latency is the placement's batch latency plus the time to drain the backlog. Every
//! monitor interval the [`Monitor`] sees the interval's offered and achieved rates and latency, exactly as the
//! real runtime reports them.

use serde::{Deserialize, Serialize};

use crate::kernels::PacketApp;
use crate::monitor::{Decision, Monitor, Observation, Policy};
use crate::schedule::RateSchedule;

/// One point of the timeline (per monitor interval).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// End of the interval, seconds.
    pub t_s: f64,
    /// Offered rate summed over applications, Gbit/s.
    pub offered_gbps: f64,
    /// Processed rate summed over applications, Gbit/s.
    pub achieved_gbps: f64,
    /// Largest mean batch latency over applications, µs.
    pub latency_us: f64,
    /// Devices in use.
    pub active_devices: Vec<String>,
    /// Power of the devices in use, W.
    pub power_w: f64,
    /// Where the power figure comes from.
    pub power_source: crate::energy::PowerSource,
    /// Per application: (app, offered, achieved, latency µs, batch).
    pub apps: Vec<(PacketApp, f64, f64, f64, usize)>,
    /// Payload waiting at the end of the interval (queued, not yet on a device), Gbit, summed over applications.
    #[serde(default)]
    pub backlog_gbit: f64,
    /// Payload dropped during the interval because a backlog was full, Gbit.
    #[serde(default)]
    pub dropped_gbit: f64,
}

/// Outcome of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunLog {
    /// Every decision, in order.
    pub decisions: Vec<Decision>,
    /// One sample per monitor interval.
    pub samples: Vec<Sample>,
    /// Bits dropped because a backlog overflowed.
    pub dropped_bits: f64,
    /// Whether the clock was virtual (modelled timings) or the wall clock.
    pub virtual_clock: bool,
}

/// Virtual-clock settings.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Monitor interval, seconds.
    pub interval_s: f64,
    /// Simulation step, seconds (a fraction of the interval).
    pub step_s: f64,
    /// Length of the run, seconds.
    pub duration_s: f64,
    /// Policy changes on the fly: (time, policy).
    pub policy_changes: Vec<(f64, Policy)>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            interval_s: 0.1,
            step_s: 0.01,
            duration_s: 10.0,
            policy_changes: Vec::new(),
        }
    }
}

/// Runs `monitor` against `schedules` (one per application, same order as `apps`) on a virtual clock.
pub fn simulate(
    monitor: &mut Monitor,
    apps: &[PacketApp],
    schedules: &[RateSchedule],
    cfg: &SimConfig,
) -> RunLog {
    let mut log = RunLog {
        virtual_clock: true,
        ..Default::default()
    };
    let n = apps.len();
    let mut backlog = vec![0.0f64; n];
    let mut offered_acc = vec![0.0f64; n];
    let mut achieved_acc = vec![0.0f64; n];
    let mut latency_acc = vec![0.0f64; n];
    let mut queue_acc = vec![0.0f64; n];
    let mut steps_acc = 0usize;
    let step = cfg.step_s.max(1e-6);
    let steps_per_interval = ((cfg.interval_s / step).round() as usize).max(1);
    let total_steps = (cfg.duration_s / step).round() as usize;
    let mut policy_changes = cfg.policy_changes.clone();
    policy_changes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut next_policy = 0;
    let mut dropped_before = 0.0;

    // Initial placement at the rates of time zero.
    let obs0: Vec<Observation> = apps
        .iter()
        .zip(schedules)
        .map(|(&app, s)| Observation {
            app,
            offered_gbps: s.rate_at(0.0),
            achieved_gbps: 0.0,
            latency_us: 0.0,
            busy: None,
        })
        .collect();
    log.decisions.extend(monitor.tick(0.0, &obs0));

    for k in 1..=total_steps {
        let t0 = (k - 1) as f64 * step;
        for (i, &app) in apps.iter().enumerate() {
            let rate = schedules.get(i).map_or(0.0, |s| s.rate_at(t0));
            let offered_bits = rate * 1e9 * step;
            let (cap, lat) = match monitor.placement(app) {
                Some(p) => monitor
                    .score(app, &p.devices, p.batch, rate)
                    .map_or((0.0, 0.0), |s| (s.capacity_gbps, s.latency_us)),
                None => (0.0, 0.0),
            };
            let can = cap * 1e9 * step;
            let queued = backlog[i] + offered_bits;
            let served = queued.min(can);
            backlog[i] = queued - served;
            let cap_bits = (rate.max(cap) * 1e9).max(1.0);
            if backlog[i] > cap_bits {
                log.dropped_bits += backlog[i] - cap_bits;
                backlog[i] = cap_bits;
            }
            offered_acc[i] += offered_bits;
            achieved_acc[i] += served;
            let queue_us = if cap > 0.0 {
                backlog[i] / (cap * 1e9) * 1e6
            } else {
                0.0
            };
            latency_acc[i] += lat;
            queue_acc[i] += queue_us;
        }
        steps_acc += 1;
        if k % steps_per_interval == 0 {
            let t = k as f64 * step;
            let dt = steps_acc as f64 * step;
            let obs: Vec<Observation> = apps
                .iter()
                .enumerate()
                .map(|(i, &app)| Observation {
                    app,
                    offered_gbps: offered_acc[i] / dt / 1e9,
                    achieved_gbps: achieved_acc[i] / dt / 1e9,
                    latency_us: latency_acc[i] / steps_acc as f64,
                    busy: None,
                })
                .collect();
            // The timeline shows what a packet waits (queue + batch); the monitor sees batch latency only, as
            // the real runtime measures it per batch.
            let shown: Vec<Observation> = obs
                .iter()
                .enumerate()
                .map(|(i, o)| Observation {
                    latency_us: o.latency_us + queue_acc[i] / steps_acc as f64,
                    ..*o
                })
                .collect();
            let mut smp = sample(monitor, t, &shown);
            smp.backlog_gbit = backlog.iter().sum::<f64>() / 1e9;
            smp.dropped_gbit = (log.dropped_bits - dropped_before) / 1e9;
            dropped_before = log.dropped_bits;
            log.samples.push(smp);
            while next_policy < policy_changes.len() && policy_changes[next_policy].0 <= t {
                monitor.set_policy(policy_changes[next_policy].1);
                next_policy += 1;
            }
            log.decisions.extend(monitor.tick(t, &obs));
            offered_acc.iter_mut().for_each(|x| *x = 0.0);
            achieved_acc.iter_mut().for_each(|x| *x = 0.0);
            latency_acc.iter_mut().for_each(|x| *x = 0.0);
            queue_acc.iter_mut().for_each(|x| *x = 0.0);
            steps_acc = 0;
        }
    }
    log
}

/// A timeline point from the monitor's current placements and the interval's observations (power from the
/// profile's model at the observed load, so labelled `estimated`).
pub fn sample(monitor: &Monitor, t_s: f64, obs: &[Observation]) -> Sample {
    let mut apps = Vec::new();
    // Per device: idle power once, plus the dynamic part of every application placed there.
    let mut per_device: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    for o in obs {
        let batch = monitor.placement(o.app).map_or(0, |p| p.batch);
        apps.push((o.app, o.offered_gbps, o.achieved_gbps, o.latency_us, batch));
        if let Some(p) = monitor.placement(o.app) {
            let share = o.achieved_gbps / p.devices.len().max(1) as f64;
            for d in &p.devices {
                if let Some((idle, dynamic)) = monitor.power_parts(o.app, d, p.batch, share) {
                    let e = per_device.entry(d.clone()).or_insert((0.0, 0.0));
                    e.0 = e.0.max(idle);
                    e.1 += dynamic;
                }
            }
        }
    }
    let power = per_device.values().map(|(i, d)| i + d).sum();
    Sample {
        t_s,
        offered_gbps: obs.iter().map(|o| o.offered_gbps).sum(),
        achieved_gbps: obs.iter().map(|o| o.achieved_gbps).sum(),
        latency_us: obs.iter().map(|o| o.latency_us).fold(0.0, f64::max),
        active_devices: monitor.active_devices(),
        power_w: power,
        power_source: crate::energy::PowerSource::Estimated,
        apps,
        backlog_gbit: 0.0,
        dropped_gbit: 0.0,
    }
}
