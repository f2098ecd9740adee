//! The differential check the proptests, the fuzz target and the real-data tests share: run the streaming and the
//! preloaded reader over the same bytes and compare everything they say.
//!
//! It lives in the library (not in `tests/`) so that `fuzz/fuzz_targets/ingest_reader.rs` calls exactly the entry
//! point the proptests call, as `CONTRIBUTING.md` asks. It returns a description of the first disagreement instead
//! of panicking; the callers assert.

use std::io::Cursor;

use crate::{CaptureReader, Error, KeptBuffers, ReadStats, Trace};

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
    if !gzip_damage {
        kept_records_stay(data, &trace, n)?;
    }
    Ok(Agreement {
        packets: n as u64,
        stats: Some(*trace.stats()),
        error: stream_error.map(|e| e.to_string()),
    })
}

/// Reads `data` again keeping records ([`CaptureReader::keep_records`], small buffers so that the reader rotates
/// often): every record must equal the preloaded one, and, never recycled, every record's bytes must still be where
/// the reader handed them out, unchanged, after the whole input was read.
fn kept_records_stay(data: &[u8], trace: &Trace, packets: usize) -> Result<(), String> {
    let Ok(mut reader) = CaptureReader::new(Cursor::new(data.to_vec())) else {
        return Err("keeping records: the input no longer opens".to_string());
    };
    reader.keep_records(KeptBuffers::new(64));
    let mut kept: Vec<(*const u8, usize)> = Vec::new();
    while let Ok(Some(p)) = reader.next_packet() {
        let n = kept.len();
        if trace.try_get(n) != Some(p) {
            return Err(format!("keeping records: packet {n} differs"));
        }
        kept.push((p.data.as_ptr(), p.data.len()));
        if let Some(k) = reader.kept_buffers() {
            k.set_tag(kept.len() as u64);
        }
    }
    if kept.len() != packets {
        return Err(format!(
            "keeping records: {} packets, not {packets}",
            kept.len()
        ));
    }
    let bufs = reader.into_kept_buffers();
    for (i, &(ptr, len)) in kept.iter().enumerate() {
        // SAFETY: nothing was recycled and the buffers are alive (`bufs`), so each record's bytes are where the
        // reader handed them out (the property under test).
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        if Some(bytes) != trace.try_get(i).map(|q| q.data) {
            return Err(format!(
                "keeping records: packet {i}'s bytes changed after later reads"
            ));
        }
    }
    drop(bufs);
    Ok(())
}
