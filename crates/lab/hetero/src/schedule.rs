//! Rate schedules: the offered traffic rate as a function of time, steps and bursts (Pythia §V, Figure 4).
//!
//! Syntax (`--rate-schedule`): comma-separated items, times in `s` (default) or `ms`, rates in Gbit/s (default,
//! `g`) or Mbit/s (`m`):
//! * `T:RATE` — a step: from time `T` on the rate is `RATE`;
//! * `T+D:RATE` — a burst: between `T` and `T + D` the rate is `RATE`, then back to the step in force.
//!
//! Example: `0:5,10:20,20:5,15+0.5:40` is 5 Gbit/s, 20 from 10 s, a 40 Gbit/s burst of half a second at 15 s, and
//! 5 again from 20 s. Before the first step the rate is 0.

use serde::{Deserialize, Serialize};

/// One step or burst.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateChange {
    /// Start, seconds.
    pub at_s: f64,
    /// Duration for a burst, `None` for a step.
    pub burst_s: Option<f64>,
    /// Rate, Gbit/s.
    pub gbps: f64,
}

/// A parsed schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateSchedule {
    /// Steps sorted by time.
    pub steps: Vec<RateChange>,
    /// Bursts in the order given.
    pub bursts: Vec<RateChange>,
}

fn parse_time(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("bad time `{s}`"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("bad time `{s}`"));
    }
    Ok(v * scale)
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let s = s.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = s.strip_suffix("gbps").or_else(|| s.strip_suffix('g')) {
        (n.to_string(), 1.0)
    } else if let Some(n) = s.strip_suffix("mbps").or_else(|| s.strip_suffix('m')) {
        (n.to_string(), 1e-3)
    } else {
        (s.clone(), 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("bad rate `{s}`"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("bad rate `{s}`"));
    }
    Ok(v * scale)
}

impl RateSchedule {
    /// A constant rate from time 0.
    pub fn constant(gbps: f64) -> Self {
        Self {
            steps: vec![RateChange {
                at_s: 0.0,
                burst_s: None,
                gbps,
            }],
            bursts: Vec::new(),
        }
    }

    /// Parses the syntax in the module docs.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut s = RateSchedule::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (when, rate) = item
                .split_once(':')
                .ok_or_else(|| format!("`{item}`: expected TIME:RATE"))?;
            let gbps = parse_rate(rate)?;
            match when.split_once('+') {
                Some((t, d)) => s.bursts.push(RateChange {
                    at_s: parse_time(t)?,
                    burst_s: Some(parse_time(d)?),
                    gbps,
                }),
                None => s.steps.push(RateChange {
                    at_s: parse_time(when)?,
                    burst_s: None,
                    gbps,
                }),
            }
        }
        if s.steps.is_empty() && s.bursts.is_empty() {
            return Err("empty rate schedule".into());
        }
        s.steps.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        Ok(s)
    }

    /// The offered rate at time `t_s`, Gbit/s.
    pub fn rate_at(&self, t_s: f64) -> f64 {
        for b in self.bursts.iter().rev() {
            if t_s >= b.at_s && t_s < b.at_s + b.burst_s.unwrap_or(0.0) {
                return b.gbps;
            }
        }
        self.steps
            .iter()
            .rev()
            .find(|c| t_s >= c.at_s)
            .map_or(0.0, |c| c.gbps)
    }

    /// Times at which the rate changes (steps, burst starts and ends), sorted.
    pub fn change_points(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.steps.iter().map(|c| c.at_s).collect();
        for b in &self.bursts {
            v.push(b.at_s);
            v.push(b.at_s + b.burst_s.unwrap_or(0.0));
        }
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    /// The time of the last change, seconds.
    pub fn last_change(&self) -> f64 {
        self.change_points().last().copied().unwrap_or(0.0)
    }

    /// The same schedule with every rate multiplied by `factor` (slow motion, see
    /// [`crate::profile::Profile::slowed`]).
    pub fn scaled(&self, factor: f64) -> RateSchedule {
        let f = if factor.is_finite() && factor >= 0.0 {
            factor
        } else {
            1.0
        };
        let scale = |c: &RateChange| RateChange {
            gbps: c.gbps * f,
            ..*c
        };
        RateSchedule {
            steps: self.steps.iter().map(scale).collect(),
            bursts: self.bursts.iter().map(scale).collect(),
        }
    }

    /// Gigabits offered between `t0_s` and `t1_s` (the integral of the rate; 0 when `t1_s <= t0_s`). Exact: the
    /// rate is constant between change points, so the integral is a sum over the segments in between. The
    /// real-clock runtime paces its replay with it, so a packet is released when the bits offered so far cover it.
    pub fn gbit_between(&self, t0_s: f64, t1_s: f64) -> f64 {
        if t1_s.partial_cmp(&t0_s) != Some(std::cmp::Ordering::Greater) {
            return 0.0;
        }
        let mut total = 0.0;
        let mut from = t0_s;
        for c in self.change_points() {
            if c <= from {
                continue;
            }
            if c >= t1_s {
                break;
            }
            total += self.rate_at(from) * (c - from);
            from = c;
        }
        total + self.rate_at(from) * (t1_s - from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn steps_and_bursts() {
        let s = RateSchedule::parse("0:5, 10s:20g, 20:5000m, 15+500ms:40").unwrap();
        assert_eq!(s.rate_at(0.0), 5.0);
        assert_eq!(s.rate_at(9.99), 5.0);
        assert_eq!(s.rate_at(10.0), 20.0);
        assert_eq!(s.rate_at(15.2), 40.0);
        assert_eq!(s.rate_at(15.5), 20.0);
        assert_eq!(s.rate_at(25.0), 5.0);
        assert_eq!(s.change_points(), vec![0.0, 10.0, 15.0, 15.5, 20.0]);
        assert!(RateSchedule::parse("").is_err());
        assert!(RateSchedule::parse("1:x").is_err());
        assert!(RateSchedule::parse("-1:3").is_err());
        assert!(RateSchedule::parse("5").is_err());
    }

    #[test]
    fn integral_over_steps_and_bursts() {
        let s = RateSchedule::parse("0:5,10:20,15+0.5:40").unwrap();
        assert_eq!(s.gbit_between(0.0, 10.0), 50.0);
        assert_eq!(s.gbit_between(9.0, 11.0), 25.0);
        assert!((s.gbit_between(14.0, 16.0) - (20.0 + 20.0 + 10.0)).abs() < 1e-9);
        assert_eq!(s.gbit_between(3.0, 3.0), 0.0);
        assert_eq!(s.gbit_between(4.0, 3.0), 0.0);
    }

    proptest! {
        /// The integral is additive: splitting an interval anywhere gives the same total.
        #[test]
        fn integral_is_additive(a in 0.0f64..30.0, b in 0.0f64..30.0, c in 0.0f64..30.0) {
            let s = RateSchedule::parse("0:5,10:20,20:5,15+0.5:40,3+2:1").unwrap();
            let mut v = [a, b, c];
            v.sort_by(f64::total_cmp);
            let whole = s.gbit_between(v[0], v[2]);
            let parts = s.gbit_between(v[0], v[1]) + s.gbit_between(v[1], v[2]);
            prop_assert!((whole - parts).abs() < 1e-6 * whole.max(1.0));
        }

        #[test]
        fn parse_never_panics(s in ".{0,60}") {
            if let Ok(r) = RateSchedule::parse(&s) {
                let _ = r.rate_at(1.0);
            }
        }
    }
}
