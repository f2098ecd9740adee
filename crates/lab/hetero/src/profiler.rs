//! The offline profiler (Pythia §III-b, §IV "offline analysis tool"): measures every application × device × batch
//! size × co-running kernels on this machine's devices and fills a [`Profile`].
//!
//! For one configuration, the kernel under test runs batch after batch on its device for at least `min_time`,
//! while `k` co-workers (forked handles on the same device, each running the co-worker application on its own
//! batches) run beside it for the whole window. Reported: the kernel's Gbit/s of payload, its slow-down against the
//! same configuration alone (`k = 0`, measured first), the aggregate over the kernel and its co-workers, the mean
//! batch latency (submission to results), and the device's power over the window where it can be read (RAPL for
//! the CPU and CPU OpenCL devices, NVML for NVIDIA GPUs), otherwise the estimate of [`crate::energy::PowerModel`],
//! labelled `estimated`.
//!
//! Batches are cut from the payloads given (real payload, see [`crate::payload::real_payloads`]), eight packets
//! per synthetic flow, so `aes` expands a key per flow as it would on real traffic.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::batch::{BatchLimits, FlowBatcher, PacketBatch};
use crate::device::{Device, DeviceError, DeviceKind};
use crate::energy::{PowerMeters, PowerModel, PowerSource};
use crate::kernels::{BatchOutput, PacketApp};
use crate::profile::{Profile, ProfileEntry};

/// What to measure.
#[derive(Clone, Debug)]
pub struct ProfilerConfig {
    /// Applications.
    pub apps: Vec<PacketApp>,
    /// Batch sizes, packets.
    pub batches: Vec<usize>,
    /// Co-worker counts (0 is always measured first, as the reference).
    pub coworkers: Vec<usize>,
    /// Co-worker applications.
    pub coworker_apps: Vec<PacketApp>,
    /// Shortest measuring window per configuration.
    pub min_time: Duration,
    /// Fewest batches per configuration.
    pub min_batches: usize,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        Self {
            apps: PacketApp::ALL.to_vec(),
            batches: vec![1024, 4096, 16384],
            coworkers: vec![0, 1, 3],
            coworker_apps: PacketApp::ALL.to_vec(),
            min_time: Duration::from_millis(300),
            min_batches: 2,
        }
    }
}

/// Builds a batch of `n` packets from `payloads` (cycled), eight packets per flow, starting at packet `first`.
pub fn make_batch(payloads: &[Vec<u8>], n: usize, first: usize) -> PacketBatch {
    let mut b = PacketBatch::new(BatchLimits {
        max_packets: n.max(1),
        ..BatchLimits::default()
    });
    if payloads.is_empty() {
        return b;
    }
    for i in 0..n {
        let idx = first + i;
        let flow = (idx / 8) as u64;
        let key = FlowBatcher::connection_key(0x5eed_f10b, flow);
        // A full batch refuses the rest; the caller sized it, so this does not happen.
        let _ = b.push(
            flow,
            &key,
            (idx % 8) as u32,
            idx as u64,
            &payloads[idx % payloads.len()],
        );
    }
    b
}

struct Measured {
    gbps: f64,
    latency_us: f64,
    secs: f64,
}

/// Runs `app` on `dev` over copies of `batch` until both `min_time` and `min_batches` are reached (or `stop` is
/// set), adding processed bytes to `bytes`.
fn measure(
    dev: &mut dyn Device,
    app: PacketApp,
    batch: &PacketBatch,
    min_time: Duration,
    min_batches: usize,
    stop: Option<&AtomicBool>,
    bytes: &AtomicU64,
) -> Result<Measured, DeviceError> {
    // Two batches per call so discrete devices can overlap transfers with kernels.
    let mut work = vec![batch.clone(), batch.clone()];
    let mut outs = vec![BatchOutput::default(), BatchOutput::default()];
    let start = Instant::now();
    let mut done = 0usize;
    let mut lat = 0.0;
    let mut total = 0u64;
    loop {
        if app == PacketApp::Aes {
            // Encrypt the same plaintext each time (AES works in place).
            work[0].clone_from(batch);
            work[1].clone_from(batch);
        }
        let t = dev.run(app, &mut work, &mut outs)?;
        for x in &t {
            lat += x.latency.as_secs_f64();
            total += x.bytes;
            bytes.fetch_add(x.bytes, Ordering::Relaxed);
        }
        done += t.len();
        let el = start.elapsed();
        let stop_now = stop.is_some_and(|s| s.load(Ordering::Relaxed));
        if stop_now || (el >= min_time && done >= min_batches) {
            let secs = el.as_secs_f64().max(1e-9);
            return Ok(Measured {
                gbps: total as f64 * 8.0 / secs / 1e9,
                latency_us: lat / done.max(1) as f64 * 1e6,
                secs,
            });
        }
    }
}

/// Profiles one device. `progress` is called with a line per configuration.
pub fn profile_device(
    dev: &mut dyn Device,
    payloads: &[Vec<u8>],
    cfg: &ProfilerConfig,
    meters: &mut PowerMeters,
    mut progress: impl FnMut(&str),
) -> Result<Profile, DeviceError> {
    let info = dev.info().clone();
    let mut profile = Profile::default();
    let model = PowerModel::cpu(info.compute_units.max(1) as usize);
    for &app in &cfg.apps {
        for &batch_size in &cfg.batches {
            let batch = make_batch(payloads, batch_size, 0);
            let co_batch = make_batch(payloads, batch_size, batch_size);
            let mut alone: Option<f64> = None;
            let mut counts = cfg.coworkers.clone();
            if !counts.contains(&0) {
                counts.insert(0, 0);
            }
            counts.sort_unstable();
            counts.dedup();
            for &k in &counts {
                let co_apps: Vec<Option<PacketApp>> = if k == 0 {
                    vec![None]
                } else {
                    cfg.coworker_apps.iter().copied().map(Some).collect()
                };
                for co_app in co_apps {
                    let stop = Arc::new(AtomicBool::new(false));
                    let co_bytes = Arc::new(AtomicU64::new(0));
                    let main_bytes = AtomicU64::new(0);
                    let mut forks = Vec::new();
                    for _ in 0..k {
                        forks.push(dev.fork()?);
                    }
                    let _ = meters.cpu_power();
                    let result = std::thread::scope(|s| {
                        let mut handles = Vec::new();
                        for mut f in forks.drain(..) {
                            let (stop, co_bytes, co_batch) =
                                (stop.clone(), co_bytes.clone(), &co_batch);
                            let ca = co_app.unwrap_or(app);
                            handles.push(s.spawn(move || {
                                measure(
                                    f.as_mut(),
                                    ca,
                                    co_batch,
                                    Duration::from_secs(3600),
                                    usize::MAX,
                                    Some(&stop),
                                    &co_bytes,
                                )
                            }));
                        }
                        let t0 = Instant::now();
                        let r = measure(
                            dev,
                            app,
                            &batch,
                            cfg.min_time,
                            cfg.min_batches,
                            None,
                            &main_bytes,
                        );
                        let window = t0.elapsed().as_secs_f64();
                        // Co-worker bytes over the main kernel's window only.
                        let co = co_bytes.load(Ordering::Relaxed);
                        stop.store(true, Ordering::Relaxed);
                        for h in handles {
                            let _ = h.join();
                        }
                        r.map(|m| (m, co as f64 * 8.0 / window.max(1e-9) / 1e9))
                    });
                    let (m, co_gbps) = result?;
                    if k == 0 {
                        alone = Some(m.gbps);
                    }
                    let alone_gbps = alone.unwrap_or(m.gbps);
                    let (power_w, source) = match (info.kind, info.memory) {
                        (DeviceKind::Cpu, _)
                        | (DeviceKind::Opencl, crate::device::MemoryModel::Shared) => {
                            match meters.cpu_power() {
                                Some(w) => (Some(w), PowerSource::Rapl),
                                None => (Some(model.at(1.0)), PowerSource::Estimated),
                            }
                        }
                        _ => match meters.gpu_power() {
                            Some(w) => (Some(w), PowerSource::Nvml),
                            None => (None, PowerSource::None),
                        },
                    };
                    let e = ProfileEntry {
                        app,
                        device: info.id.clone(),
                        device_name: info.name.clone(),
                        kind: info.kind,
                        memory: info.memory,
                        batch: batch_size,
                        coworkers: k,
                        coworker_app: co_app,
                        gbps: m.gbps,
                        alone_gbps,
                        slowdown: if alone_gbps > 0.0 {
                            1.0 - m.gbps / alone_gbps
                        } else {
                            0.0
                        },
                        aggregate_gbps: m.gbps + co_gbps,
                        latency_us: m.latency_us,
                        power_w,
                        idle_power_w: (source == PowerSource::Estimated).then_some(model.idle_w),
                        power_source: source,
                        source: "measured".into(),
                    };
                    progress(&format!(
                        "{} {} batch {} co {} {}: {:.2} Gbit/s ({:.2} s)",
                        info.id,
                        app,
                        batch_size,
                        k,
                        co_app.map_or("-", |a| a.name()),
                        m.gbps,
                        m.secs
                    ));
                    profile.entries.push(e);
                }
            }
        }
    }
    Ok(profile)
}
