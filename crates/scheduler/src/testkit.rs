//! Real captures as scheduler input, for tests and benches (feature `testkit`).
//!
//! Reads pcap/pcapng files from `../shared/data` and turns each packet into a [`Desc`] with the three hashes the
//! policies key on: `fid` = CRC-16/IBM-3740 of the IP pair (smaller address first), `conn` = a symmetric hash of the
//! 5-tuple (endpoints sorted), `rss` = symmetric Toeplitz (key 0x6d5a repeated) of addresses and ports. These stand in
//! for `flowbundle-decode`'s hashes until that crate provides its one-call `Desc` computation; for scheduling tests
//! any well-mixed symmetric hashes do. Packets that are not IP get all-zero hashes (one bundle), as a dispatcher that
//! cannot find a FID would do.
//!
//! Merging files keeps their address spaces apart by mixing the file's index into every hash, as the lab's `trace
//! merge` does by rewriting addresses.

use crate::Desc;
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_parser::{Block, PcapBlockOwned, PcapError, create_reader};
use std::path::{Path, PathBuf};

/// The shared test-data folder (`../shared/data` beside the repository), if present.
pub fn shared_data() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    p.is_dir().then_some(p)
}

/// A capture under the shared data folder, or `None` with a message on stderr (tests then skip).
pub fn shared_file(rel: &str) -> Option<PathBuf> {
    let p = shared_data()?.join(rel);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

/// The first `count` captures of `ndpi/pcap` in name order (a mixed, many-protocol set).
pub fn ndpi_captures(count: usize) -> Vec<PathBuf> {
    let Some(dir) = shared_data().map(|d| d.join("ndpi/pcap")) else {
        eprintln!("skipping: ../shared/data/ndpi/pcap not found");
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"));
    files.sort();
    files.truncate(count);
    files
}

/// Load captures one after another into descriptors numbered `0..`, at most `limit` packets. Unreadable files are
/// skipped with a message.
pub fn load(paths: &[PathBuf], limit: usize) -> Vec<Desc> {
    let mut out = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        if out.len() >= limit {
            break;
        }
        if let Err(e) = load_one(p, i as u32, limit, &mut out) {
            eprintln!("skipping {}: {e}", p.display());
        }
    }
    out
}

fn load_one(path: &Path, file: u32, limit: usize, out: &mut Vec<Desc>) -> Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = create_reader(1 << 20, f).map_err(|e| format!("{e:?}"))?;
    let mut linktypes: Vec<i32> = Vec::new();
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                let pkt = match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        linktypes = vec![h.network.0];
                        None
                    }
                    PcapBlockOwned::Legacy(b) => {
                        Some((linktypes.first().copied().unwrap_or(1), b.data, b.origlen))
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        linktypes.push(idb.linktype.0);
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => Some((
                        linktypes.get(epb.if_id as usize).copied().unwrap_or(1),
                        epb.data,
                        epb.origlen,
                    )),
                    PcapBlockOwned::NG(Block::SimplePacket(spb)) => Some((
                        linktypes.first().copied().unwrap_or(1),
                        spb.data,
                        spb.origlen,
                    )),
                    _ => None,
                };
                if let Some((lt, data, origlen)) = pkt {
                    let id = out.len() as u32;
                    out.push(describe(id, file, lt, data, origlen));
                }
                reader.consume(offset);
                if out.len() >= limit {
                    return Ok(());
                }
            }
            Err(PcapError::Eof) => return Ok(()),
            Err(PcapError::Incomplete(_)) => reader.refill().map_err(|e| format!("{e:?}"))?,
            Err(e) => return Err(format!("{e:?}")),
        }
    }
}

/// One packet's descriptor (hashes as in the module documentation).
pub fn describe(id: u32, file: u32, linktype: i32, data: &[u8], origlen: u32) -> Desc {
    let len = origlen.min(u32::from(u16::MAX)) as u16;
    let sliced = match linktype {
        1 => SlicedPacket::from_ethernet(data).ok(),
        101 | 12 | 14 | 228 | 229 => SlicedPacket::from_ip(data).ok(),
        113 => SlicedPacket::from_linux_sll(data).ok(),
        _ => None,
    };
    let Some(s) = sliced else {
        return Desc {
            id,
            len,
            ..Desc::default()
        };
    };
    let (src, dst, proto): (Vec<u8>, Vec<u8>, u8) = match &s.net {
        Some(NetSlice::Ipv4(v4)) => {
            let h = v4.header();
            (
                h.source().to_vec(),
                h.destination().to_vec(),
                h.protocol().0,
            )
        }
        Some(NetSlice::Ipv6(v6)) => {
            let h = v6.header();
            (
                h.source().to_vec(),
                h.destination().to_vec(),
                h.next_header().0,
            )
        }
        _ => {
            return Desc {
                id,
                len,
                ..Desc::default()
            };
        }
    };
    let (sport, dport) = match &s.transport {
        Some(TransportSlice::Tcp(t)) => (t.source_port(), t.destination_port()),
        Some(TransportSlice::Udp(u)) => (u.source_port(), u.destination_port()),
        _ => (0, 0),
    };
    let ((a, ap), (b, bp)) = if (&src, sport) <= (&dst, dport) {
        ((&src, sport), (&dst, dport))
    } else {
        ((&dst, dport), (&src, sport))
    };
    let salt = file.to_be_bytes();

    let crc = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);
    let mut d = crc.digest();
    d.update(&salt);
    d.update(a.min(b));
    d.update(a.max(b));
    let fid = d.finalize();

    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ u64::from(file).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for byte in a
        .iter()
        .chain(&ap.to_be_bytes())
        .chain(b.iter())
        .chain(&bp.to_be_bytes())
        .chain(&[proto])
    {
        h = (h ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let conn = (h ^ (h >> 32)) as u32;

    let mut input = Vec::with_capacity(36);
    input.extend_from_slice(&src);
    input.extend_from_slice(&dst);
    input.extend_from_slice(&sport.to_be_bytes());
    input.extend_from_slice(&dport.to_be_bytes());
    let rss = toeplitz_symmetric(&input) ^ file.wrapping_mul(0x2545_f491);
    Desc {
        id,
        conn,
        rss,
        fid,
        len,
    }
}

/// Toeplitz hash with the symmetric key 0x6d5a repeated: swapping source and destination gives the same value.
pub fn toeplitz_symmetric(input: &[u8]) -> u32 {
    let key = |byte: usize| -> u8 { if byte.is_multiple_of(2) { 0x6d } else { 0x5a } };
    let mut window: u32 = u32::from_be_bytes([key(0), key(1), key(2), key(3)]);
    let mut result = 0u32;
    for (i, byte) in input.iter().enumerate() {
        let next = key(i + 4);
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                result ^= window;
            }
            window = (window << 1) | u32::from((next >> (7 - bit)) & 1);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toeplitz_with_the_repeated_key_is_symmetric() {
        let fwd = [10, 0, 0, 1, 192, 168, 1, 2, 0x30, 0x39, 0x00, 0x50];
        let rev = [192, 168, 1, 2, 10, 0, 0, 1, 0x00, 0x50, 0x30, 0x39];
        assert_eq!(toeplitz_symmetric(&fwd), toeplitz_symmetric(&rev));
        assert_ne!(toeplitz_symmetric(&fwd), 0);
    }

    #[test]
    fn both_directions_of_a_real_connection_share_every_hash() {
        let Some(p) = shared_file("reassembly/example.pcap") else {
            return;
        };
        let descs = load(&[p], 5000);
        assert!(descs.len() > 4000, "example.pcap has 4,631 packets");
        let flows: std::collections::HashSet<u32> = descs.iter().map(|d| d.conn).collect();
        assert!(flows.len() > 50, "{} flows", flows.len());
        // Every conn hash maps to a single fid and rss: the hashes agree on what a connection is.
        let mut by_conn = std::collections::HashMap::new();
        for d in &descs {
            let e = by_conn.entry(d.conn).or_insert((d.fid, d.rss));
            assert_eq!(*e, (d.fid, d.rss));
        }
    }
}
