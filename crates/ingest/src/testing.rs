//! The differential check the proptests, the fuzz target and the real-data tests share: run the streaming and the
//! preloaded reader over the same bytes and compare everything they say.
//!
//! It lives in the library (not in `tests/`) so that `fuzz/fuzz_targets/ingest_reader.rs` calls exactly the entry
//! point the proptests call, as `CONTRIBUTING.md` asks. It returns a description of the first disagreement instead
//! of panicking; the callers assert.

use std::io::Cursor;

use crate::{CaptureReader, Error, ReadStats, Trace};

/// What both readers agreed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agreement {
    /// Packets both delivered.
    pub packets: u64,
    /// Counters (`None` when the input had no capture at all).
    pub stats: Option<ReadStats>,
    /// The error both ended with, as text (`None` for a clean end).
    pub error: Option<String>,
}

/// Two errors "agree" when they are the same message, except that a damaged gzip stream may be noticed at
/// different places by the two readers: flate2 drops the output of a read call that meets corrupt data, and the
/// readers decompress in different read sizes, so only the kind is compared.
fn same_error(a: &Error, b: &Error) -> bool {
    match (a, b) {
        (Error::Decompress { .. }, Error::Decompress { .. }) => true,
        _ => a.to_string() == b.to_string(),
    }
}

/// Read `data` with [`CaptureReader`] and with [`Trace`] and check that they deliver the same records, the same
/// interfaces and counters, and end the same way. Never panics on any input.
pub fn read_both(data: &[u8]) -> Result<Agreement, String> {
    let trace = Trace::from_vec_partial(data.to_vec());
    let mut reader = match CaptureReader::new(Cursor::new(data.to_vec())) {
        Ok(r) => r,
        Err(e) => {
            return match trace {
                Err(t) if same_error(&e, &t) => Ok(Agreement {
                    packets: 0,
                    stats: None,
                    error: Some(e.to_string()),
                }),
                Err(t) => Err(format!(
                    "streaming failed to open with `{e}`, preloaded with `{t}`"
                )),
                Ok((t, _)) => Err(format!(
                    "streaming failed to open with `{e}`, preloaded read {} packets",
                    t.len()
                )),
            };
        }
    };
    let (trace, trace_error) = match trace {
        Ok(t) => t,
        Err(t) => {
            // The preloaded reader refuses a pcapng file cut inside its first section header up front; the
            // streaming reader opens it and fails on the first read.
            let first = reader.next_packet().map(|p| p.is_some());
            return match first {
                Err(e) if same_error(&e, &t) => Ok(Agreement {
                    packets: 0,
                    stats: None,
                    error: Some(e.to_string()),
                }),
                other => Err(format!(
                    "preloaded failed with `{t}`, streaming's first read gave {other:?}"
                )),
            };
        }
    };
    let mut n = 0usize;
    let stream_error = loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                let Some(q) = trace.try_get(n) else {
                    return Err(format!(
                        "streaming delivered packet {n}, preloaded has only {}",
                        trace.len()
                    ));
                };
                if p != q {
                    return Err(format!(
                        "packet {n} differs: streaming {p:?}, preloaded {q:?}"
                    ));
                }
                n += 1;
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let gzip_damage = matches!(stream_error, Some(Error::Decompress { .. }))
        || matches!(trace_error, Some(Error::Decompress { .. }));
    if n != trace.len() && !gzip_damage {
        return Err(format!(
            "streaming delivered {n} packets, preloaded {}",
            trace.len()
        ));
    }
    match (&stream_error, &trace_error) {
        (None, None) => {}
        (Some(a), Some(b)) if same_error(a, b) => {}
        // Damaged gzip data: both must fail, but where depends on read sizes (see `same_error`), and an earlier
        // parse error in bytes one reader recovered and the other lost is as good an answer as the gzip error.
        (Some(_), Some(_)) if gzip_damage => {}
        (a, b) => {
            return Err(format!("streaming ended with {a:?}, preloaded with {b:?}"));
        }
    }
    if !gzip_damage {
        if reader.stats() != trace.stats() {
            return Err(format!(
                "counters differ: streaming {:?}, preloaded {:?}",
                reader.stats(),
                trace.stats()
            ));
        }
        if reader.interfaces() != trace.interfaces() {
            return Err("interface tables differ".to_string());
        }
    }
    if Some(reader.format()) != trace.format() {
        return Err(format!(
            "formats differ: streaming {:?}, preloaded {:?}",
            reader.format(),
            trace.format()
        ));
    }
    // A finished reader stays finished.
    if !matches!(reader.next_packet(), Ok(None)) {
        return Err("streaming reader delivered more after its end".to_string());
    }
    Ok(Agreement {
        packets: n as u64,
        stats: Some(*trace.stats()),
        error: stream_error.map(|e| e.to_string()),
    })
}
