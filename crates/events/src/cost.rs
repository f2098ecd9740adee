//! # Per-packet cost accounting
//!
//! The scheduling papers measure DPI cost the way the engine spends it: the ANCS'10 paper reports average cycles per
//! packet and the ten most expensive connections, the Verdú thesis (ch. 4) the cost of a flow's 1st, 2nd, ... packet
//! (the first packets of a flow, where identification happens, cost the most). The engine measures the same things
//! on itself:
//!
//! * **every packet**: two reads of the cycle counter around the engine's `process` (`rdtsc` on x86_64,
//!   about 20 cycles each; a monotonic nanosecond clock elsewhere). The cycles go to the packet's flow (for the top
//!   ten), to a histogram by position in flow (positions 1 to [`POSITIONS`], the rest in one bucket) and, when
//!   the engine's `CostConfig::per_packet_records` is on, to one [`CostRecord`] per packet;
//! * **one packet in N** (the engine's `CostConfig::stage_sample_every`): the time in each inspection stage
//!   (decode, flow lookup, reassembly, detection), for the bench harness's "life of a packet" breakdown. Sampling
//!   keeps the cost of the extra counter reads near one cycle per packet.
//!
//! Nanoseconds are cycles divided by the TSC frequency, estimated once per process against the monotonic clock
//! ([`tsc_hz`]).
//!
//! ## Cost files (`--cost-out`)
//! One record per inspected packet, in processing order, for the simulator and the synthetic workload.
//!
//! **Binary** (any file name not ending in `.csv`): a 32-byte header, then 32-byte records, all little-endian.
//!
//! | header bytes | field |
//! |---|---|
//! | 0..8 | magic `FBCOST01` |
//! | 8..12 | record size (32) |
//! | 12..16 | flags (0) |
//! | 16..24 | TSC frequency in Hz as an `f64` (0 when cycles are nanoseconds) |
//! | 24..32 | reserved (0) |
//!
//! | record bytes | field |
//! |---|---|
//! | 0..8 | packet number (`u64`: the input packet index, or the bench harness's descriptor id) |
//! | 8..16 | flow id (`u64`, the EVE `flow_id`; 0 for packets outside any flow) |
//! | 16..20 | nanoseconds (`u32`, saturating) |
//! | 20..24 | position in flow (`u32`, 1-based; 0 outside any flow) |
//! | 24..28 | cycles (`u32`, saturating) |
//! | 28 | IP protocol (`u8`) |
//! | 29 | direction: 0 to server, 1 to client, 2 unknown |
//! | 30..32 | application protocol known at that packet (`u16`, [`app_code`]; 0 = not yet identified) |
//!
//! The label in a record is the one known *when the packet was inspected*; a flow's final label is in its EVE `flow`
//! record, joined on the flow id. **CSV** (`.csv`): a header line `packet,flow_id,ns,position,cycles,proto,dir,app`
//! then one line per record, `app` as the protocol name.

use std::io::{self, Read, Write};
use std::sync::OnceLock;
use std::time::Instant;

use flowbundle_decode::FlowKey;
use flowbundle_types::AppProto;

use crate::event::AppLabel;

/// Positions in flow counted one by one; later packets share one bucket.
pub const POSITIONS: usize = 64;

/// Magic of binary cost files.
pub const MAGIC: &[u8; 8] = b"FBCOST01";

/// The cycle counter: `rdtsc` on x86_64, else nanoseconds since the first call.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static BASE: OnceLock<Instant> = OnceLock::new();
        BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Counter ticks per second: the TSC frequency measured once (about 20 ms) against the monotonic clock on x86_64,
/// 1e9 elsewhere (the counter is nanoseconds).
pub fn tsc_hz() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        if cfg!(not(target_arch = "x86_64")) {
            return 1e9;
        }
        let mut best = f64::INFINITY;
        let mut hz = 1e9;
        for _ in 0..3 {
            let (t0, c0) = (Instant::now(), now());
            while t0.elapsed().as_micros() < 7_000 {
                std::hint::spin_loop();
            }
            let (c1, t1) = (now(), t0.elapsed());
            let secs = t1.as_secs_f64();
            // Keep the shortest-looking window's estimate: the least disturbed by preemption at its edges.
            if secs > 0.0 && secs < best {
                best = secs;
                hz = c1.wrapping_sub(c0) as f64 / secs;
            }
        }
        if hz.is_finite() && hz > 1e6 { hz } else { 1e9 }
    })
}

/// Cycles to nanoseconds at the measured frequency.
pub fn cycles_to_ns(cycles: u64) -> f64 {
    cycles as f64 * 1e9 / tsc_hz()
}

/// A small stable code per application protocol for cost records (0 = unknown; built-in protocols by their order in
/// [`AppProto`] plus one; signature labels 0xfffe; IP-protocol labels 0xfffd).
pub fn app_code(app: &AppLabel) -> u16 {
    match app {
        AppLabel::Unknown => 0,
        AppLabel::Proto(p) => u16::try_from(p.index() + 1).unwrap_or(0),
        AppLabel::Signature(_) => 0xfffe,
        AppLabel::Ip(_) => 0xfffd,
    }
}

/// The built-in protocol of cost-file code `code` (the inverse of [`app_code`] for built-in protocols).
pub fn app_by_code(code: u16) -> Option<AppProto> {
    AppProto::from_index(usize::from(code).checked_sub(1)?)
}

/// One packet's cost (see the module documentation for the file layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CostRecord {
    pub packet: u64,
    pub flow_id: u64,
    pub ns: u32,
    pub position: u32,
    pub cycles: u32,
    pub proto: u8,
    /// 0 to server, 1 to client, 2 unknown.
    pub dir: u8,
    pub app: u16,
}

impl CostRecord {
    pub const SIZE: usize = 32;

    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.packet.to_le_bytes());
        b[8..16].copy_from_slice(&self.flow_id.to_le_bytes());
        b[16..20].copy_from_slice(&self.ns.to_le_bytes());
        b[20..24].copy_from_slice(&self.position.to_le_bytes());
        b[24..28].copy_from_slice(&self.cycles.to_le_bytes());
        b[28] = self.proto;
        b[29] = self.dir;
        b[30..32].copy_from_slice(&self.app.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; 32]) -> Self {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        CostRecord {
            packet: u64_at(0),
            flow_id: u64_at(8),
            ns: u32_at(16),
            position: u32_at(20),
            cycles: u32_at(24),
            proto: b[28],
            dir: b[29],
            app: u16::from_le_bytes([b[30], b[31]]),
        }
    }
}

/// Writes cost records as binary or CSV (see the module documentation).
pub struct CostWriter<W: Write> {
    out: CostOut<W>,
    records: u64,
}

/// The two formats of [`CostWriter`]: CSV goes through the `csv` crate's writer.
enum CostOut<W: Write> {
    Binary(W),
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> CostWriter<W> {
    /// A writer; `csv` selects the text format. Writes the header now.
    pub fn new(mut out: W, csv: bool) -> io::Result<Self> {
        let out = if csv {
            let mut w = csv::Writer::from_writer(out);
            w.write_record([
                "packet", "flow_id", "ns", "position", "cycles", "proto", "dir", "app",
            ])?;
            CostOut::Csv(Box::new(w))
        } else {
            let mut h = [0u8; 32];
            h[0..8].copy_from_slice(MAGIC);
            h[8..12].copy_from_slice(&(CostRecord::SIZE as u32).to_le_bytes());
            let hz = if cfg!(target_arch = "x86_64") {
                tsc_hz()
            } else {
                0.0
            };
            h[16..24].copy_from_slice(&hz.to_le_bytes());
            out.write_all(&h)?;
            CostOut::Binary(out)
        };
        Ok(CostWriter { out, records: 0 })
    }

    pub fn write(&mut self, r: &CostRecord) -> io::Result<()> {
        self.records += 1;
        match &mut self.out {
            CostOut::Csv(w) => {
                let app = app_by_code(r.app).map_or(
                    match r.app {
                        0xfffe => "signature",
                        0xfffd => "ip",
                        _ => "",
                    },
                    |p| p.name(),
                );
                w.serialize((
                    r.packet, r.flow_id, r.ns, r.position, r.cycles, r.proto, r.dir, app,
                ))?;
                Ok(())
            }
            CostOut::Binary(w) => w.write_all(&r.to_bytes()),
        }
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn finish(self) -> io::Result<W> {
        match self.out {
            CostOut::Csv(w) => w.into_inner().map_err(|e| e.into_error()),
            CostOut::Binary(mut w) => {
                w.flush()?;
                Ok(w)
            }
        }
    }
}

/// Reads a binary cost file: the TSC frequency of its header and its records.
pub fn read_binary(mut r: impl Read) -> io::Result<(f64, Vec<CostRecord>)> {
    let mut h = [0u8; 32];
    r.read_exact(&mut h)?;
    if &h[0..8] != MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a flowbundle cost file (bad magic)",
        ));
    }
    let size = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    if size != CostRecord::SIZE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unsupported record size {size}"),
        ));
    }
    let hz = f64::from_le_bytes(h[16..24].try_into().unwrap_or([0; 8]));
    let mut out = Vec::new();
    let mut b = [0u8; 32];
    loop {
        match r.read_exact(&mut b) {
            Ok(()) => out.push(CostRecord::from_bytes(&b)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
    }
    Ok((hz, out))
}

/// Nanoseconds per packet indexed by packet number (what `flowbundle_worker::Cost::PerPacket` takes); packets
/// without a record cost 0.
pub fn ns_by_packet(records: &[CostRecord]) -> Vec<u32> {
    let n = records
        .iter()
        .map(|r| r.packet as usize + 1)
        .max()
        .unwrap_or(0);
    let mut v = vec![0u32; n];
    for r in records {
        if let Some(s) = v.get_mut(r.packet as usize) {
            *s = r.ns;
        }
    }
    v
}

/// One of the most expensive connections.
#[derive(Debug, Clone, PartialEq)]
pub struct TopConn {
    pub cycles: u64,
    pub flow_id: u64,
    pub key: FlowKey,
    pub app: AppLabel,
    pub packets: u64,
    pub bytes: u64,
}

/// Time per inspection stage, summed over the sampled packets, in cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StageTimes {
    /// Packets timed.
    pub samples: u64,
    pub decode: u64,
    /// Finding or creating the flow (and expiring idle ones).
    pub lookup: u64,
    /// TCP state and reassembly, without the detection it feeds.
    pub reassembly: u64,
    /// Classification, signatures, parsers and rules.
    pub detection: u64,
}

impl std::ops::AddAssign for StageTimes {
    fn add_assign(&mut self, o: Self) {
        self.samples += o.samples;
        self.decode += o.decode;
        self.lookup += o.lookup;
        self.reassembly += o.reassembly;
        self.detection += o.detection;
    }
}

/// What `trace stats --cost` and the bench harness read: totals, cost by position in flow, the ten most expensive
/// connections and the stage breakdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostSummary {
    /// Counter ticks per second (see [`tsc_hz`]); 0 for this machine's counter, measured only when a figure in time
    /// is asked for ([`CostSummary::hz`]).
    pub tsc_hz: f64,
    pub packets: u64,
    pub cycles: u64,
    /// `(packets, cycles)` for positions 1..=[`POSITIONS`] (index 0 is position 1) and, last, every later position.
    pub by_position: Vec<(u64, u64)>,
    /// Most expensive connections first (at most ten).
    pub top: Vec<TopConn>,
    pub stages: StageTimes,
}

impl CostSummary {
    /// An empty summary of this machine's counter, with a bucket per position in flow.
    ///
    /// Why the frequency is not measured here: every worker context makes one, and measuring spins about 20 ms on
    /// the clock (a twentieth of a run of the 420,000-packet merged trace), which a run that never shows a time
    /// (no `--cost`, no bench harness) would pay for nothing. [`CostSummary::hz`] measures it when asked.
    pub fn new() -> Self {
        CostSummary {
            by_position: vec![(0, 0); POSITIONS + 1],
            ..CostSummary::default()
        }
    }

    /// Counter ticks per second of these cycles: the recorded frequency, or this machine's ([`tsc_hz`], measured
    /// once per process on first use) when none was recorded.
    pub fn hz(&self) -> f64 {
        if self.tsc_hz > 0.0 {
            self.tsc_hz
        } else {
            tsc_hz()
        }
    }

    /// Average cycles per packet.
    pub fn cycles_per_packet(&self) -> f64 {
        self.cycles as f64 / self.packets.max(1) as f64
    }

    /// Average nanoseconds per packet.
    pub fn ns_per_packet(&self) -> f64 {
        self.cycles_per_packet() * 1e9 / self.hz().max(1.0)
    }

    /// Counts one packet at 1-based `position` in its flow.
    #[inline]
    pub fn add_packet(&mut self, position: u32, cycles: u64) {
        self.packets += 1;
        self.cycles += cycles;
        let i = (position as usize).clamp(1, POSITIONS + 1) - 1;
        if let Some(b) = self.by_position.get_mut(i) {
            b.0 += 1;
            b.1 += cycles;
        }
    }

    /// Keeps `c` if it is among the ten most expensive connections so far.
    pub fn offer_top(&mut self, c: TopConn) {
        if self.top.len() == 10 && self.top.last().is_some_and(|l| l.cycles >= c.cycles) {
            return;
        }
        let at = self.top.partition_point(|t| t.cycles >= c.cycles);
        self.top.insert(at, c);
        self.top.truncate(10);
    }

    /// Adds another worker's summary.
    pub fn merge(&mut self, o: &CostSummary) {
        self.packets += o.packets;
        self.cycles += o.cycles;
        if self.by_position.len() < o.by_position.len() {
            self.by_position.resize(o.by_position.len(), (0, 0));
        }
        for (a, b) in self.by_position.iter_mut().zip(&o.by_position) {
            a.0 += b.0;
            a.1 += b.1;
        }
        for t in &o.top {
            self.offer_top(t.clone());
        }
        self.stages += o.stages;
        if self.tsc_hz == 0.0 {
            self.tsc_hz = o.tsc_hz;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_a_binary_file() {
        let recs = [
            CostRecord {
                packet: 3,
                flow_id: 77,
                ns: 1200,
                position: 1,
                cycles: 3000,
                proto: 6,
                dir: 0,
                app: app_code(&AppLabel::Proto(AppProto::Http)),
            },
            CostRecord {
                packet: 0,
                ..CostRecord::default()
            },
        ];
        let mut w = CostWriter::new(Vec::new(), false).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 32 * 3);
        let (_, back) = read_binary(&bytes[..]).unwrap();
        assert_eq!(back, recs);
        assert_eq!(ns_by_packet(&back), vec![0, 0, 0, 1200]);
        assert_eq!(app_by_code(back[0].app), Some(AppProto::Http));
        assert!(read_binary(&b"nonsense, not a cost file at all!!"[..]).is_err());
        let mut w = CostWriter::new(Vec::new(), true).unwrap();
        w.write(&recs[0]).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "packet,flow_id,ns,position,cycles,proto,dir,app\n3,77,1200,1,3000,6,0,HTTP\n"
        );
    }

    #[test]
    fn positions_and_top_ten() {
        let mut s = CostSummary::new();
        s.add_packet(1, 100);
        s.add_packet(1, 300);
        s.add_packet(500, 10);
        assert_eq!(s.by_position[0], (2, 400));
        assert_eq!(s.by_position[POSITIONS], (1, 10));
        assert_eq!(s.cycles_per_packet(), 410.0 / 3.0);
        let key = FlowKey::new([1, 2, 3, 4].into(), 1, [5, 6, 7, 8].into(), 2, 6).0;
        for c in 0..25u64 {
            s.offer_top(TopConn {
                cycles: c * 7 % 25,
                flow_id: c,
                key,
                app: AppLabel::Unknown,
                packets: 1,
                bytes: 1,
            });
        }
        let cycles: Vec<u64> = s.top.iter().map(|t| t.cycles).collect();
        assert_eq!(cycles, (15..25).rev().collect::<Vec<_>>());
        assert!(tsc_hz() > 1e6);
    }

    #[test]
    fn a_new_summary_leaves_the_frequency_to_the_first_time_figure() {
        let mut s = CostSummary::new();
        assert_eq!(s.tsc_hz, 0.0, "nothing measured yet");
        s.add_packet(1, 3000);
        assert_eq!(s.hz(), tsc_hz(), "this machine's counter");
        assert_eq!(s.ns_per_packet(), 3000.0 * 1e9 / tsc_hz());
        // A frequency recorded elsewhere (a cost file, another machine) is the one the figures use.
        s.tsc_hz = 2.0e9;
        assert_eq!(s.ns_per_packet(), 1500.0);
        let mut m = CostSummary::new();
        m.merge(&s);
        assert_eq!(m.hz(), 2.0e9, "a merge keeps a recorded frequency");
    }

    #[test]
    fn every_protocol_has_a_code() {
        for &p in AppProto::ALL {
            let code = app_code(&AppLabel::Proto(p));
            assert_ne!(code, 0, "{p}");
            assert_eq!(app_by_code(code), Some(p), "{p}: the code reads back");
        }
    }
}
