//! Devices a kernel can run on: the CPU pool, OpenCL devices found at run time, and modelled devices.
//!
//! Every device takes the same [`PacketBatch`]es and returns the same [`BatchOutput`]s; only where the work happens
//! and how long it takes differ. That is what lets the scheduler treat placement as a pure performance choice, and
//! what the cross-device tests check (bit-identical outputs).
//!
//! * [`CpuDevice`]: the Rust kernels on a rayon pool of `threads` threads. Co-runners forked from it share the pool,
//!   so they contend for the same cores, as kernels sharing a CPU do.
//! * `OpenClDevice` (feature `opencl`, module [`crate::opencl`]): the OpenCL C kernels. Devices that share host
//!   memory (CPU devices such as PoCL, integrated GPUs) get mapped buffers; discrete ones get double-buffered
//!   asynchronous transfers.
//! * [`ModelledDevice`]: hardware that is not here (the Pythia paper's GTX 1080 Ti and UHD 630). It computes the
//!   outputs with the CPU reference, so callers still get correct results, but its *timings* come from a profile
//!   table, and it is labelled `modelled` wherever it appears.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::batch::PacketBatch;
use crate::dfa::Dfa;
use crate::kernels::{self, BatchOutput, PacketApp};
use crate::profile::Profile;

/// What kind of device, as printed in every table and log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// The Rust kernels on host cores.
    Cpu,
    /// An OpenCL device found at run time.
    Opencl,
    /// Not real hardware: timings from a profile table.
    Modelled,
}

impl DeviceKind {
    /// Label used in output.
    pub fn label(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Opencl => "opencl",
            DeviceKind::Modelled => "modelled",
        }
    }
}

/// How the device reaches packet memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryModel {
    /// Host memory directly (the CPU device).
    Host,
    /// Shares host memory: buffers are mapped, no copies (CPU OpenCL devices, integrated GPUs).
    Shared,
    /// Own memory across a bus: copies, double-buffered so transfers overlap kernels (discrete GPUs).
    Discrete,
}

/// Static description of a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Stable identifier used on the command line and in profiles: `cpu`, `ocl0`, `modelled:gtx1080ti`...
    pub id: String,
    /// Human-readable name (vendor string for OpenCL devices).
    pub name: String,
    /// Kind; `modelled` devices are never presented as measured.
    pub kind: DeviceKind,
    /// Memory model.
    pub memory: MemoryModel,
    /// Parallel units (threads for the CPU pool, compute units for OpenCL).
    pub compute_units: u32,
}

/// Time one batch took on a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchTiming {
    /// From the start of the run call to the batch's results being available to the host.
    pub latency: Duration,
    /// Payload bytes processed.
    pub bytes: u64,
}

/// A device failed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("OpenCL: {0}")]
    OpenCl(String),
    #[error("device {device} has no profile entry for {app} at batch {batch}")]
    NoProfile {
        device: String,
        app: PacketApp,
        batch: usize,
    },
    #[error("{0}")]
    Other(String),
}

/// A place to run kernels.
pub trait Device: Send {
    /// Static description.
    fn info(&self) -> &DeviceInfo;

    /// Runs `app` over `batches` in order, writing `outs[i]` for `batches[i]` (and, for `aes`, the payloads).
    /// Returns one timing per batch. Discrete devices overlap the upload of batch `i + 1` with the kernel on batch
    /// `i`, so giving several batches at once is faster than one call per batch.
    fn run(
        &mut self,
        app: PacketApp,
        batches: &mut [PacketBatch],
        outs: &mut [BatchOutput],
    ) -> Result<Vec<BatchTiming>, DeviceError>;

    /// Another handle on the same hardware, for a co-running kernel (own queue and buffers, shared cores).
    fn fork(&self) -> Result<Box<dyn Device>, DeviceError>;
}

/// The CPU pool.
pub struct CpuDevice {
    info: DeviceInfo,
    pool: Arc<rayon::ThreadPool>,
    dfa: Arc<Dfa>,
}

impl CpuDevice {
    /// A pool of `threads` threads (0 = every core).
    pub fn new(threads: usize, dfa: Arc<Dfa>) -> Result<Self, DeviceError> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            threads
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("hetero-cpu-{i}"))
            .build()
            .map_err(|e| DeviceError::Other(format!("thread pool: {e}")))?;
        Ok(Self {
            info: DeviceInfo {
                id: "cpu".into(),
                name: format!("CPU pool ({threads} threads)"),
                kind: DeviceKind::Cpu,
                memory: MemoryModel::Host,
                compute_units: threads as u32,
            },
            pool: Arc::new(pool),
            dfa,
        })
    }
}

impl Device for CpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn run(
        &mut self,
        app: PacketApp,
        batches: &mut [PacketBatch],
        outs: &mut [BatchOutput],
    ) -> Result<Vec<BatchTiming>, DeviceError> {
        let start = Instant::now();
        let dfa = &self.dfa;
        let mut timings = Vec::with_capacity(batches.len());
        for (b, o) in batches.iter_mut().zip(outs.iter_mut()) {
            self.pool.install(|| kernels::run_cpu(app, dfa, b, o));
            timings.push(BatchTiming {
                latency: start.elapsed(),
                bytes: b.bytes() as u64,
            });
        }
        Ok(timings)
    }

    fn fork(&self) -> Result<Box<dyn Device>, DeviceError> {
        Ok(Box::new(CpuDevice {
            info: self.info.clone(),
            pool: self.pool.clone(),
            dfa: self.dfa.clone(),
        }))
    }
}

/// A device that is not here: outputs from the CPU reference, timings from a profile table.
pub struct ModelledDevice {
    info: DeviceInfo,
    profile: Arc<Profile>,
    dfa: Arc<Dfa>,
    /// Handles on this device currently inside `run` (the co-worker count the profile is looked up with).
    active: Arc<AtomicUsize>,
    /// Real-clock pacing: `run` returns no earlier than the modelled time after it was called.
    paced: bool,
}

impl ModelledDevice {
    /// A modelled device `id` (as named in `profile`, e.g. `modelled:gtx1080ti`).
    pub fn new(id: &str, profile: Arc<Profile>, dfa: Arc<Dfa>) -> Result<Self, DeviceError> {
        let Some(e) = profile.entries.iter().find(|e| e.device == id) else {
            return Err(DeviceError::Other(format!(
                "no modelled device `{id}` in the profile"
            )));
        };
        Ok(Self {
            info: DeviceInfo {
                id: id.to_string(),
                name: format!("{} (modelled)", e.device_name),
                kind: DeviceKind::Modelled,
                memory: e.memory,
                compute_units: 0,
            },
            profile,
            dfa,
            active: Arc::new(AtomicUsize::new(0)),
            paced: false,
        })
    }

    /// Makes `run` take the modelled time on the wall clock (it computes the outputs, then sleeps for what is
    /// left of the modelled time), which is how the real-clock runtime ([`crate::runtime`]) places packets on
    /// hardware that is not here. When computing the outputs on this host's CPU takes longer than the modelled
    /// time, `run` takes that longer time: the runtime then sees the device as slower than its profile, which is
    /// the truth about the run, and the monitor's live figures say so. Off by default (the profiler and the
    /// virtual clock want the modelled durations without waiting for them).
    pub fn paced(mut self, on: bool) -> Self {
        self.paced = on;
        self
    }

    /// The modelled time of one batch: its payload at the profiled per-kernel rate, plus the fixed part of the
    /// profiled batch latency (launch overhead, transfers; what is left of [`Profile::estimate`]'s latency once
    /// the compute time of the profile's 1,500-byte packets is taken out). The payload term uses the batch's real
    /// bytes, so a batch of small packets is quicker than one of 1,500-byte packets, as on the hardware.
    pub fn batch_time(
        &self,
        app: PacketApp,
        packets: usize,
        bytes: u64,
        coworkers: usize,
    ) -> Result<Duration, DeviceError> {
        let est = self
            .profile
            .estimate(app, &self.info.id, packets, coworkers)
            .ok_or(DeviceError::NoProfile {
                device: self.info.id.clone(),
                app,
                batch: packets,
            })?;
        let rate = est.gbps.max(1e-6) * 1e9;
        let profiled_compute = packets as f64 * crate::profile::PAPER_PACKET_BYTES * 8.0 / rate;
        let fixed = (est.latency_us * 1e-6 - profiled_compute).max(0.0);
        let secs = fixed + bytes as f64 * 8.0 / rate;
        Ok(Duration::from_secs_f64(secs.clamp(0.0, 3600.0)))
    }
}

impl Device for ModelledDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn run(
        &mut self,
        app: PacketApp,
        batches: &mut [PacketBatch],
        outs: &mut [BatchOutput],
    ) -> Result<Vec<BatchTiming>, DeviceError> {
        let start = Instant::now();
        let co = self.active.fetch_add(1, Ordering::SeqCst);
        let mut t = Duration::ZERO;
        let mut timings = Vec::with_capacity(batches.len());
        let mut result = Ok(());
        for (b, o) in batches.iter_mut().zip(outs.iter_mut()) {
            kernels::run_cpu(app, &self.dfa, b, o);
            match self.batch_time(app, b.len(), b.bytes() as u64, co) {
                Ok(d) => t += d,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            timings.push(BatchTiming {
                latency: t,
                bytes: b.bytes() as u64,
            });
        }
        if self.paced
            && let Some(rest) = t.checked_sub(start.elapsed())
        {
            std::thread::sleep(rest);
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        result.map(|()| timings)
    }

    fn fork(&self) -> Result<Box<dyn Device>, DeviceError> {
        Ok(Box::new(ModelledDevice {
            info: self.info.clone(),
            profile: self.profile.clone(),
            dfa: self.dfa.clone(),
            active: self.active.clone(),
            paced: self.paced,
        }))
    }
}

/// Every real device of this machine: the CPU pool, then each OpenCL device (when the `opencl` feature is on and a
/// library and platform are found; otherwise `notes` says why there are none).
pub fn discover(cpu_threads: usize, dfa: Arc<Dfa>) -> (Vec<Box<dyn Device>>, Vec<String>) {
    let mut devices: Vec<Box<dyn Device>> = Vec::new();
    let mut notes = Vec::new();
    match CpuDevice::new(cpu_threads, dfa.clone()) {
        Ok(d) => devices.push(Box::new(d)),
        Err(e) => notes.push(format!("CPU pool unavailable: {e}")),
    }
    #[cfg(feature = "opencl")]
    {
        let (ocl, why) = crate::opencl::discover(dfa);
        for d in ocl {
            devices.push(Box::new(d));
        }
        notes.extend(why);
    }
    #[cfg(not(feature = "opencl"))]
    {
        let _ = dfa;
        notes.push("built without the `opencl` feature: CPU only".into());
    }
    (devices, notes)
}
