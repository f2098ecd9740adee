//! What the simulator replays: a prepared trace reduced to the few facts the model uses per packet, and the engine's
//! per-packet cost files.
//!
//! [`SimInput::from_prepared`] takes the bench harness's pre-scheduling stage ([`flowbundle_lab_core::Prepared`]: the
//! same decode, defragmentation and hashes, so the simulated policies see exactly the descriptors the real ones do)
//! and decodes each dispatched packet once more for its transport protocol and payload length (the cost model's
//! inputs). Memory: 24 bytes per packet beyond the descriptors; the packet bytes are not kept.
//!
//! Cost files come from the engine (`flowbundle inspect --cost-out F`, format documented in `flowbundle-inspect`'s
//! `cost` module): binary (`FBCOST01` header, 32-byte records) or CSV (a header naming `packet` and `ns` or
//! `cost_ns`, read by `flowbundle_lab_core::cost`). Both are hostile input: sizes are checked before anything is
//! allocated from them, records naming packets outside the trace are counted and skipped, and nothing panics.

use flowbundle_decode::{DecodeOptions, L4, decode};
use flowbundle_lab_core::Prepared;
use flowbundle_lab_core::metrics::TraceInfo;
use flowbundle_lab_core::prep::NO_FLOW;
use flowbundle_scheduler::Desc;
use std::io::Read;

/// A trace ready for the simulator. Vectors are indexed by descriptor id (`descs[i].id == i`).
#[derive(Clone, Debug, Default)]
pub struct SimInput {
    pub info: TraceInfo,
    pub descs: Vec<Desc>,
    /// Dense flow index per packet (`NO_FLOW` for non-IP).
    pub flows: Vec<u32>,
    /// Capture time, ns from the first packet.
    pub ts_ns: Vec<u64>,
    /// Bytes on the wire.
    pub wire_len: Vec<u32>,
    /// Bytes of L4 payload.
    pub payload_len: Vec<u32>,
    /// IP protocol (6 TCP, 17 UDP, 0 when not IP).
    pub proto: Vec<u8>,
    /// Per-packet cost in ns (an engine cost file), for [`crate::params::CostModel::PerPacket`].
    pub cost_ns: Option<Vec<u32>>,
    /// Number of distinct flows (`flows` values are below it).
    pub flow_count: u32,
}

impl SimInput {
    /// Reduce a prepared trace (see the module documentation).
    pub fn from_prepared(p: &Prepared) -> Self {
        let opts = DecodeOptions::default();
        let n = p.len();
        let mut wire_len = Vec::with_capacity(n);
        let mut payload_len = Vec::with_capacity(n);
        let mut proto = Vec::with_capacity(n);
        for i in 0..n {
            match p.trace.try_get(i) {
                Some(rec) => {
                    let d = decode(&rec, &opts);
                    wire_len.push(rec.orig_len);
                    payload_len.push(d.payload.len() as u32);
                    proto.push(match d.l4 {
                        L4::Tcp(_) => 6,
                        L4::Udp(_) => 17,
                        _ => d.ip.map_or(0, |ip| ip.proto),
                    });
                }
                None => {
                    wire_len.push(0);
                    payload_len.push(0);
                    proto.push(0);
                }
            }
        }
        let flow_count = p
            .flows
            .iter()
            .filter(|&&f| f != NO_FLOW)
            .max()
            .map_or(0, |&m| m + 1);
        SimInput {
            info: flowbundle_lab_core::metrics::trace_info(p),
            descs: p.descs.clone(),
            flows: p.flows.clone(),
            ts_ns: p.ts_ns.clone(),
            wire_len,
            payload_len,
            proto,
            cost_ns: None,
            flow_count,
        }
    }

    pub fn len(&self) -> usize {
        self.descs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// Packets of each flow, indexed by flow.
    pub fn flow_sizes(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.flow_count as usize];
        for &f in &self.flows {
            if let Some(c) = v.get_mut(f as usize) {
                *c += 1;
            }
        }
        v
    }

    /// The flow with the most packets and its share of the trace.
    pub fn largest_flow(&self) -> Option<(u32, f64)> {
        let sizes = self.flow_sizes();
        let (f, &n) = sizes
            .iter()
            .enumerate()
            .max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i)))?;
        Some((f as u32, n as f64 / self.len().max(1) as f64))
    }

    /// Check that the vectors agree with each other (an input built by hand may not).
    pub fn validate(&self) -> Result<(), String> {
        let n = self.descs.len();
        if n > u32::MAX as usize - 1 {
            return Err(format!("{n} packets: more than 32-bit ids allow"));
        }
        for (name, len) in [
            ("flows", self.flows.len()),
            ("ts_ns", self.ts_ns.len()),
            ("wire_len", self.wire_len.len()),
            ("payload_len", self.payload_len.len()),
            ("proto", self.proto.len()),
        ] {
            if len != n {
                return Err(format!("{name} has {len} entries for {n} packets"));
            }
        }
        if let Some(c) = &self.cost_ns
            && c.len() != n
        {
            return Err(format!("cost_ns has {} entries for {n} packets", c.len()));
        }
        if let Some(i) = (0..n).find(|&i| self.descs[i].id as usize != i) {
            return Err(format!("descriptor {i} has id {}", self.descs[i].id));
        }
        if let Some(&f) = self
            .flows
            .iter()
            .find(|&&f| f != NO_FLOW && f >= self.flow_count)
        {
            return Err(format!("flow {f} beyond flow_count {}", self.flow_count));
        }
        Ok(())
    }
}

/// What reading a cost file found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostRead {
    /// Nanoseconds per packet number of the file (0 where it says nothing), as long as the trace.
    pub cost_ns: Vec<u32>,
    pub rows: u64,
    /// Records naming packets beyond the trace.
    pub out_of_range: u64,
    /// Malformed records or rows.
    pub malformed: u64,
    /// The file's TSC frequency (binary files), Hz; 0 when unknown.
    pub tsc_hz: f64,
}

/// Why a cost file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CostFileError {
    #[error("reading the cost file: {0}")]
    Io(#[from] std::io::Error),
    #[error("cost file: {0}")]
    Csv(#[from] flowbundle_lab_core::cost::CostError),
    #[error("not a flowbundle cost file: {0}")]
    Format(&'static str),
}

/// Magic of the engine's binary cost files.
pub const COST_MAGIC: &[u8; 8] = b"FBCOST01";
const RECORD: usize = 32;

/// Read a binary (`FBCOST01`) or CSV cost file for a trace of `packets` packets numbered as in the file.
pub fn read_cost_file(path: &std::path::Path, packets: usize) -> Result<CostRead, CostFileError> {
    let mut f = std::fs::File::open(path)?;
    let mut head = [0u8; 8];
    let got = read_up_to(&mut f, &mut head)?;
    if got == 8 && &head == COST_MAGIC {
        let f = std::fs::File::open(path)?;
        return parse_binary(std::io::BufReader::new(f), packets);
    }
    let f = std::fs::File::open(path)?;
    let c = flowbundle_lab_core::cost::parse(std::io::BufReader::new(f), packets)?;
    Ok(CostRead {
        cost_ns: c.cost_ns,
        rows: c.rows,
        out_of_range: c.out_of_range,
        malformed: c.malformed,
        tsc_hz: 0.0,
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Parse a binary cost file (the engine's `FBCOST01` layout: a 32-byte header, then 32-byte little-endian records
/// `packet u64, flow u64, ns u32, position u32, cycles u32, proto u8, dir u8, app u16`). Memory stays one `u32` per
/// trace packet whatever the file claims; a trailing partial record is counted as malformed.
pub fn parse_binary(mut r: impl Read, packets: usize) -> Result<CostRead, CostFileError> {
    let mut head = [0u8; 32];
    if read_up_to(&mut r, &mut head)? < 32 {
        return Err(CostFileError::Format("shorter than its 32-byte header"));
    }
    if &head[0..8] != COST_MAGIC {
        return Err(CostFileError::Format("bad magic"));
    }
    let size = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
    if size != RECORD {
        return Err(CostFileError::Format("record size is not 32"));
    }
    let hz = f64::from_le_bytes(head[16..24].try_into().unwrap_or([0; 8]));
    let mut out = CostRead {
        cost_ns: vec![0; packets],
        tsc_hz: if hz.is_finite() && hz > 0.0 { hz } else { 0.0 },
        ..CostRead::default()
    };
    let mut rec = [0u8; RECORD];
    loop {
        let got = read_up_to(&mut r, &mut rec)?;
        if got == 0 {
            break;
        }
        if got < RECORD {
            out.malformed += 1;
            break;
        }
        let packet = u64::from_le_bytes(rec[0..8].try_into().unwrap_or([0; 8]));
        let ns = u32::from_le_bytes(rec[16..20].try_into().unwrap_or([0; 4]));
        match usize::try_from(packet).ok().filter(|&p| p < packets) {
            Some(p) => {
                out.cost_ns[p] = ns;
                out.rows += 1;
            }
            None => out.out_of_range += 1,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(packet: u64, ns: u32) -> [u8; 32] {
        let mut r = [0u8; 32];
        r[0..8].copy_from_slice(&packet.to_le_bytes());
        r[8..16].copy_from_slice(&7u64.to_le_bytes());
        r[16..20].copy_from_slice(&ns.to_le_bytes());
        r[24..28].copy_from_slice(&(ns * 3).to_le_bytes());
        r[28] = 6;
        r
    }

    fn header() -> Vec<u8> {
        let mut h = Vec::from(&COST_MAGIC[..]);
        h.extend_from_slice(&32u32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&3.0e9f64.to_le_bytes());
        h.extend_from_slice(&[0; 8]);
        h
    }

    #[test]
    fn binary_records_fill_their_packets() {
        let mut f = header();
        for (p, ns) in [(0u64, 100u32), (2, 300), (9, 5)] {
            f.extend_from_slice(&record(p, ns));
        }
        f.extend_from_slice(&[1, 2, 3]);
        let c = parse_binary(&f[..], 3).unwrap();
        assert_eq!(c.cost_ns, vec![100, 0, 300]);
        assert_eq!((c.rows, c.out_of_range, c.malformed), (2, 1, 1));
        assert_eq!(c.tsc_hz, 3.0e9);
    }

    #[test]
    fn bad_headers_are_refused() {
        assert!(parse_binary(&b"FBCOST01"[..], 1).is_err());
        let mut h = header();
        h[8] = 16;
        assert!(parse_binary(&h[..], 1).is_err());
        let mut h = header();
        h[0] = b'X';
        assert!(parse_binary(&h[..], 1).is_err());
    }

    #[test]
    fn files_of_both_formats_are_read() {
        let dir = std::env::temp_dir().join(format!("fb-sim-cost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("c.bin");
        let mut f = header();
        f.extend_from_slice(&record(1, 42));
        std::fs::write(&bin, &f).unwrap();
        assert_eq!(read_cost_file(&bin, 2).unwrap().cost_ns, vec![0, 42]);
        let csv = dir.join("c.csv");
        std::fs::write(
            &csv,
            "packet,flow_id,ns,position,cycles,proto,dir,app\n0,1,77,1,200,6,0,http\n",
        )
        .unwrap();
        assert_eq!(read_cost_file(&csv, 2).unwrap().cost_ns, vec![77, 0]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    proptest! {
        #[test]
        fn any_bytes_parse_without_panic_and_stay_bounded(
            body in proptest::collection::vec(any::<u8>(), 0..400),
            n in 0usize..50,
            with_header in any::<bool>(),
        ) {
            let mut f = if with_header { header() } else { Vec::new() };
            f.extend_from_slice(&body);
            if let Ok(c) = parse_binary(&f[..], n) {
                prop_assert_eq!(c.cost_ns.len(), n);
                prop_assert!(c.rows + c.out_of_range <= body.len() as u64 / 32);
            }
        }
    }
}
