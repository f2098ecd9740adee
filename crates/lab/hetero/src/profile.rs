//! The profile table: per application × device × batch size × co-running kernels, what a kernel sustains.
//!
//! The online scheduler never measures alternatives it is not running: it looks them up here (Pythia §IV, "offline
//! analysis tool"), and replaces the entry of the configuration it *is* running with live figures.
//!
//! Two sources fill a table, and every entry says which:
//! * `measured` by the profiler ([`crate::profiler`]) on this machine's devices;
//! * `modelled` from the Pythia paper's published characterisation ([`Profile::pythia_paper`]): Tables I (DPI),
//!   II (AES) and III (MD5) of Giakoumakis et al., measured on an i7-8700K, its UHD Graphics 630 and a GTX 1080 Ti
//!   with 1,500-byte packets. Those tables list, per device, application, batch (1024/4096/16384), co-worker
//!   application (MD5/AES/DPI) and co-worker count (1/3): per-kernel Gbit/s, slow-down against running alone, and
//!   aggregate Gbit/s. The text we have is a PDF extraction whose rows lost their labels; we read each 18-row
//!   block in Table I's order (co-worker MD5, AES, DPI × batch 1024, 4096, 16384 × 1, 3 co-workers), which the
//!   numbers confirm: `gbps / (1 - slowdown)` (the rate alone) agrees to 0.1 Gbit/s across the three co-worker
//!   blocks of every batch size. The alone rate is derived that way (Figure 1 has it only as a plot).
//!   The paper gives latency (Figure 2) and power (Figure 4) only as plots, so for modelled devices we use a
//!   documented model instead: batch latency = launch overhead + transfers over PCIe 3.0 ×8 (discrete only, 6.5
//!   GB/s effective; AES also copies back) + batch bytes at the per-kernel rate; power = idle + (busy − idle) ×
//!   utilisation with busy = the part's TDP (95 W i7-8700K, 15 W UHD 630 share, 250 W GTX 1080 Ti). Those
//!   entries are labelled `estimated` in the power source column.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::device::{DeviceKind, MemoryModel};
use crate::energy::PowerSource;
use crate::kernels::PacketApp;

/// One measured or modelled configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
    /// Application measured.
    pub app: PacketApp,
    /// Device id (`cpu`, `ocl0`, `modelled:gtx1080ti`, ...).
    pub device: String,
    /// Device name as the hardware reports it (or the paper names it).
    pub device_name: String,
    /// Kind: `cpu`, `opencl` or `modelled`.
    pub kind: DeviceKind,
    /// Memory model of the device.
    pub memory: MemoryModel,
    /// Packets per batch.
    pub batch: usize,
    /// Kernels running beside it on the same device.
    pub coworkers: usize,
    /// Application of the co-workers (`None` when alone).
    pub coworker_app: Option<PacketApp>,
    /// Per-kernel throughput, Gbit/s of payload.
    pub gbps: f64,
    /// Throughput of the same configuration alone.
    pub alone_gbps: f64,
    /// `1 - gbps / alone_gbps`.
    pub slowdown: f64,
    /// Sum over this kernel and its co-workers.
    pub aggregate_gbps: f64,
    /// Mean time from a batch's submission to its results, microseconds.
    pub latency_us: f64,
    /// Device power while busy, watts, if known.
    pub power_w: Option<f64>,
    /// Device power while idle, watts, if known.
    pub idle_power_w: Option<f64>,
    /// Where the power figure comes from.
    pub power_source: PowerSource,
    /// `measured` or the citation of the modelled figure.
    pub source: String,
}

/// A set of entries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The entries.
    pub entries: Vec<ProfileEntry>,
    /// Free-form notes (host, command line, what was skipped).
    pub notes: Vec<String>,
}

/// What the scheduler needs about one configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Per-kernel Gbit/s.
    pub gbps: f64,
    /// Batch latency, microseconds.
    pub latency_us: f64,
    /// Busy power, watts.
    pub power_w: f64,
    /// Idle power, watts.
    pub idle_power_w: f64,
}

/// Paper figures, one block per (table app, device): co-worker MD5, AES, DPI × batch 1024, 4096, 16384 × (1, 3)
/// co-workers → (per-kernel Gbit/s, slow-down %, aggregate Gbit/s).
type Block = [[(f64, f64, f64); 6]; 3];

const T1_DPI_GTX: Block = [
    [
        (12.9, 14.6, 25.8),
        (6.9, 54.3, 27.6),
        (12.0, 33.3, 23.9),
        (6.9, 61.7, 27.6),
        (8.5, 49.4, 17.7),
        (4.7, 72.0, 19.8),
    ],
    [
        (13.3, 11.9, 26.7),
        (6.9, 54.3, 27.6),
        (12.9, 28.3, 25.8),
        (6.9, 61.7, 27.6),
        (7.2, 57.1, 14.3),
        (4.9, 70.8, 20.0),
    ],
    [
        (13.8, 8.6, 27.6),
        (6.9, 54.3, 27.6),
        (13.1, 27.2, 26.1),
        (6.9, 61.7, 27.6),
        (8.9, 47.0, 17.9),
        (5.3, 68.5, 21.2),
    ],
];
const T1_DPI_I7: Block = [
    [
        (14.1, 45.8, 27.1),
        (6.7, 74.2, 27.5),
        (14.5, 42.9, 27.2),
        (6.7, 73.6, 27.3),
        (14.6, 42.7, 25.7),
        (6.7, 73.7, 26.6),
    ],
    [
        (18.6, 28.5, 27.2),
        (8.1, 68.8, 21.8),
        (16.5, 35.0, 25.5),
        (7.2, 71.7, 20.9),
        (15.3, 40.0, 24.0),
        (6.5, 74.5, 20.3),
    ],
    [
        (15.0, 42.3, 26.9),
        (7.1, 72.7, 27.3),
        (14.5, 42.9, 27.2),
        (7.1, 72.0, 27.1),
        (14.8, 41.2, 25.6),
        (6.7, 73.7, 25.6),
    ],
];
const T1_DPI_UHD: Block = [
    [
        (13.4, 47.7, 26.9),
        (6.9, 73.0, 27.4),
        (13.8, 50.0, 27.6),
        (6.9, 75.0, 27.6),
        (13.8, 50.2, 27.7),
        (6.9, 75.1, 27.6),
    ],
    [
        (9.4, 63.3, 18.9),
        (3.8, 85.2, 15.1),
        (11.3, 59.1, 22.6),
        (4.3, 84.4, 17.2),
        (11.7, 57.8, 23.4),
        (4.6, 83.4, 18.2),
    ],
    [
        (13.3, 48.0, 26.5),
        (6.8, 73.4, 27.1),
        (13.8, 50.0, 27.6),
        (6.9, 75.0, 27.6),
        (13.8, 50.2, 27.6),
        (6.9, 75.1, 27.6),
    ],
];
const T2_AES_GTX: Block = [
    [
        (13.8, 26.2, 27.6),
        (6.9, 63.1, 27.6),
        (12.1, 34.2, 24.3),
        (6.9, 62.5, 27.6),
        (8.4, 49.4, 17.7),
        (4.7, 71.7, 19.4),
    ],
    [
        (13.8, 26.2, 27.6),
        (6.9, 63.1, 27.6),
        (13.2, 28.3, 26.3),
        (6.9, 62.5, 27.6),
        (8.9, 46.4, 17.8),
        (5.3, 68.1, 21.2),
    ],
    [
        (13.3, 28.9, 26.4),
        (6.9, 63.1, 27.6),
        (13.5, 27.7, 26.5),
        (6.9, 62.5, 27.6),
        (7.4, 55.4, 14.8),
        (4.8, 71.1, 19.4),
    ],
];
const T2_AES_I7: Block = [
    [
        (10.3, 41.8, 27.4),
        (5.1, 71.2, 27.3),
        (10.0, 45.4, 25.8),
        (5.2, 71.6, 26.6),
        (9.2, 49.2, 24.5),
        (5.4, 70.2, 26.6),
    ],
    [
        (10.0, 43.5, 18.9),
        (4.8, 72.9, 18.3),
        (9.7, 46.7, 18.6),
        (4.6, 74.9, 17.9),
        (9.6, 47.0, 18.4),
        (4.6, 74.6, 17.7),
    ],
    [
        (9.5, 46.3, 27.3),
        (4.8, 72.9, 26.9),
        (9.1, 50.3, 25.4),
        (4.8, 73.8, 26.0),
        (9.0, 50.3, 23.1),
        (5.0, 72.4, 24.7),
    ],
];
const T2_AES_UHD: Block = [
    [
        (9.6, 10.3, 19.3),
        (6.6, 38.3, 26.3),
        (10.9, 6.0, 21.9),
        (6.8, 41.4, 27.0),
        (11.6, 7.2, 23.2),
        (6.8, 45.6, 27.1),
    ],
    [
        (5.9, 44.9, 11.8),
        (3.1, 71.0, 12.4),
        (6.6, 43.1, 13.2),
        (3.5, 69.8, 13.9),
        (6.9, 44.8, 13.8),
        (3.6, 71.2, 14.5),
    ],
    [
        (9.4, 12.1, 18.8),
        (6.5, 39.3, 25.9),
        (11.3, 2.6, 22.6),
        (6.8, 41.4, 27.0),
        (11.7, 6.4, 23.4),
        (6.8, 45.6, 27.1),
    ],
];
const T3_MD5_GTX: Block = [
    [
        (13.8, 37.0, 27.6),
        (6.9, 68.5, 27.6),
        (13.6, 32.3, 27.3),
        (6.9, 65.7, 27.6),
        (9.1, 48.9, 18.2),
        (5.3, 70.2, 21.3),
    ],
    [
        (13.8, 37.0, 27.6),
        (6.9, 68.5, 27.6),
        (12.2, 39.3, 24.3),
        (6.9, 65.7, 27.6),
        (8.9, 50.0, 17.6),
        (5.1, 71.3, 19.3),
    ],
    [
        (12.7, 42.0, 25.5),
        (6.9, 68.5, 27.6),
        (12.0, 40.3, 23.9),
        (6.9, 65.7, 27.6),
        (9.2, 48.3, 17.8),
        (4.9, 72.5, 18.5),
    ],
];
const T3_MD5_I7: Block = [
    [
        (14.1, 47.2, 27.4),
        (7.0, 73.8, 27.5),
        (13.8, 49.5, 27.4),
        (7.2, 73.6, 27.4),
        (13.9, 42.8, 27.1),
        (7.2, 70.4, 27.1),
    ],
    [
        (17.8, 33.3, 27.2),
        (8.9, 66.7, 22.9),
        (16.2, 40.7, 26.0),
        (7.8, 71.4, 21.8),
        (15.1, 37.9, 24.3),
        (7.1, 70.8, 21.3),
    ],
    [
        (13.8, 48.3, 27.1),
        (7.0, 73.8, 27.4),
        (14.5, 46.9, 27.2),
        (6.4, 76.6, 27.1),
        (13.3, 45.3, 25.5),
        (6.8, 72.0, 26.3),
    ],
];
const T3_MD5_UHD: Block = [
    [
        (13.6, 49.3, 27.2),
        (6.9, 74.3, 27.4),
        (13.8, 50.2, 27.6),
        (6.9, 75.1, 27.6),
        (13.8, 50.2, 27.6),
        (6.9, 75.1, 27.6),
    ],
    [
        (9.7, 63.8, 19.4),
        (3.8, 85.8, 15.4),
        (11.2, 59.6, 22.5),
        (4.3, 84.5, 17.1),
        (11.6, 58.1, 23.2),
        (4.6, 83.4, 18.1),
    ],
    [
        (13.5, 49.6, 27.1),
        (6.8, 74.6, 27.1),
        (13.8, 50.2, 27.6),
        (6.9, 75.1, 27.6),
        (13.8, 50.2, 27.7),
        (6.9, 75.1, 27.6),
    ],
];

/// A modelled device of the paper: id, name, memory, launch overhead (µs), idle and busy power (W).
struct PaperDevice {
    id: &'static str,
    name: &'static str,
    memory: MemoryModel,
    overhead_us: f64,
    idle_w: f64,
    busy_w: f64,
}

const GTX: PaperDevice = PaperDevice {
    id: "modelled:gtx1080ti",
    name: "NVIDIA GeForce GTX 1080 Ti",
    memory: MemoryModel::Discrete,
    overhead_us: 60.0,
    idle_w: 15.0,
    busy_w: 250.0,
};
const UHD: PaperDevice = PaperDevice {
    id: "modelled:uhd630",
    name: "Intel UHD Graphics 630",
    memory: MemoryModel::Shared,
    overhead_us: 30.0,
    idle_w: 2.0,
    busy_w: 15.0,
};
const I7: PaperDevice = PaperDevice {
    id: "modelled:i7-8700k",
    name: "Intel Core i7-8700K",
    memory: MemoryModel::Host,
    overhead_us: 5.0,
    idle_w: 10.0,
    busy_w: 95.0,
};

/// Packet size of the paper's experiments.
pub const PAPER_PACKET_BYTES: f64 = 1500.0;
const PCIE_BYTES_PER_S: f64 = 6.5e9;
const PAPER_BATCHES: [usize; 3] = [1024, 4096, 16384];
const COWORKER_APPS: [PacketApp; 3] = [PacketApp::Md5, PacketApp::Aes, PacketApp::Dpi];

fn modelled_latency_us(dev: &PaperDevice, app: PacketApp, batch: usize, gbps: f64) -> f64 {
    let bytes = batch as f64 * PAPER_PACKET_BYTES;
    let compute = bytes * 8.0 / (gbps.max(1e-3) * 1e9) * 1e6;
    let copies = if app.writes_payload() { 2.0 } else { 1.0 };
    let transfer = if dev.memory == MemoryModel::Discrete {
        copies * bytes / PCIE_BYTES_PER_S * 1e6
    } else {
        0.0
    };
    dev.overhead_us + transfer + compute
}

impl Profile {
    /// The Pythia paper's Tables I–III as modelled devices (see the module docs for how they were read).
    pub fn pythia_paper() -> Profile {
        let mut p = Profile::default();
        let tables: [(PacketApp, &PaperDevice, &Block, &str); 9] = [
            (PacketApp::Dpi, &GTX, &T1_DPI_GTX, "Table I"),
            (PacketApp::Dpi, &I7, &T1_DPI_I7, "Table I"),
            (PacketApp::Dpi, &UHD, &T1_DPI_UHD, "Table I"),
            (PacketApp::Aes, &GTX, &T2_AES_GTX, "Table II"),
            (PacketApp::Aes, &I7, &T2_AES_I7, "Table II"),
            (PacketApp::Aes, &UHD, &T2_AES_UHD, "Table II"),
            (PacketApp::Md5, &GTX, &T3_MD5_GTX, "Table III"),
            (PacketApp::Md5, &I7, &T3_MD5_I7, "Table III"),
            (PacketApp::Md5, &UHD, &T3_MD5_UHD, "Table III"),
        ];
        for (app, dev, block, table) in tables {
            let source = format!("modelled: Pythia (Giakoumakis et al.) {table}");
            for (bi, &batch) in PAPER_BATCHES.iter().enumerate() {
                // Alone rate: mean over co-worker blocks of gbps / (1 - slowdown) with one co-worker.
                let alone = block
                    .iter()
                    .map(|rows| rows[bi * 2].0 / (1.0 - rows[bi * 2].1 / 100.0))
                    .sum::<f64>()
                    / 3.0;
                let mk = |coworkers: usize,
                          coworker_app: Option<PacketApp>,
                          gbps: f64,
                          slowdown: f64,
                          agg: f64| ProfileEntry {
                    app,
                    device: dev.id.into(),
                    device_name: dev.name.into(),
                    kind: DeviceKind::Modelled,
                    memory: dev.memory,
                    batch,
                    coworkers,
                    coworker_app,
                    gbps,
                    alone_gbps: alone,
                    slowdown,
                    aggregate_gbps: agg,
                    latency_us: modelled_latency_us(dev, app, batch, gbps),
                    power_w: Some(dev.busy_w),
                    idle_power_w: Some(dev.idle_w),
                    power_source: PowerSource::Estimated,
                    source: source.clone(),
                };
                p.entries.push(mk(0, None, alone, 0.0, alone));
                for (ci, rows) in block.iter().enumerate() {
                    for (k, &co) in [1usize, 3].iter().enumerate() {
                        let (g, s, a) = rows[bi * 2 + k];
                        p.entries
                            .push(mk(co, Some(COWORKER_APPS[ci]), g, s / 100.0, a));
                    }
                }
            }
        }
        p.notes.push(
            "modelled devices: Pythia paper Tables I-III (1,500-byte packets); latency and power from the documented \
             model in flowbundle_hetero::profile"
                .into(),
        );
        p
    }

    /// Device ids in the table, in first-appearance order.
    pub fn devices(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for e in &self.entries {
            if !seen.contains(&e.device) {
                seen.push(e.device.clone());
            }
        }
        seen
    }

    /// Batch sizes profiled for `app` on `device`, ascending.
    pub fn batches(&self, app: PacketApp, device: &str) -> Vec<usize> {
        let set: BTreeSet<usize> = self
            .entries
            .iter()
            .filter(|e| e.app == app && e.device == device)
            .map(|e| e.batch)
            .collect();
        set.into_iter().collect()
    }

    /// Kind of a device in the table.
    pub fn kind_of(&self, device: &str) -> Option<DeviceKind> {
        self.entries
            .iter()
            .find(|e| e.device == device)
            .map(|e| e.kind)
    }

    /// The figures of `app` on `device` at batch `batch` with `coworkers` other kernels on the device.
    ///
    /// Entries with the same co-worker count are averaged over co-worker applications; a count between two
    /// profiled counts is interpolated linearly, one beyond the largest uses the largest; a batch size not profiled
    /// takes the nearest profiled one (in log scale) for throughput, and scales the latency's per-byte part.
    pub fn estimate(
        &self,
        app: PacketApp,
        device: &str,
        batch: usize,
        coworkers: usize,
    ) -> Option<Estimate> {
        let batches = self.batches(app, device);
        let nearest = *batches.iter().min_by(|a, b| {
            let d = |x: usize| ((x as f64).ln() - (batch.max(1) as f64).ln()).abs();
            d(**a).total_cmp(&d(**b))
        })?;
        let at = |co: usize| -> Option<(f64, f64, f64, f64)> {
            let sel: Vec<&ProfileEntry> = self
                .entries
                .iter()
                .filter(|e| {
                    e.app == app && e.device == device && e.batch == nearest && e.coworkers == co
                })
                .collect();
            if sel.is_empty() {
                return None;
            }
            let n = sel.len() as f64;
            Some((
                sel.iter().map(|e| e.gbps).sum::<f64>() / n,
                sel.iter().map(|e| e.latency_us).sum::<f64>() / n,
                sel.iter().filter_map(|e| e.power_w).sum::<f64>() / n,
                sel.iter().filter_map(|e| e.idle_power_w).sum::<f64>() / n,
            ))
        };
        let counts: BTreeSet<usize> = self
            .entries
            .iter()
            .filter(|e| e.app == app && e.device == device && e.batch == nearest)
            .map(|e| e.coworkers)
            .collect();
        let (g, l, p, i) = if let Some(v) = at(coworkers) {
            v
        } else {
            let below = counts.iter().copied().filter(|&c| c < coworkers).max();
            let above = counts.iter().copied().filter(|&c| c > coworkers).min();
            match (below, above) {
                (Some(b), Some(a)) => {
                    let (vb, va) = (at(b)?, at(a)?);
                    let t = (coworkers - b) as f64 / (a - b) as f64;
                    let lerp = |x: f64, y: f64| x + (y - x) * t;
                    (
                        lerp(vb.0, va.0),
                        lerp(vb.1, va.1),
                        lerp(vb.2, va.2),
                        lerp(vb.3, va.3),
                    )
                }
                (Some(b), None) => at(b)?,
                (None, Some(a)) => at(a)?,
                (None, None) => return None,
            }
        };
        // Latency: the per-byte part scales with the batch, the rest is fixed overhead.
        let per_batch_compute = nearest as f64 * PAPER_PACKET_BYTES * 8.0 / (g.max(1e-3) * 1e3);
        let fixed = (l - per_batch_compute).max(0.0);
        let latency_us = fixed + per_batch_compute * batch as f64 / nearest as f64;
        Some(Estimate {
            gbps: g,
            latency_us,
            power_w: p,
            idle_power_w: i,
        })
    }

    /// Serialises to pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Parses JSON written by [`Profile::to_json`].
    pub fn from_json(text: &str) -> Result<Profile, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The same table with every *modelled* device slowed to `factor` of its speed (`0 < factor <= 1`): Gbit/s
    /// figures multiplied by `factor`, the per-byte part of each batch latency divided by it (its fixed part
    /// kept), power kept. Measured entries are left out: a real device cannot be slowed, and mixing slowed and
    /// real figures would compare unlike things.
    ///
    /// This is slow motion for the real-clock runtime: a modelled device computes its outputs on this host's CPU,
    /// which cannot keep up with a 10 Gbit/s GPU, but can with the same GPU at a hundredth of its speed under a
    /// hundredth of the offered rate. Every ratio the scheduler decides on (capacity against offered rate,
    /// co-worker slow-down, power share) is unchanged, so the decisions are those of the full-speed system.
    /// Device names say `×factor` so no figure passes for the original.
    pub fn slowed(&self, factor: f64) -> Profile {
        let f = if factor.is_finite() && factor > 0.0 {
            factor.min(1.0)
        } else {
            1.0
        };
        let mut out = Profile {
            entries: Vec::new(),
            notes: self.notes.clone(),
        };
        for e in self
            .entries
            .iter()
            .filter(|e| e.kind == DeviceKind::Modelled)
        {
            let compute_us = e.batch as f64 * PAPER_PACKET_BYTES * 8.0 / (e.gbps.max(1e-3) * 1e3);
            let fixed = (e.latency_us - compute_us).max(0.0);
            out.entries.push(ProfileEntry {
                device_name: format!("{} ×{f}", e.device_name),
                gbps: e.gbps * f,
                alone_gbps: e.alone_gbps * f,
                aggregate_gbps: e.aggregate_gbps * f,
                latency_us: fixed + compute_us / f,
                ..e.clone()
            });
        }
        out.notes.push(format!(
            "modelled devices slowed to ×{f} of their speed (rates ×{f}, per-byte latency ÷{f}); measured entries dropped"
        ));
        out
    }

    /// Merges another table into this one (entries appended, notes kept).
    pub fn merge(&mut self, other: Profile) {
        self.entries.extend(other.entries);
        self.notes.extend(other.notes);
    }

    /// The table printed like the paper's Tables I–III, one section per application.
    pub fn render_table(&self) -> String {
        let mut s = String::new();
        for app in PacketApp::ALL {
            let rows: Vec<&ProfileEntry> = self.entries.iter().filter(|e| e.app == app).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "Performance characterisation of {}",
                app.name().to_uppercase()
            );
            let _ = writeln!(
                s,
                "{:<22} {:<8} {:>6} {:>4} {:<6} {:>9} {:>9} {:>9} {:>11} {:>9} {:<9}",
                "device",
                "kind",
                "batch",
                "co",
                "co-app",
                "Gbit/s",
                "slowdown",
                "aggr",
                "latency µs",
                "power W",
                "power src"
            );
            for e in rows {
                let _ = writeln!(
                    s,
                    "{:<22} {:<8} {:>6} {:>4} {:<6} {:>9.2} {:>8.1}% {:>9.2} {:>11.0} {:>9} {:<9}",
                    e.device,
                    e.kind.label(),
                    e.batch,
                    e.coworkers,
                    e.coworker_app.map_or("-", |a| a.name()),
                    e.gbps,
                    e.slowdown * 100.0,
                    e.aggregate_gbps,
                    e.latency_us,
                    e.power_w.map_or("-".to_string(), |p| format!("{p:.1}")),
                    e.power_source.label(),
                );
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_table_is_self_consistent() {
        let p = Profile::pythia_paper();
        // 3 apps × 3 devices × 3 batches × (1 alone + 3 co-apps × 2 counts).
        assert_eq!(p.entries.len(), 3 * 3 * 3 * 7);
        for e in &p.entries {
            assert_eq!(e.kind, DeviceKind::Modelled);
            if e.coworkers > 0 {
                // The derived alone rate reproduces each row's slow-down within rounding of the paper's figures.
                let implied = 1.0 - e.gbps / e.alone_gbps;
                assert!(
                    (implied - e.slowdown).abs() < 0.03,
                    "{e:?} implied {implied}"
                );
            }
        }
        // GTX 1080 Ti DPI alone at 4096 ≈ 18 Gbit/s (12.0 at 33.3 % slow-down).
        let g = p
            .estimate(PacketApp::Dpi, "modelled:gtx1080ti", 4096, 0)
            .unwrap();
        assert!((g.gbps - 18.0).abs() < 0.2, "{g:?}");
        // Interpolation between 1 and 3 co-workers, and latency grows with the batch.
        let e1 = p
            .estimate(PacketApp::Aes, "modelled:uhd630", 4096, 1)
            .unwrap()
            .gbps;
        let e2 = p
            .estimate(PacketApp::Aes, "modelled:uhd630", 4096, 2)
            .unwrap()
            .gbps;
        let e3 = p
            .estimate(PacketApp::Aes, "modelled:uhd630", 4096, 3)
            .unwrap()
            .gbps;
        assert!(e1 > e2 && e2 > e3);
        let small = p
            .estimate(PacketApp::Md5, "modelled:gtx1080ti", 1024, 0)
            .unwrap()
            .latency_us;
        let big = p
            .estimate(PacketApp::Md5, "modelled:gtx1080ti", 16384, 0)
            .unwrap()
            .latency_us;
        assert!(big > small * 4.0);
        assert!(p.estimate(PacketApp::Md5, "nope", 1024, 0).is_none());
        let back = Profile::from_json(&p.to_json()).unwrap();
        assert_eq!(back.entries.len(), p.entries.len());
        for (a, b) in back.entries.iter().zip(&p.entries) {
            assert!((a.gbps - b.gbps).abs() < 1e-9 && (a.latency_us - b.latency_us).abs() < 1e-6);
            assert_eq!(
                (a.app, &a.device, a.batch, a.coworkers),
                (b.app, &b.device, b.batch, b.coworkers)
            );
        }
        assert!(p.render_table().contains("modelled:uhd630"));
    }

    #[test]
    fn slowed_profile_keeps_the_ratios() {
        let p = Profile::pythia_paper();
        let q = p.slowed(0.01);
        assert_eq!(q.entries.len(), p.entries.len());
        let a = p
            .estimate(PacketApp::Aes, "modelled:gtx1080ti", 4096, 1)
            .unwrap();
        let b = q
            .estimate(PacketApp::Aes, "modelled:gtx1080ti", 4096, 1)
            .unwrap();
        assert!((b.gbps - a.gbps * 0.01).abs() < 1e-9);
        assert!(b.latency_us > a.latency_us * 50.0);
        assert_eq!(a.power_w, b.power_w);
        assert!(q.entries[0].device_name.contains("×0.01"));
        // Measured entries are dropped.
        let mut m = p.clone();
        m.entries[0].kind = DeviceKind::Cpu;
        assert_eq!(m.slowed(0.5).entries.len(), p.entries.len() - 1);
    }
}
