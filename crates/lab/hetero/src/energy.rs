//! Power: read from the hardware where the machine lets us, otherwise estimated from a stated model.
//!
//! * **RAPL** (Intel/AMD package energy): `/sys/class/powercap/intel-rapl:N/energy_uj`, a cumulative micro-joule
//!   counter per package; power is the difference between two reads over the time between them, with the
//!   counter's wrap at `max_energy_range_uj` handled. Since Linux 5.10 (CVE-2020-8694) the file is root-only on
//!   most distributions: we read it when permitted and otherwise say so. Virtual machines usually have no
//!   powercap at all.
//! * **NVML** (feature `nvml`, NVIDIA GPUs): `nvmlDeviceGetPowerUsage`, milliwatts, readable without root.
//!   `nvml-wrapper` loads `libnvidia-ml.so` at run time, so nothing is needed at build time.
//! * **Estimated**: `idle + (busy − idle) × utilisation`, utilisation being the fraction of the interval the device
//!   was busy. For the CPU pool, busy = idle + 8 W per worker thread and idle = 10 W (a rough per-core figure for
//!   a server core under load; not this machine's measured value); modelled devices use the TDPs given in
//!   [`crate::profile`]. Every such figure is labelled `estimated`.

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Where a power figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PowerSource {
    /// Package energy counters (RAPL).
    Rapl,
    /// NVIDIA Management Library.
    Nvml,
    /// Computed from the documented model, not read.
    Estimated,
    /// Nothing known.
    None,
}

impl PowerSource {
    /// Label used in output.
    pub fn label(self) -> &'static str {
        match self {
            PowerSource::Rapl => "rapl",
            PowerSource::Nvml => "nvml",
            PowerSource::Estimated => "estimated",
            PowerSource::None => "-",
        }
    }
}

/// The linear power model used where nothing can be read.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerModel {
    /// Watts when idle.
    pub idle_w: f64,
    /// Watts when fully busy.
    pub busy_w: f64,
}

impl PowerModel {
    /// The CPU pool model: 10 W idle plus 8 W per busy worker thread.
    pub fn cpu(threads: usize) -> Self {
        Self {
            idle_w: 10.0,
            busy_w: 10.0 + 8.0 * threads as f64,
        }
    }

    /// Power at `utilisation` in [0, 1].
    pub fn at(&self, utilisation: f64) -> f64 {
        self.idle_w + (self.busy_w - self.idle_w) * utilisation.clamp(0.0, 1.0)
    }
}

struct RaplDomain {
    path: PathBuf,
    max_uj: u64,
    last_uj: u64,
}

/// Package energy counters.
pub struct Rapl {
    domains: Vec<RaplDomain>,
    last: Instant,
}

impl Rapl {
    /// Opens every package domain under `/sys/class/powercap`; an error says why none is readable.
    pub fn open() -> Result<Rapl, String> {
        Self::open_at(std::path::Path::new("/sys/class/powercap"))
    }

    /// [`Rapl::open`] under another root (tests).
    pub fn open_at(root: &std::path::Path) -> Result<Rapl, String> {
        let rd = std::fs::read_dir(root)
            .map_err(|e| format!("RAPL: {} not available ({e})", root.display()))?;
        let mut domains = Vec::new();
        let mut denied = None;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Top-level package domains only (`intel-rapl:0`, not the `intel-rapl:0:0` sub-domains).
            if !name.starts_with("intel-rapl:") || name.matches(':').count() != 1 {
                continue;
            }
            let path = e.path().join("energy_uj");
            match std::fs::read_to_string(&path) {
                Ok(v) => {
                    let Ok(last_uj) = v.trim().parse::<u64>() else {
                        continue;
                    };
                    let max_uj = std::fs::read_to_string(e.path().join("max_energy_range_uj"))
                        .ok()
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(u64::MAX);
                    domains.push(RaplDomain {
                        path,
                        max_uj,
                        last_uj,
                    });
                }
                Err(err) => {
                    denied = Some(format!(
                        "RAPL: {} not readable ({err}); needs root on this kernel",
                        path.display()
                    ))
                }
            }
        }
        if domains.is_empty() {
            return Err(denied
                .unwrap_or_else(|| format!("RAPL: no package domain under {}", root.display())));
        }
        Ok(Rapl {
            domains,
            last: Instant::now(),
        })
    }

    /// Mean package power (all packages) since the previous call, watts.
    pub fn sample(&mut self) -> Option<f64> {
        let now = Instant::now();
        let dt = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        let mut joules = 0.0;
        for d in &mut self.domains {
            let v: u64 = std::fs::read_to_string(&d.path).ok()?.trim().parse().ok()?;
            let delta = if v >= d.last_uj {
                v - d.last_uj
            } else {
                d.max_uj.saturating_sub(d.last_uj).saturating_add(v)
            };
            d.last_uj = v;
            joules += delta as f64 * 1e-6;
        }
        (dt > 0.0).then(|| joules / dt)
    }
}

/// NVIDIA GPU power through NVML.
#[cfg(feature = "nvml")]
pub struct Nvml {
    nvml: nvml_wrapper::Nvml,
}

#[cfg(feature = "nvml")]
impl Nvml {
    /// Loads `libnvidia-ml.so`; an error says why not.
    pub fn open() -> Result<Nvml, String> {
        nvml_wrapper::Nvml::init()
            .map(|nvml| Nvml { nvml })
            .map_err(|e| format!("NVML: not available ({e})"))
    }

    /// Power of each GPU: (name, watts).
    pub fn power(&self) -> Vec<(String, f64)> {
        let n = self.nvml.device_count().unwrap_or(0);
        (0..n)
            .filter_map(|i| {
                let d = self.nvml.device_by_index(i).ok()?;
                let mw = d.power_usage().ok()?;
                Some((
                    d.name().unwrap_or_else(|_| format!("gpu{i}")),
                    f64::from(mw) / 1000.0,
                ))
            })
            .collect()
    }
}

/// Everything readable on this machine, opened once.
pub struct PowerMeters {
    /// RAPL when readable.
    pub rapl: Option<Rapl>,
    /// NVML when loadable.
    #[cfg(feature = "nvml")]
    pub nvml: Option<Nvml>,
    /// Why a source is missing.
    pub notes: Vec<String>,
}

impl PowerMeters {
    /// Opens what can be opened.
    pub fn open() -> Self {
        let mut notes = Vec::new();
        let rapl = Rapl::open().map_err(|e| notes.push(e)).ok();
        #[cfg(feature = "nvml")]
        let nvml = Nvml::open().map_err(|e| notes.push(e)).ok();
        #[cfg(not(feature = "nvml"))]
        notes.push("NVML: built without the `nvml` feature".into());
        Self {
            rapl,
            #[cfg(feature = "nvml")]
            nvml,
            notes,
        }
    }

    /// CPU package power since the last call, if RAPL is readable.
    pub fn cpu_power(&mut self) -> Option<f64> {
        self.rapl.as_mut()?.sample()
    }

    /// Total NVIDIA GPU power now, if NVML is loadable.
    pub fn gpu_power(&self) -> Option<f64> {
        #[cfg(feature = "nvml")]
        {
            let p = self.nvml.as_ref()?.power();
            if p.is_empty() {
                None
            } else {
                Some(p.iter().map(|x| x.1).sum())
            }
        }
        #[cfg(not(feature = "nvml"))]
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rapl_reads_deltas_and_wraps() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("intel-rapl:0");
        std::fs::create_dir_all(pkg.join("intel-rapl:0:0")).unwrap();
        std::fs::create_dir_all(dir.path().join("intel-rapl:0:0")).unwrap();
        std::fs::write(pkg.join("energy_uj"), "999000000\n").unwrap();
        std::fs::write(pkg.join("max_energy_range_uj"), "1000000000\n").unwrap();
        let mut r = Rapl::open_at(dir.path()).unwrap();
        assert_eq!(r.domains.len(), 1);
        // Wraps: 999 J -> 1000 J (max) -> 4 J: 5 J consumed.
        std::fs::write(pkg.join("energy_uj"), "4000000\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let w = r.sample().unwrap();
        assert!(w > 0.0);
        assert!((r.domains[0].last_uj) == 4_000_000);
    }

    #[test]
    fn missing_powercap_is_a_message() {
        let e = Rapl::open_at(std::path::Path::new("/nonexistent/powercap"))
            .err()
            .unwrap();
        assert!(e.contains("RAPL"));
        let m = PowerMeters::open();
        // On this kind of machine (VM, no root): nothing to read, and the notes say so.
        if m.rapl.is_none() {
            assert!(m.notes.iter().any(|n| n.contains("RAPL")));
        }
    }

    #[test]
    fn model_is_linear_and_clamped() {
        let m = PowerModel::cpu(2);
        assert_eq!(m.at(0.0), 10.0);
        assert_eq!(m.at(1.0), 26.0);
        assert_eq!(m.at(7.0), 26.0);
        assert_eq!(m.at(0.5), 18.0);
    }
}
