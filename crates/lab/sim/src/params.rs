//! The model's parameters: the simulated machine ([`Machine`]), what a packet costs ([`WorkModel`]) and what the
//! runtime around the policy costs ([`Overheads`]). Every field has a default with its source; the defaults
//! describe the ANCS'10 evaluation platform (two quad-core Xeon E5540 "Nehalem-EP", 2.53 GHz) running a PAM-like
//! stateful DPI engine, so that the paper's experiments can be replayed in virtual time.
//!
//! Units: cycles of the simulated core clock unless a name says otherwise. Latencies are *stall* cycles charged in
//! full: a DPI engine's flow-state accesses are dependent loads (look up the connection, then follow its pointers),
//! so out-of-order execution hides little of them (the Verdú thesis, §4.4.3: "most of the packet processing requires
//! to search a state (probably it is not in the cache), check the value, and trigger an action").
//!
//! # Sources of the Nehalem defaults
//!
//! * Geometry: Intel Xeon E5540 (ANCS'10 §4.1.3 and Intel ARK): 32 KB 8-way L1d and 256 KB 8-way L2 per core, an
//!   8 MB 16-way L3 per socket, inclusive of the cores' private caches, 64-byte lines, 4 cores per socket.
//! * Latencies: L2 hit 10 cycles, L3 hit 38 cycles (Intel's figures for Nehalem, 30–40 cycles for the L3 as quoted
//!   by Kanter, "Inside Nehalem", RealWorldTech 2008); local memory 65 ns, remote memory 106 ns, a line modified in
//!   another core's L1/L2 of the same socket ≈ 27 ns, modified in a core of the other socket ≈ 100 ns (Molka et
//!   al., "Memory Performance and Cache Coherency Effects on an Intel Nehalem Multiprocessor System", PACT 2009,
//!   measured on the same microarchitecture), converted at 2.53 GHz.
//! * Flow state: 16 lines (1 KB) per connection: the stateful engines characterised in the Verdú thesis (§4.4.1,
//!   Figure 4.4) keep 0.5 to 1.5 KB per flow ("we use a configuration that activates, at the most, 1 KByte of
//!   state").
//! * Per-packet working set beyond the payload: 32 lines (2 KB) streamed per packet: the decoded layers, parser
//!   stacks and scratch a packet's inspection writes (Verdú §4.5.2: the per-packet data with temporal locality fits a
//!   64 KB L1; what is new per packet is the packet itself and what its parse produces). This is the one default
//!   without a direct measurement behind it; a sensitivity sweep over it is not recorded yet (`--stream-lines`).
//! * Cost per packet: 3,000 cycles per TCP packet, 2,000 per UDP packet, 600 for anything else, plus 2 cycles per
//!   payload byte. ANCS'10 §2.2 quotes 600 cycles for a packet PAM does not recognise; the TCP base and the byte cost
//!   were set once, for all traces and schedulers, so that single-core cycles per packet on the synthetic profiles
//!   land near Table 1's 4,814–5,658: with the stalls, `dh` on one core spends 4,100–4,900 cycles per packet on
//!   the generated profiles (`BENCHMARKS.md`, "Simulator").
//! * Decode share before the claim: 0.2 (Snort's decode is about 2 K of 8–12 K instructions per packet, Verdú
//!   §5.2, Figure 5.4).
//! * Runtime costs: dispatch 50 cycles (≈ 20 ns, the measured `dispatch` of every policy in `BENCHMARKS.md`); a second
//!   enqueue 36 cycles (one push into a bounded lock-free queue, 14.3 ns measured as the reference of the same
//!   table); a worker's `next` + `done` with the descriptor's line crossing from the dispatcher's core 150 cycles
//!   (round trips of 45–80 ns measured single-threaded, plus one on-socket transfer); a `ph` handoff 150 cycles (a
//!   locked read-modify-write to append to the connection queue, ≈ 20–40 cycles, copying the decoded layers, and
//!   the queue's tail line coming from the owner's core; the connection entry's own line is charged by the cache
//!   model), and the owner then reads 4 lines the handing-off core wrote ("the data link, internet, and transport
//!   layer information is copied and enqueued with the packet", ANCS'10 §4.3.1: about 256 bytes of headers and
//!   their parse), each a coherence transfer.

use serde::{Deserialize, Serialize};

/// Bytes per cache line (both machines modelled here, and every x86 server since 2005).
pub const LINE: usize = 64;

/// Most simulated cores.
pub const MAX_CORES: usize = 64;

/// Size and associativity of one cache.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheGeometry {
    pub bytes: usize,
    pub ways: usize,
}

impl CacheGeometry {
    pub fn kib(kib: usize, ways: usize) -> Self {
        CacheGeometry {
            bytes: kib * 1024,
            ways,
        }
    }

    /// Lines it holds (at least one way of one set).
    pub fn lines(&self) -> usize {
        (self.bytes / LINE).max(self.ways.max(1))
    }
}

/// Stall cycles of an access served at each place (an L1 hit costs nothing beyond the base cost).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    pub l2: u32,
    pub l3: u32,
    /// Memory of the accessing core's socket.
    pub mem_local: u32,
    /// Memory of another socket (NUMA).
    pub mem_remote: u32,
    /// The line is modified in another core's private cache on the same socket.
    pub xfer_socket: u32,
    /// The line is modified in a cache of another socket.
    pub xfer_remote: u32,
}

/// The simulated machine. See the module documentation for the sources of the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub name: String,
    pub clock_ghz: f64,
    /// Cores sharing one L3 and one memory controller; `cores / cores_per_socket` sockets, rounded up.
    pub cores_per_socket: usize,
    pub l1d: CacheGeometry,
    /// Per core; read only by the execution models' instruction footprints (`exec`).
    #[serde(default = "default_l1i")]
    pub l1i: CacheGeometry,
    pub l2: CacheGeometry,
    /// One per socket, inclusive of the private caches of its cores.
    pub l3: CacheGeometry,
    pub lat: Latencies,
}

impl Default for Machine {
    fn default() -> Self {
        Machine::nehalem()
    }
}

/// Nehalem's L1i: 32 KB, 4-way (Intel ARK; the Xeon E5540 of ANCS'10).
fn default_l1i() -> CacheGeometry {
    CacheGeometry::kib(32, 4)
}

fn ns_to_cycles(ns: f64, ghz: f64) -> u32 {
    (ns * ghz).round().clamp(0.0, f64::from(u32::MAX)) as u32
}

impl Machine {
    /// The ANCS'10 platform: Xeon E5540 (Nehalem-EP), 2.53 GHz, 4 cores per socket.
    pub fn nehalem() -> Self {
        let ghz = 2.53;
        Machine {
            name: "nehalem-e5540".into(),
            clock_ghz: ghz,
            cores_per_socket: 4,
            l1d: CacheGeometry::kib(32, 8),
            l1i: default_l1i(),
            l2: CacheGeometry::kib(256, 8),
            l3: CacheGeometry::kib(8 * 1024, 16),
            lat: Latencies {
                l2: 10,
                l3: 38,
                mem_local: ns_to_cycles(65.0, ghz),
                mem_remote: ns_to_cycles(106.0, ghz),
                xfer_socket: ns_to_cycles(27.0, ghz),
                xfer_remote: ns_to_cycles(100.0, ghz),
            },
        }
    }

    /// The machine this process runs on, for calibration against `flowbundle bench`: cache geometry from Linux's
    /// sysfs (`/sys/devices/system/cpu/cpu0/cache`), the clock from `/proc/cpuinfo`, one socket of all online cores.
    /// Whatever cannot be read keeps a recent-Xeon default (48 KB 12-way L1d, 2 MB 16-way L2, 2.3 GHz). Latencies
    /// are typical of recent Xeons (L2 16 cycles; L3 30 ns; memory 110 ns; on-socket transfer 50 ns): with the
    /// synthetic workload's four lines per packet they move throughput by a few percent, and calibration absorbs
    /// the rest into its cost scale.
    pub fn host() -> Self {
        let ghz = read_clock_ghz().unwrap_or(2.3);
        let mut m = Machine {
            name: "host".into(),
            clock_ghz: ghz,
            cores_per_socket: std::thread::available_parallelism().map_or(2, |n| n.get()),
            l1d: CacheGeometry::kib(48, 12),
            l1i: CacheGeometry::kib(32, 8),
            l2: CacheGeometry::kib(2048, 16),
            l3: CacheGeometry::kib(32 * 1024, 16),
            lat: Latencies {
                l2: 16,
                l3: ns_to_cycles(30.0, ghz),
                mem_local: ns_to_cycles(110.0, ghz),
                mem_remote: ns_to_cycles(180.0, ghz),
                xfer_socket: ns_to_cycles(50.0, ghz),
                xfer_remote: ns_to_cycles(150.0, ghz),
            },
        };
        for (level, kind, geo) in read_sysfs_caches() {
            match (level, kind.as_str()) {
                (1, "Data") => m.l1d = geo,
                (1, "Instruction") => m.l1i = geo,
                (2, _) => m.l2 = geo,
                (3, _) => m.l3 = geo,
                _ => {}
            }
        }
        m
    }

    /// A preset by name: `nehalem` (default) or `host`.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "nehalem" | "nehalem-e5540" => Some(Machine::nehalem()),
            "host" => Some(Machine::host()),
            _ => None,
        }
    }

    /// Sockets needed for `cores` cores.
    pub fn sockets(&self, cores: usize) -> usize {
        cores.max(1).div_ceil(self.cores_per_socket.max(1))
    }

    pub fn cycles_to_ns(&self, cycles: u64) -> u64 {
        (cycles as f64 / self.clock_ghz.max(1e-3)) as u64
    }

    pub fn ns_to_cycles(&self, ns: f64) -> u64 {
        (ns * self.clock_ghz).max(0.0) as u64
    }
}

fn read_clock_ghz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = text
        .lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    (mhz > 100.0 && mhz < 10_000.0).then_some(mhz / 1000.0)
}

/// `(level, type, geometry)` of each cache of CPU 0 that sysfs describes.
fn read_sysfs_caches() -> Vec<(u32, String, CacheGeometry)> {
    let mut out = Vec::new();
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let Ok(dir) = std::fs::read_dir(base) else {
        return out;
    };
    for entry in dir.flatten() {
        let p = entry.path();
        let read = |f: &str| {
            std::fs::read_to_string(p.join(f))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let (Some(level), Some(kind), Some(size), Some(ways)) = (
            read("level").and_then(|s| s.parse::<u32>().ok()),
            read("type"),
            read("size"),
            read("ways_of_associativity").and_then(|s| s.parse::<usize>().ok()),
        ) else {
            continue;
        };
        let bytes = match size.strip_suffix('K') {
            Some(k) => k.parse::<usize>().ok().map(|k| k * 1024),
            None => size
                .strip_suffix('M')
                .and_then(|m| m.parse::<usize>().ok())
                .map(|m| m << 20),
        };
        // Cap at 1 GiB of modelled cache: the tag arrays are allocated per run.
        if let Some(bytes) = bytes.filter(|b| (LINE..=1 << 30).contains(b)) {
            out.push((
                level,
                kind,
                CacheGeometry {
                    bytes,
                    ways: ways.clamp(1, crate::cache::MAX_WAYS),
                },
            ));
        }
    }
    out
}

/// Where each packet's base service time comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CostModel {
    /// Cycles by transport protocol plus cycles per byte of L4 payload (a PAM-like engine).
    Cycles {
        tcp: f64,
        udp: f64,
        other: f64,
        per_payload_byte: f64,
    },
    /// Nanoseconds per packet plus nanoseconds per wire byte: the `synthetic` workload of `flowbundle bench`
    /// (`flowbundle_worker::Cost::Model`), to predict what the bench measures.
    Nanos { base_ns: f64, per_wire_byte_ns: f64 },
    /// Nanoseconds per packet from the input's per-packet cost array (an engine cost file).
    PerPacket,
}

/// Whose state lines a packet touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKey {
    /// Each connection (the prepared trace's dense flow index) has its own lines: an engine's connection entries.
    Flow,
    /// Lines per connection bundle (low 16 bits of `Desc::conn`): exactly what the bench's `synthetic` workload
    /// touches (`flowbundle_worker::Synthetic` with `state_lines`).
    ConnBundle,
}

/// What processing a packet costs and touches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkModel {
    pub name: String,
    pub cost: CostModel,
    /// Multiplies every base cost (what `--calibrate` fits).
    pub cost_scale: f64,
    /// Flow-state lines read and written per packet (its connection's).
    pub state_lines: usize,
    pub state_key: StateKey,
    /// Stream the packet's bytes through the core's caches (one line per 64 bytes on the wire).
    pub stream_payload: bool,
    /// Further lines streamed per packet (decoded layers, parser scratch).
    pub stream_lines: usize,
    /// Share of the base cost spent before the policy's claim (the decode).
    pub prepare_share: f64,
}

impl Default for WorkModel {
    fn default() -> Self {
        WorkModel::pam()
    }
}

impl WorkModel {
    /// A PAM-like stateful DPI engine. See the module documentation for the sources.
    pub fn pam() -> Self {
        WorkModel {
            name: "pam".into(),
            cost: CostModel::Cycles {
                tcp: 3000.0,
                udp: 2000.0,
                other: 600.0,
                per_payload_byte: 2.0,
            },
            cost_scale: 1.0,
            state_lines: 16,
            state_key: StateKey::Flow,
            stream_payload: true,
            stream_lines: 32,
            prepare_share: 0.2,
        }
    }

    /// The bench's `synthetic` workload with the bench CLI's defaults (3,000 ns + 2 ns per wire byte, 4 state lines
    /// per connection bundle, 10% before the claim): a busy loop that touches nothing but its state lines.
    pub fn synthetic(
        base_ns: f64,
        per_wire_byte_ns: f64,
        state_lines: usize,
        prepare_share: f64,
    ) -> Self {
        WorkModel {
            name: "synthetic".into(),
            cost: CostModel::Nanos {
                base_ns,
                per_wire_byte_ns,
            },
            cost_scale: 1.0,
            state_lines,
            state_key: StateKey::ConnBundle,
            stream_payload: false,
            stream_lines: 0,
            prepare_share,
        }
    }

    /// A preset by name: `pam` (default) or `synthetic` (the bench CLI's defaults).
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "pam" => Some(WorkModel::pam()),
            "synthetic" => Some(WorkModel::synthetic(3000.0, 2.0, 4, 0.1)),
            _ => None,
        }
    }
}

/// Cycles the runtime spends around each packet, outside the policy's placement decisions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overheads {
    /// Dispatcher, per accepted packet.
    pub dispatch: u32,
    /// Dispatcher, extra when a packet goes to two queues (`lfb` and `lfb-affinity` opening a bundle: its FBQ and a
    /// receive queue).
    pub dual_enqueue: u32,
    /// Worker, per packet taken (`next`, `done`, the descriptor's line).
    pub worker: u32,
    /// Worker, per `ph` handoff (append to another worker's connection queue), beyond the connection entry's line.
    pub handoff: u32,
    /// Lines the handing-off worker writes for the owner (the decoded layers copied with the packet, ANCS'10
    /// §4.3.1), which the owner then reads from the other core's cache: each a coherence transfer.
    #[serde(default = "default_handoff_lines")]
    pub handoff_lines: u32,
}

fn default_handoff_lines() -> u32 {
    4
}

impl Default for Overheads {
    fn default() -> Self {
        Overheads {
            dispatch: 50,
            dual_enqueue: 36,
            worker: 150,
            handoff: 150,
            handoff_lines: default_handoff_lines(),
        }
    }
}

impl Overheads {
    /// The same costs expressed for another clock: the defaults are Nehalem cycles (ns × 2.53).
    pub fn at_clock(ghz: f64) -> Self {
        let d = Overheads::default();
        let k = ghz / 2.53;
        let f = |c: u32| (f64::from(c) * k).round() as u32;
        Overheads {
            dispatch: f(d.dispatch),
            dual_enqueue: f(d.dual_enqueue),
            worker: f(d.worker),
            handoff: f(d.handoff),
            handoff_lines: d.handoff_lines,
        }
    }
}

/// Everything the model needs besides the trace and the policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub machine: Machine,
    pub work: WorkModel,
    pub overheads: Overheads,
}

impl Params {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<Params, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        let m = &self.machine;
        let w = &self.work;
        format!(
            "machine {} ({:.2} GHz, L1d {} KB/{}w, L2 {} KB/{}w, L3 {} KB/{}w per {} cores; L2 {} L3 {} mem {}/{} xfer {}/{} cycles); \
             work {} ({:?} ×{:.3}, {} state lines by {:?}, payload {}, +{} lines, {:.0}% before claim); \
             overheads dispatch {} dual {} worker {} handoff {} cycles + {} lines",
            m.name,
            m.clock_ghz,
            m.l1d.bytes / 1024,
            m.l1d.ways,
            m.l2.bytes / 1024,
            m.l2.ways,
            m.l3.bytes / 1024,
            m.l3.ways,
            m.cores_per_socket,
            m.lat.l2,
            m.lat.l3,
            m.lat.mem_local,
            m.lat.mem_remote,
            m.lat.xfer_socket,
            m.lat.xfer_remote,
            w.name,
            w.cost,
            w.cost_scale,
            w.state_lines,
            w.state_key,
            if w.stream_payload {
                "streamed"
            } else {
                "not touched"
            },
            w.stream_lines,
            w.prepare_share * 100.0,
            self.overheads.dispatch,
            self.overheads.dual_enqueue,
            self.overheads.worker,
            self.overheads.handoff,
            self.overheads.handoff_lines,
        )
    }

    /// Check ranges the simulator relies on.
    pub fn validate(&self) -> Result<(), String> {
        let m = &self.machine;
        let w = &self.work;
        if !(m.clock_ghz.is_finite() && m.clock_ghz > 0.01 && m.clock_ghz < 100.0) {
            return Err(format!("clock {} GHz out of range", m.clock_ghz));
        }
        for (name, g) in [("L1d", m.l1d), ("L1i", m.l1i), ("L2", m.l2), ("L3", m.l3)] {
            if g.ways == 0 || g.ways > crate::cache::MAX_WAYS || g.bytes < LINE || g.bytes > 1 << 30
            {
                return Err(format!(
                    "{name}: {} bytes, {} ways out of range",
                    g.bytes, g.ways
                ));
            }
        }
        if m.cores_per_socket == 0 {
            return Err("cores per socket must be at least 1".into());
        }
        if w.state_lines > 256 || w.stream_lines > 4096 {
            return Err("state lines ≤ 256 and stream lines ≤ 4,096 per packet".into());
        }
        if !(w.cost_scale.is_finite() && w.cost_scale >= 0.0 && w.cost_scale <= 1e6) {
            return Err(format!("cost scale {} out of range", w.cost_scale));
        }
        if !(w.prepare_share.is_finite() && (0.0..=1.0).contains(&w.prepare_share)) {
            return Err(format!("prepare share {} not in 0..=1", w.prepare_share));
        }
        let costs: &[f64] = match &w.cost {
            CostModel::Cycles {
                tcp,
                udp,
                other,
                per_payload_byte,
            } => &[*tcp, *udp, *other, *per_payload_byte],
            CostModel::Nanos {
                base_ns,
                per_wire_byte_ns,
            } => &[*base_ns, *per_wire_byte_ns],
            CostModel::PerPacket => &[],
        };
        if costs
            .iter()
            .any(|c| !(c.is_finite() && *c >= 0.0 && *c < 1e9))
        {
            return Err("costs must be finite, non-negative and below 1e9".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nehalem_defaults_are_the_e5540() {
        let m = Machine::nehalem();
        assert_eq!(m.l1d.lines(), 512);
        assert_eq!(m.l2.lines(), 4096);
        assert_eq!(m.l3.lines(), 131_072);
        assert_eq!(m.lat.mem_local, 164);
        assert_eq!(m.sockets(14), 4);
        assert_eq!(m.sockets(4), 1);
        assert!(Params::default().validate().is_ok());
    }

    #[test]
    fn host_and_presets_validate_and_round_trip() {
        let p = Params {
            machine: Machine::host(),
            work: WorkModel::named("synthetic").unwrap(),
            overheads: Overheads::at_clock(3.0),
        };
        assert!(p.validate().is_ok(), "{p:?}");
        let back: Params = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        assert!(Machine::named("vax").is_none());
        assert!(WorkModel::named("nope").is_none());
        assert!(!p.describe().is_empty());
    }

    #[test]
    fn bad_parameters_are_refused() {
        let mut p = Params::default();
        p.machine.l1d.ways = 0;
        assert!(p.validate().is_err());
        let mut p = Params::default();
        p.work.prepare_share = 1.5;
        assert!(p.validate().is_err());
        let mut p = Params::default();
        p.work.cost = CostModel::Nanos {
            base_ns: f64::NAN,
            per_wire_byte_ns: 0.0,
        };
        assert!(p.validate().is_err());
    }
}
