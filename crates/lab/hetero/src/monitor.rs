//! The monitor: Pythia's online scheduler (§IV). Every interval it updates the live figures of the active
//! configuration, compares the alternatives from the profile, and re-places each application.
//!
//! A *placement* is a set of devices and one batch size for an application; its packets are split over the devices
//! by flow (see [`crate::batch`]), equally, so its capacity is `devices × the slowest device's rate`. Figures of a
//! device depend on how many *other* applications are placed on it (the co-worker count the profile is indexed by).
//!
//! Each tick, for every application in turn (the others held where they are):
//! 1. **Live figures.** If the application was saturated (achieved < offered), the achieved rate is a measurement of
//!    the active placement's capacity, and replaces the profile's figure for it from now on; the observed latency
//!    always does. This is how the scheduler "re-trains itself" and sees interference the profile did not.
//! 2. **Feasible placements** are those whose capacity covers the offered rate times a headroom (default 1.15).
//! 3. **Choice by policy** among the feasible ones:
//!    * `throughput`: fewest devices, then the highest capacity (room for bursts), then the lowest latency;
//!    * `latency`: the lowest batch latency, then fewest devices, then the lowest power;
//!    * `energy`: the lowest power at the offered load (`idle + (busy − idle) × utilisation`, summed over the
//!      placement's devices; unplaced devices count as powered down), then the lowest latency.
//!
//!    When nothing is feasible, the placement with the highest capacity wins whatever the policy: this is the
//!    "add a device when the offered rate exceeds what the active ones sustain" rule, and preferring fewer devices
//!    when feasible is the "release it when the rate falls" rule.
//! 4. **Hysteresis.** A feasible current placement is kept unless the best one has fewer devices or is better on
//!    the policy's primary metric by more than `hysteresis` (default 5 %), so measurement noise does not make it
//!    flap.
//!
//! The monitor is clock-free: it is given the time and the observations, so the same code runs under the real
//! runtime (wall clock) and the simulator (virtual clock), and tests are deterministic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::kernels::PacketApp;
use crate::profile::{Estimate, Profile};

/// What the scheduler optimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Maximise the processed rate.
    Throughput,
    /// Minimise batch latency.
    Latency,
    /// Minimise power.
    Energy,
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "throughput" => Ok(Policy::Throughput),
            "latency" => Ok(Policy::Latency),
            "energy" => Ok(Policy::Energy),
            o => Err(format!(
                "unknown policy `{o}` (throughput, latency or energy)"
            )),
        }
    }
}

/// Devices and batch size of one application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Placement {
    /// Device ids, in profile order.
    pub devices: Vec<String>,
    /// Packets per batch.
    pub batch: usize,
}

/// Monitor settings.
#[derive(Clone, Debug)]
pub struct MonitorConfig {
    /// Candidate devices (ids in the profile).
    pub devices: Vec<String>,
    /// Candidate batch sizes.
    pub batches: Vec<usize>,
    /// Most devices one application may use.
    pub max_devices: usize,
    /// Capacity must exceed offered × headroom to count as sustaining it.
    pub headroom: f64,
    /// Relative improvement needed to leave a feasible placement.
    pub hysteresis: f64,
    /// Weight of a new live measurement in the running figure (exponential average).
    pub live_weight: f64,
    /// Ticks after a change during which an application is only moved when it must be (its placement no longer
    /// sustains the offered rate) or when it can release a device. Applications share devices, so moving one
    /// changes the others' co-worker counts; without this they can chase each other.
    pub cooldown_ticks: u32,
}

impl MonitorConfig {
    /// Every device and batch size of `profile`, up to two devices per application.
    pub fn from_profile(profile: &Profile) -> Self {
        let devices = profile.devices();
        let mut batches: Vec<usize> = profile.entries.iter().map(|e| e.batch).collect();
        batches.sort_unstable();
        batches.dedup();
        Self {
            devices,
            batches,
            max_devices: 2,
            headroom: 1.15,
            hysteresis: 0.05,
            live_weight: 0.5,
            cooldown_ticks: 5,
        }
    }
}

/// What the monitor saw of one application over the last interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Application.
    pub app: PacketApp,
    /// Offered rate, Gbit/s.
    pub offered_gbps: f64,
    /// Processed rate, Gbit/s.
    pub achieved_gbps: f64,
    /// Mean batch latency, µs (0 when no batch completed).
    pub latency_us: f64,
    /// Fraction of the interval the placement's busiest device spent running this application's batches, when
    /// known. The real-clock runtime measures it; the virtual clock leaves it `None`. With it, a placement counts
    /// as saturated only when its device was busy nearly all the time ([`BUSY_SATURATED`]): on the real clock a
    /// pipeline filling up, a partial window or a batch finishing just after the tick make `achieved < offered`
    /// for a while without any lack of capacity, and taking those for capacity figures would poison the profile.
    #[serde(default)]
    pub busy: Option<f64>,
}

/// Busy fraction from which a placement that fell short of its offered rate counts as saturated.
pub const BUSY_SATURATED: f64 = 0.9;

/// Kind of change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// First placement.
    Initial,
    /// More devices.
    AddDevice,
    /// Fewer devices.
    ReleaseDevice,
    /// Same number of devices, another device set (maybe another batch too).
    SwitchDevice,
    /// Same devices, another batch size.
    Resize,
}

/// One decision, as written to the decision log (one JSON object per line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Time of the tick, seconds since the start.
    pub t_s: f64,
    /// Application re-placed.
    pub app: PacketApp,
    /// Policy in force.
    pub policy: Policy,
    /// Kind of change.
    pub action: Action,
    /// Placement before.
    pub from: Option<Placement>,
    /// Placement after.
    pub to: Placement,
    /// Offered rate seen, Gbit/s.
    pub offered_gbps: f64,
    /// Estimated capacity of the new placement, Gbit/s.
    pub capacity_gbps: f64,
    /// Estimated batch latency of the new placement, µs.
    pub latency_us: f64,
    /// Estimated power of the new placement at the offered load, W.
    pub power_w: f64,
    /// Why, in words.
    pub reason: String,
}

impl Decision {
    /// One line of the decision log (JSON, no trailing newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// Figures of a candidate placement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Capacity, Gbit/s.
    pub capacity_gbps: f64,
    /// Batch latency, µs.
    pub latency_us: f64,
    /// Power at the offered load, W.
    pub power_w: f64,
    /// Devices used.
    pub devices: usize,
}

/// The online scheduler's state.
pub struct Monitor {
    cfg: MonitorConfig,
    policy: Policy,
    profile: Arc<Profile>,
    live: HashMap<(PacketApp, String, usize, usize), (f64, f64)>,
    placements: BTreeMap<PacketApp, Placement>,
    apps: Vec<PacketApp>,
    ticks: u64,
    last_change: HashMap<PacketApp, u64>,
    live_tick: HashMap<PacketApp, u64>,
}

impl Monitor {
    /// A monitor for `apps`, with initial placements chosen for an offered rate of zero.
    pub fn new(
        profile: Arc<Profile>,
        policy: Policy,
        cfg: MonitorConfig,
        apps: &[PacketApp],
    ) -> Self {
        Self {
            cfg,
            policy,
            profile,
            live: HashMap::new(),
            placements: BTreeMap::new(),
            apps: apps.to_vec(),
            ticks: 0,
            last_change: HashMap::new(),
            live_tick: HashMap::new(),
        }
    }

    /// Changes the policy (Figure 4(c)-(d): policies changed on the fly).
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
    }

    /// The settings it was built with (candidate devices and batch sizes, ...).
    pub fn config(&self) -> &MonitorConfig {
        &self.cfg
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Current placement of `app`.
    pub fn placement(&self, app: PacketApp) -> Option<&Placement> {
        self.placements.get(&app)
    }

    /// All current placements.
    pub fn placements(&self) -> &BTreeMap<PacketApp, Placement> {
        &self.placements
    }

    /// Devices used by any application.
    pub fn active_devices(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .placements
            .values()
            .flat_map(|p| p.devices.iter().cloned())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    fn coworkers(&self, app: PacketApp, device: &str) -> usize {
        self.placements
            .iter()
            .filter(|(a, p)| **a != app && p.devices.iter().any(|d| d == device))
            .count()
    }

    fn estimate(&self, app: PacketApp, device: &str, batch: usize, co: usize) -> Option<Estimate> {
        let mut e = self.profile.estimate(app, device, batch, co)?;
        if let Some(&(g, l)) = self.live.get(&(app, device.to_string(), batch, co)) {
            if g > 0.0 {
                e.gbps = g;
            }
            if l > 0.0 {
                e.latency_us = l;
            }
        }
        Some(e)
    }

    /// Figures of placing `app` on `devices` with `batch`, at `offered` Gbit/s.
    pub fn score(
        &self,
        app: PacketApp,
        devices: &[String],
        batch: usize,
        offered: f64,
    ) -> Option<Score> {
        let mut min_g = f64::INFINITY;
        let mut lat: f64 = 0.0;
        let mut ests = Vec::new();
        for d in devices {
            let e = self.estimate(app, d, batch, self.coworkers(app, d))?;
            min_g = min_g.min(e.gbps);
            lat = lat.max(e.latency_us);
            ests.push(e);
        }
        if ests.is_empty() {
            return None;
        }
        let n = ests.len() as f64;
        let share = offered / n;
        let power = ests
            .iter()
            .map(|e| {
                e.idle_power_w + (e.power_w - e.idle_power_w) * (share / e.gbps.max(1e-9)).min(1.0)
            })
            .sum();
        Some(Score {
            capacity_gbps: min_g * n,
            latency_us: lat,
            power_w: power,
            devices: ests.len(),
        })
    }

    /// Power of `app` alone on `device` at `share` Gbit/s: (idle W, dynamic W above idle).
    pub fn power_parts(
        &self,
        app: PacketApp,
        device: &str,
        batch: usize,
        share: f64,
    ) -> Option<(f64, f64)> {
        let e = self.estimate(app, device, batch, self.coworkers(app, device))?;
        let util = (share / e.gbps.max(1e-9)).clamp(0.0, 1.0);
        Some((e.idle_power_w, (e.power_w - e.idle_power_w).max(0.0) * util))
    }

    fn candidates(&self) -> Vec<Vec<String>> {
        let d = &self.cfg.devices;
        let mut out: Vec<Vec<String>> = d.iter().map(|x| vec![x.clone()]).collect();
        if self.cfg.max_devices >= 2 {
            for i in 0..d.len() {
                for j in i + 1..d.len() {
                    out.push(vec![d[i].clone(), d[j].clone()]);
                }
            }
        }
        if self.cfg.max_devices >= 3 && d.len() >= 3 {
            out.push(d.clone());
        }
        out
    }

    /// Ordering of two feasible scores under the policy (Less = better).
    fn better(&self, a: &Score, b: &Score) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let c = |x: f64, y: f64| x.total_cmp(&y);
        match self.policy {
            Policy::Throughput => a
                .devices
                .cmp(&b.devices)
                .then(c(b.capacity_gbps, a.capacity_gbps))
                .then(c(a.latency_us, b.latency_us)),
            Policy::Latency => c(a.latency_us, b.latency_us)
                .then(a.devices.cmp(&b.devices))
                .then(c(a.power_w, b.power_w)),
            Policy::Energy => c(a.power_w, b.power_w)
                .then(c(a.latency_us, b.latency_us))
                .then(Ordering::Equal),
        }
    }

    /// Whether `best` beats the feasible `current` by enough to move.
    fn worth_moving(&self, best: &Score, current: &Score) -> bool {
        if best.devices < current.devices {
            return true;
        }
        let h = 1.0 + self.cfg.hysteresis;
        match self.policy {
            Policy::Throughput => {
                best.devices == current.devices && best.capacity_gbps > current.capacity_gbps * h
            }
            Policy::Latency => best.latency_us * h < current.latency_us,
            Policy::Energy => best.power_w * h < current.power_w,
        }
    }

    /// One monitor wake-up at time `t_s` with the last interval's observations. Returns the changes made.
    pub fn tick(&mut self, t_s: f64, obs: &[Observation]) -> Vec<Decision> {
        self.ticks += 1;
        // Applications share devices, so one's move changes the others' figures: repeat until nobody moves
        // (bounded), so that a rate change settles within this tick rather than over the following ones.
        let mut decisions = Vec::new();
        for _pass in 0..3 {
            let moved = self.pass(t_s, obs);
            if moved.is_empty() {
                break;
            }
            decisions.extend(moved);
        }
        decisions
    }

    fn pass(&mut self, t_s: f64, obs: &[Observation]) -> Vec<Decision> {
        let mut decisions = Vec::new();
        for app in self.apps.clone() {
            let o = obs
                .iter()
                .find(|o| o.app == app)
                .copied()
                .unwrap_or(Observation {
                    app,
                    offered_gbps: 0.0,
                    achieved_gbps: 0.0,
                    latency_us: 0.0,
                    busy: None,
                });
            // 1. Live figures of the active placement (once per tick).
            let fresh = self.live_tick.get(&app) != Some(&self.ticks);
            self.live_tick.insert(app, self.ticks);
            if let Some(p) = self.placements.get(&app).cloned().filter(|_| fresh) {
                let n = p.devices.len().max(1) as f64;
                let saturated = o.offered_gbps > 0.0
                    && o.achieved_gbps < o.offered_gbps * 0.98
                    && o.busy.is_none_or(|b| b >= BUSY_SATURATED);
                for d in &p.devices {
                    let key = (app, d.clone(), p.batch, self.coworkers(app, d));
                    let w = self.cfg.live_weight;
                    let prev = self.live.get(&key).copied();
                    let g = if saturated && o.achieved_gbps > 0.0 {
                        let m = o.achieved_gbps / n;
                        prev.map_or(
                            m,
                            |(pg, _)| if pg > 0.0 { pg * (1.0 - w) + m * w } else { m },
                        )
                    } else {
                        prev.map_or(0.0, |(pg, _)| pg)
                    };
                    let l = if o.latency_us > 0.0 {
                        prev.map_or(o.latency_us, |(_, pl)| {
                            if pl > 0.0 {
                                pl * (1.0 - w) + o.latency_us * w
                            } else {
                                o.latency_us
                            }
                        })
                    } else {
                        prev.map_or(0.0, |(_, pl)| pl)
                    };
                    self.live.insert(key, (g, l));
                }
            }
            // 2-3. Rank the alternatives.
            let offered = o.offered_gbps;
            let need = offered * self.cfg.headroom;
            let mut best: Option<(Placement, Score)> = None;
            let mut best_any: Option<(Placement, Score)> = None;
            for devs in self.candidates() {
                for &batch in &self.cfg.batches {
                    let Some(s) = self.score(app, &devs, batch, offered) else {
                        continue;
                    };
                    let p = Placement {
                        devices: devs.clone(),
                        batch,
                    };
                    let any_better = best_any.as_ref().is_none_or(|(_, b)| {
                        s.capacity_gbps > b.capacity_gbps
                            || (s.capacity_gbps == b.capacity_gbps && s.latency_us < b.latency_us)
                    });
                    if any_better {
                        best_any = Some((p.clone(), s));
                    }
                    if s.capacity_gbps >= need
                        && best
                            .as_ref()
                            .is_none_or(|(_, b)| self.better(&s, b) == std::cmp::Ordering::Less)
                    {
                        best = Some((p, s));
                    }
                }
            }
            let feasible = best.is_some();
            let Some((target, tscore)) = best.or(best_any) else {
                continue;
            };
            let current = self.placements.get(&app).cloned();
            // 4. Hysteresis.
            let reason;
            if let Some(cur) = &current {
                if *cur == target {
                    continue;
                }
                let cur_score = self.score(app, &cur.devices, cur.batch, offered);
                let cur_feasible = cur_score.is_some_and(|s| s.capacity_gbps >= need);
                if cur_feasible {
                    let cs = cur_score.unwrap_or(tscore);
                    if !feasible || !self.worth_moving(&tscore, &cs) {
                        continue;
                    }
                    let cooling = self.last_change.get(&app).is_some_and(|&t| {
                        t != self.ticks
                            && self.ticks.saturating_sub(t) < u64::from(self.cfg.cooldown_ticks)
                    });
                    if cooling && tscore.devices >= cs.devices {
                        continue;
                    }
                    reason = format!(
                        "{:?} policy: capacity {:.1}→{:.1} Gbit/s, latency {:.0}→{:.0} µs, power {:.1}→{:.1} W",
                        self.policy, cs.capacity_gbps, tscore.capacity_gbps, cs.latency_us, tscore.latency_us, cs.power_w, tscore.power_w
                    )
                    .to_lowercase();
                } else if feasible {
                    reason = format!(
                        "offered {offered:.1} Gbit/s exceeds the current capacity; best feasible placement"
                    );
                } else {
                    // Nothing sustains the rate: move only if it raises capacity noticeably.
                    let cs = cur_score.map_or(0.0, |s| s.capacity_gbps);
                    if tscore.capacity_gbps <= cs * (1.0 + self.cfg.hysteresis) {
                        continue;
                    }
                    reason = format!(
                        "offered {offered:.1} Gbit/s exceeds every placement; highest capacity"
                    );
                }
            } else {
                reason = "initial placement".into();
            }
            let action = match &current {
                None => Action::Initial,
                Some(c) if target.devices.len() > c.devices.len() => Action::AddDevice,
                Some(c) if target.devices.len() < c.devices.len() => Action::ReleaseDevice,
                Some(c) if target.devices != c.devices => Action::SwitchDevice,
                Some(_) => Action::Resize,
            };
            decisions.push(Decision {
                t_s,
                app,
                policy: self.policy,
                action,
                from: current,
                to: target.clone(),
                offered_gbps: offered,
                capacity_gbps: tscore.capacity_gbps,
                latency_us: tscore.latency_us,
                power_w: tscore.power_w,
                reason,
            });
            self.placements.insert(app, target);
            self.last_change.insert(app, self.ticks);
        }
        decisions
    }
}
