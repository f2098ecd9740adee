//! Every worker goes through the input (`EachReads`, as `inspect FILE --threads N --workers-read` runs), but it is
//! read once for all of them, in batches whichever worker needs first reads: what reading reports is the
//! single-threaded loop's, once. Checked with several inputs in order (captures made here; real ones too when the
//! shared data is there), one that does not exist, one that starts before the previous one ended, one cut in its
//! last record and one damaged in the middle, at 1 to 3 workers under `dh`, `rss` and `lfb`, with the default bound
//! of the bytes the batches hold and with a bound of one byte (the worker ahead waits for the slowest to take each
//! batch before it reads the next): every worker reports the single-threaded reading's errors and per-input counters
//! and its packet count, worker 0 alone the time line's warnings and the capture span, the batches held stay within
//! the bound, and the output is the single-threaded run's.

use std::path::{Path, PathBuf};

mod common;
use common::{every_worker_reads_files, lines, udp_frame};

use flowbundle_ingest::{CaptureReader, LinkType, PcapWriter, ReadStats, Timeline, WriterOptions};
use flowbundle_inspect::{
    BATCH_BUFFER, Engine, EngineConfig, Placement, Prestage, SHARED_BYTES, SweepClock,
};

/// What the single-threaded loop reads and writes over the inputs.
struct Serial {
    events: Vec<String>,
    errors: Vec<String>,
    warnings: Vec<String>,
    inputs_read: Vec<(PathBuf, ReadStats)>,
    span: Option<(u64, u64)>,
    packets: u64,
    largest: usize,
}

/// The single-threaded loop over `files` (as `inspect --threads 1`): an input that does not open is an error line,
/// one that fails midway is read to there.
fn single_threaded(files: &[PathBuf]) -> Serial {
    let mut engine = Engine::new(EngineConfig::default(), None, None);
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let mut clock = SweepClock::new(engine.config().sweep);
    let mut timeline = Timeline::default();
    let (mut errors, mut warnings, mut inputs_read) = (Vec::new(), Vec::new(), Vec::new());
    let (mut num, mut largest) = (0u64, 0usize);
    for path in files {
        let mut reader = match CaptureReader::open(path) {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        timeline.input(path);
        loop {
            let rec = match reader.next_packet() {
                Ok(Some(rec)) => rec,
                Ok(None) => break,
                Err(e) => {
                    errors.push(format!(
                        "{}: {e} (stopping this input here)",
                        path.display()
                    ));
                    break;
                }
            };
            warnings.extend(timeline.packet(rec.ts_ns));
            largest = largest.max(rec.data.len());
            engine.process_serial(&mut ctx, &mut pre, num, &rec);
            num += 1;
            if let Some(now) = clock.packet(rec.ts_ns) {
                engine.expire_serial(&mut ctx, now);
            }
        }
        inputs_read.push((path.clone(), *reader.stats()));
    }
    let mut events = Vec::new();
    ctx.take_events(&mut events);
    events.extend(engine.finish([ctx]).events);
    let mut events = lines(&events);
    events.sort();
    Serial {
        events,
        errors,
        warnings,
        inputs_read,
        span: timeline.span(),
        packets: num,
        largest,
    }
}

/// A pcap of `packets` UDP packets of 40 flows, 10 ms apart from `start_s` seconds; its bytes.
fn capture(start_s: u64, packets: u32) -> Vec<u8> {
    let mut w =
        PcapWriter::new(Vec::new(), WriterOptions::new(LinkType::ETHERNET)).expect("header");
    for k in 0..packets {
        let flow = k % 40;
        let client = [10, 1, 0, flow as u8];
        let payload = vec![b'a' + (k % 26) as u8; 40 + (k as usize * 7) % 400];
        let frame = if k % 2 == 0 {
            udp_frame(client, 30_000 + flow as u16, [10, 2, 0, 1], 53, &payload)
        } else {
            udp_frame([10, 2, 0, 1], 53, client, 30_000 + flow as u16, &payload)
        };
        let ts = (start_s * 1_000_000_000) + u64::from(k) * 10_000_000;
        w.write_packet(ts, &frame, frame.len() as u32)
            .expect("a packet");
    }
    w.finish().expect("a capture")
}

/// The inputs (see the module documentation), made in `dir`, with real captures when the shared data is there.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("writing a capture");
        p
    };
    let first = write("first.pcap", &capture(1_700_000_000, 700));
    // Starts before the first ended: a warning of the time line.
    let early = write("early.pcap", &capture(1_700_000_002, 500));
    // Cut in its last record: read to there, counted, no error.
    let whole = capture(1_700_000_100, 600);
    let cut = write("cut.pcap", &whole[..whole.len() - 9]);
    // A record header claiming 1 GiB after 400 packets: an error, the input read to there.
    let mut damaged = capture(1_700_000_200, 400);
    let le = matches!(damaged[0], 0xd4 | 0x4d);
    for v in [1_700_000_300u32, 0, 1 << 30, 1 << 30] {
        damaged.extend_from_slice(&if le { v.to_le_bytes() } else { v.to_be_bytes() });
    }
    damaged.extend_from_slice(&capture(1_700_000_300, 50)[24..]);
    let damaged = write("damaged.pcap", &damaged);
    let mut files = vec![first, dir.join("absent.pcap"), early];
    files.extend(flowbundle_testsupport::data("ndpi/pcap/ftp.pcap"));
    files.extend([cut, damaged]);
    files.extend(flowbundle_testsupport::data("ndpi/pcap/1kxun.pcap"));
    files
}

#[test]
fn what_reading_reports_is_the_single_threaded_loops_once_whoever_reads_each_batch() {
    let dir = std::env::temp_dir().join(format!("fb-shared-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = inputs(&dir);
    let serial = single_threaded(&files);
    // The inputs test something: an input that does not open and one that fails midway, a warning, one cut in a
    // record, and more packets than a few batches.
    assert_eq!(serial.errors.len(), 2, "{:?}", serial.errors);
    assert!(serial.errors[1].contains("stopping this input here"));
    assert!(!serial.warnings.is_empty());
    assert!(
        serial
            .inputs_read
            .iter()
            .any(|(_, s)| s.truncated_records == 1)
    );
    assert!(serial.packets > 2_000, "{} packets", serial.packets);

    for (name, placement) in [
        ("dh", Placement::Fixed),
        ("rss", Placement::for_policy("rss").expect("rss")),
        ("lfb", Placement::for_policy("lfb").expect("lfb")),
    ] {
        for workers in 1..=3 {
            for shared in [None, Some(1)] {
                let run = format!("{name}, {workers} workers, shared bytes {shared:?}");
                let (mut out, reports) = every_worker_reads_files(
                    EngineConfig::default(),
                    &files,
                    workers,
                    4096,
                    placement,
                    shared,
                );
                out.sort();
                assert!(
                    out == serial.events,
                    "{run}: {} lines against {} single-threaded, first difference: {:?}",
                    out.len(),
                    serial.events.len(),
                    out.iter().zip(&serial.events).find(|(a, b)| a != b)
                );
                assert_eq!(reports.len(), workers);
                for (w, r) in reports.iter().enumerate() {
                    assert_eq!(r.errors, serial.errors, "{run}: worker {w}'s errors");
                    assert_eq!(
                        r.inputs_read, serial.inputs_read,
                        "{run}: worker {w}'s inputs"
                    );
                    assert_eq!(
                        r.packets_read, serial.packets,
                        "{run}: worker {w}'s packets"
                    );
                    if w == 0 {
                        assert_eq!(r.warnings, serial.warnings, "{run}");
                        assert_eq!(r.capture_span, serial.span, "{run}");
                    } else {
                        assert!(r.warnings.is_empty() && r.capture_span.is_none(), "{run}");
                    }
                }
                // The batches not yet taken by every worker: within the bound, past it by the one batch read when
                // none was held (at most a batch's bytes and the packet that ends it).
                let bound = shared.unwrap_or(SHARED_BYTES);
                let peak = reports[0].peak_shared_bytes;
                assert!(peak > 0, "{run}");
                assert!(
                    peak < bound + BATCH_BUFFER.max(serial.largest + 1024),
                    "{run}: {peak} bytes held"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
