//! Per-packet cost files for the synthetic workload (`--cost-file F`): replay the engine's measured cost of each
//! packet as calibrated CPU work, so scheduling can be studied with the engine's cost distribution but without the
//! engine.
//!
//! Format (text, CSV): one row per packet, `packet,cost_ns`, where `packet` is the packet's number in the capture
//! file (0-based, file order) and `cost_ns` the nanoseconds the engine spent on it. Blank lines and lines starting
//! with `#` are ignored. An optional header row names the columns; then the packet number is read from the column
//! named `packet` (or `pkt`, `id`, `packet_number`) and the cost from `cost_ns` (or `ns`), in any position, so a
//! wider file (flow, position in flow, protocol, ...) works too. Without a header the first two columns are used.
//!
//! The rows are read with the `csv` crate (so quoted fields work as in any CSV file).
//!
//! Hostile input: lines are cut at 1 MiB before the CSV reader sees them (the rest of a longer line is skipped); rows whose packet number lies outside the
//! trace are counted and skipped (memory stays one `u32` per packet of the trace whatever the file says); costs
//! beyond `u32::MAX` ns saturate; malformed rows are counted, and the first few are quoted in the report. Nothing
//! panics.

use std::io::{BufRead, Read};

/// Longest line accepted.
const MAX_LINE: usize = 1 << 20;

/// What reading a cost file found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CostFile {
    /// Nanoseconds per packet of the trace, indexed by packet number (0 where the file says nothing).
    pub cost_ns: Vec<u32>,
    /// Rows used.
    pub rows: u64,
    /// Rows whose packet number is beyond the trace.
    pub out_of_range: u64,
    /// Rows that could not be read (and the first few of them, with their line numbers).
    pub malformed: u64,
    pub examples: Vec<String>,
    /// Rows naming a packet already seen (the later one wins).
    pub duplicates: u64,
}

/// Why a cost file could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    #[error("reading the cost file: {0}")]
    Io(#[from] std::io::Error),
    #[error("cost file header has no `{0}` column")]
    Column(&'static str),
}

/// Read a cost file for a trace of `packets` packets.
pub fn load(path: &std::path::Path, packets: usize) -> Result<CostFile, CostError> {
    let f = std::fs::File::open(path)?;
    parse(std::io::BufReader::new(f), packets)
}

/// Parse cost rows from any reader (see the module documentation).
pub fn parse<R: BufRead>(r: R, packets: usize) -> Result<CostFile, CostError> {
    let mut out = CostFile {
        cost_ns: vec![0; packets],
        ..CostFile::default()
    };
    let mut seen = vec![false; packets];
    let mut cols: Option<(usize, usize)> = None;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(LineCap {
            inner: r,
            in_line: 0,
        });
    let mut record = csv::ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                if let csv::ErrorKind::Io(_) = e.kind() {
                    return Err(CostError::Io(e.into()));
                }
                let line = e.position().map_or(0, csv::Position::line);
                note(&mut out, line, "not a CSV row");
                continue;
            }
        }
        let lineno = record.position().map_or(0, csv::Position::line);
        if record.iter().all(<[u8]>::is_empty) {
            continue;
        }
        let Ok(fields) = record
            .iter()
            .map(std::str::from_utf8)
            .collect::<Result<Vec<&str>, _>>()
        else {
            note(&mut out, lineno, "not UTF-8");
            continue;
        };
        if cols.is_none() && fields.iter().any(|f| f.parse::<f64>().is_err()) {
            // A header row.
            let find = |names: &[&str]| {
                fields
                    .iter()
                    .position(|f| names.iter().any(|n| f.eq_ignore_ascii_case(n)))
            };
            let p = find(&["packet", "pkt", "id", "packet_number"])
                .ok_or(CostError::Column("packet"))?;
            let c = find(&["cost_ns", "ns"]).ok_or(CostError::Column("cost_ns"))?;
            cols = Some((p, c));
            continue;
        }
        let (pc, cc) = *cols.get_or_insert((0, 1));
        let (Some(p), Some(c)) = (fields.get(pc), fields.get(cc)) else {
            note(&mut out, lineno, "too few columns");
            continue;
        };
        let (Ok(p), Ok(c)) = (p.parse::<u64>(), c.parse::<f64>()) else {
            note(&mut out, lineno, "not a number");
            continue;
        };
        if !(c.is_finite() && c >= 0.0) {
            note(&mut out, lineno, "negative or non-finite cost");
            continue;
        }
        let Some(slot) = usize::try_from(p).ok().filter(|&i| i < packets) else {
            out.out_of_range += 1;
            continue;
        };
        if seen[slot] {
            out.duplicates += 1;
        }
        seen[slot] = true;
        out.cost_ns[slot] = c.min(f64::from(u32::MAX)) as u32;
        out.rows += 1;
    }
    Ok(out)
}

fn note(out: &mut CostFile, line: u64, why: &str) {
    out.malformed += 1;
    if out.examples.len() < 5 {
        out.examples.push(format!("line {line}: {why}"));
    }
}

/// Passes at most [`MAX_LINE`] bytes of each line through (newline kept), skipping the rest of a longer line, so
/// that no row the CSV reader buffers is longer than that.
struct LineCap<R> {
    inner: R,
    /// Bytes of the current line passed through so far.
    in_line: usize,
}

impl<R: BufRead> Read for LineCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let avail = self.inner.fill_buf()?;
            if avail.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            let newline = memchr_newline(avail);
            if self.in_line >= MAX_LINE {
                // Over the cap: drop the line's bytes up to (not including) its newline.
                let skip = newline.unwrap_or(avail.len());
                self.inner.consume(skip);
                if newline.is_some() {
                    self.in_line = 0;
                }
                continue;
            }
            let room = MAX_LINE - self.in_line;
            let (n, ends_line) = match newline {
                Some(i) if i < room => (i + 1, true),
                Some(_) => (room, false),
                None => (avail.len().min(room), false),
            };
            let n = n.min(buf.len());
            buf[..n].copy_from_slice(&avail[..n]);
            self.inner.consume(n);
            self.in_line = if ends_line && n == newline.map_or(0, |i| i + 1) {
                0
            } else {
                self.in_line + n
            };
            return Ok(n);
        }
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// Costs per dispatched packet of a prepared trace: packet `id` gets the cost of its packet in the file
/// (`prep.orig[id]`; a reassembled datagram gets its completing fragment's). Only meaningful for one input.
pub fn per_dispatched(file: &CostFile, orig: &[u32]) -> Vec<u32> {
    orig.iter()
        .map(|&o| file.cost_ns.get(o as usize).copied().unwrap_or(0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_rows_headers_and_comments() {
        let f = parse(&b"# engine costs\n0,100\n2,300.7\n\n1,200\n"[..], 3).unwrap();
        assert_eq!(f.cost_ns, vec![100, 200, 300]);
        assert_eq!((f.rows, f.malformed), (3, 0));
        let f = parse(
            &b"flow,packet,proto,cost_ns\n9,1,http,50\n9,0,http,40\n"[..],
            2,
        )
        .unwrap();
        assert_eq!(f.cost_ns, vec![40, 50]);
        // Quoted fields, as any CSV writer may produce them.
        let f = parse(&b"\"packet\",\"cost_ns\"\n\"0\",\" 7 \"\n"[..], 1).unwrap();
        assert_eq!(f.cost_ns, vec![7]);
        assert!(matches!(
            parse(&b"packet,cycles\n0,5\n"[..], 1),
            Err(CostError::Column("cost_ns"))
        ));
    }

    #[test]
    fn hostile_rows_are_counted_not_trusted() {
        let f = parse(&b"0,10\n99999999999,5\n1,-3\n1,x\n1\n0,20\n2,1e30\n"[..], 3).unwrap();
        assert_eq!(f.cost_ns, vec![20, 0, u32::MAX]);
        assert_eq!((f.out_of_range, f.malformed, f.duplicates), (1, 3, 1));
        assert_eq!(f.examples.len(), 3);
        let long = vec![b'7'; 3 << 20];
        let f = parse(&long[..], 4).unwrap();
        assert_eq!(f.rows, 0);
        // The rest of an over-long line is skipped; the next line is read.
        let mut long = vec![b'7'; 3 << 20];
        long.extend_from_slice(b"\n2,9\n");
        let f = parse(&long[..], 4).unwrap();
        assert_eq!((f.rows, f.cost_ns[2]), (1, 9));
    }

    #[test]
    fn dispatched_packets_take_their_file_packets_cost() {
        let f = parse(&b"0,1\n1,2\n2,3\n"[..], 3).unwrap();
        assert_eq!(per_dispatched(&f, &[0, 2, 7]), vec![1, 3, 0]);
    }

    proptest! {
        #[test]
        fn any_bytes_parse_without_panic_and_stay_bounded(data in proptest::collection::vec(any::<u8>(), 0..2000), n in 0usize..64) {
            if let Ok(f) = parse(&data[..], n) {
                prop_assert_eq!(f.cost_ns.len(), n);
                prop_assert!(f.examples.len() <= 5);
            }
        }

        #[test]
        fn written_rows_read_back(costs in proptest::collection::vec(0u32..1_000_000, 0..200)) {
            let text: String = costs.iter().enumerate().map(|(i, c)| format!("{i},{c}\n")).collect();
            let f = parse(text.as_bytes(), costs.len()).unwrap();
            prop_assert_eq!(f.cost_ns, costs);
        }
    }
}
