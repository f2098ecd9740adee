//! A sweep that ends many flows at once, and the end of the input, leave the workers in bounded messages: each
//! worker sends its share as it makes it, a message each time it holds the configured bytes of output, and waits
//! while two of its messages are not yet written (`flowbundle_inspect::Share`). The collector merges the shares as
//! the messages come. Checked on a capture made here: thousands of UDP flows, an hour's gap in capture time (the
//! sweep after it ends them all at once), thousands more left open for the end of the input. Under every worker
//! reading the input (`EachReads`, as `inspect` runs files under `dh`) and a reader thread broadcasting the sweeps
//! (`run_stream`, as under `lfb`), at 2 and 3 workers: the output is the same lines as the single-threaded run's,
//! in the same order as with each share sent whole, the shares go out in many messages none much above the bound,
//! and the collector never holds more than a few of them at once.

mod common;
use common::udp_frame;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use flowbundle_ingest::{LinkType, PacketArena, PcapWriter, WriterOptions};
use flowbundle_inspect::{
    ArenaSource, BufferDecodes, EachReads, Engine, EngineConfig, Event, EventMerge,
    InspectWorkload, Piece, Prestage, Renderer, SHARE_IN_FLIGHT, StreamReader, SweepConfig,
    WorkerCtx,
};
use flowbundle_scheduler::{SchedOptions, build};
use flowbundle_worker::{Crew, StreamConfig, run_each, run_stream};

/// Flows before the gap (all ended by the sweep after it) and after it (ended by the end of the input).
const FLOWS: u32 = 3000;

/// Output bytes a message of a share holds before it is sent.
const CHUNK: usize = 2048;

/// The capture: `FLOWS` UDP exchanges (a request and its answer) a millisecond apart, an hour's gap, `FLOWS` more.
fn many_flows(path: &Path) {
    let file = std::fs::File::create(path).expect("creating the capture");
    let mut w = PcapWriter::new(file, WriterOptions::new(LinkType::ETHERNET)).expect("pcap header");
    let mut ts = 1_700_000_000_000_000_000u64;
    for half in 0..2u8 {
        for i in 0..FLOWS {
            let client = [10, half, (i >> 8) as u8, i as u8];
            let server = [192, 168, 0, 1];
            let sport = 10_000 + (i % 50_000) as u16;
            for (a, ap, b, bp) in [(client, sport, server, 9999), (server, 9999, client, sport)] {
                let f = udp_frame(a, ap, b, bp, b"hello, flow");
                w.write_packet(ts, &f, f.len() as u32)
                    .expect("writing a packet");
                ts += 500_000;
            }
        }
        ts += 3_600_000_000_000;
    }
}

/// Sweeps often enough to run several during the capture, and soon after the gap.
fn config() -> EngineConfig {
    EngineConfig {
        sweep: SweepConfig {
            every_ns: 1_000_000_000,
            min_packets: 512,
            gap_ns: 600_000_000_000,
            min_packets_after_gap: 16,
        },
        ..EngineConfig::default()
    }
}

fn line(buf: &mut Vec<u8>, evs: &[Event]) {
    for e in evs {
        buf.extend_from_slice(
            format!(
                "{} {} {} {}\n",
                e.ts_ns,
                e.flow_id,
                e.seq,
                e.kind.event_type()
            )
            .as_bytes(),
        );
    }
}

/// What a parallel run wrote, and what its collector saw of the shares.
struct Ran {
    lines: Vec<String>,
    messages: u64,
    largest: usize,
    peak: usize,
    timed_out: u64,
}

fn collected(text: Vec<u8>, merge: &EventMerge) -> Ran {
    Ran {
        lines: String::from_utf8(text)
            .expect("UTF-8")
            .lines()
            .map(str::to_owned)
            .collect(),
        messages: merge.share_messages,
        largest: merge.largest_share_message,
        peak: merge.peak_share_bytes,
        timed_out: merge.share_waits_timed_out(),
    }
}

fn write_into(text: &mut Vec<u8>) -> impl FnMut(Piece<'_>) -> Result<(), ()> + '_ {
    |p| {
        match p {
            Piece::Rendered(_, b) => text.extend_from_slice(b),
            Piece::RenderedParts(_, parts) => parts.iter().for_each(|b| text.extend_from_slice(b)),
            Piece::Events(evs) => line(text, evs),
        }
        Ok(())
    }
}

/// `inspect FILE --threads N --scheduler dh` (every worker reads), shares sent in messages of `chunk` bytes.
fn every_worker_reads(file: &Path, workers: usize, chunk: usize) -> Ran {
    let engine = Engine::new(config(), None, None);
    let (tx, mut merge) = EventMerge::with_share_chunk(chunk);
    let render: &Renderer = &line;
    let stop = AtomicBool::new(false);
    let files = [file.to_path_buf()];
    let each = EachReads::new(&engine, &files, workers, tx, Some(render), &stop, 4096);
    let mut text = Vec::new();
    let mut collect = |last: bool| {
        let watermark = each.watermark();
        let r = if last {
            merge.release_all(write_into(&mut text))
        } else {
            merge.release(watermark, write_into(&mut text))
        };
        r.expect("writing");
    };
    let cfg = StreamConfig {
        pin: false,
        ..StreamConfig::default()
    };
    run_each(workers, &|w| each.run_worker(w), &mut collect, &cfg).expect("no thread dies");
    collected(text, &merge)
}

/// `inspect FILE --threads N --scheduler lfb --workers-read=false`: a reader thread, the sweeps and the end of the
/// input broadcast to the workers; shares sent in messages of `chunk` bytes.
fn reader_thread(file: &Path, workers: usize, chunk: usize) -> Ran {
    let engine = Engine::new(config(), None, None);
    let sched = build("lfb", workers, &SchedOptions::default()).expect("policy");
    let arena = PacketArena::new(512);
    let (tx, mut merge) = EventMerge::with_share_chunk(chunk);
    let render: &Renderer = &line;
    let decodes = BufferDecodes::new(arena.slots());
    let source = ArenaSource::new(&arena, tx.clone())
        .with_decodes(&decodes)
        .with_renderer(render);
    let prestage = Prestage::new(engine.config()).computing(sched.hashes_read());
    let mut reader = StreamReader::new(&arena, prestage, vec![file.to_path_buf()])
        .with_decodes(&decodes)
        .with_sweeps(&engine, tx, Some(render));
    let work = InspectWorkload::new(&engine, sched.shape(), &source);
    let feed = |crew: &Crew<'_, WorkerCtx>| {
        let n = crew.workers();
        let broadcast = |job: &(dyn Fn(usize, usize, &mut WorkerCtx) + Sync)| {
            crew.broadcast(&|w, ctx: &mut WorkerCtx| job(w, n, ctx))
        };
        reader.next_desc(Some(&broadcast), None)
    };
    let mut text = Vec::new();
    let mut collect = |last: bool| {
        let watermark = arena.oldest_in_flight();
        let r = if last {
            merge.release_all(write_into(&mut text))
        } else {
            merge.release(watermark, write_into(&mut text))
        };
        r.expect("writing");
    };
    let cfg = StreamConfig {
        pin: false,
        ..StreamConfig::default()
    };
    let (_report, _feed) =
        run_stream(sched.as_ref(), &work, feed, &mut collect, &cfg).expect("no thread dies");
    collected(text, &merge)
}

#[test]
fn a_sweep_of_many_flows_leaves_the_workers_in_bounded_messages_with_the_same_output() {
    let dir = std::env::temp_dir().join(format!("fb-sweep-messages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file: PathBuf = dir.join("many-flows.pcap");
    many_flows(&file);

    let mut engine = Engine::new(config(), None, None);
    let finished = common::run_serial(&mut engine, std::slice::from_ref(&file));
    let mut serial = Vec::new();
    line(&mut serial, &finished.events);
    let mut serial: Vec<String> = String::from_utf8(serial)
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect();
    serial.sort();
    assert!(
        serial.len() >= 2 * FLOWS as usize,
        "{} lines: every flow's record expected",
        serial.len()
    );

    type Run = fn(&Path, usize, usize) -> Ran;
    for (name, run) in [
        ("every worker reads", every_worker_reads as Run),
        ("reader thread", reader_thread as Run),
    ] {
        for workers in [2, 3] {
            let whole = run(&file, workers, usize::MAX);
            let chunked = run(&file, workers, CHUNK);
            let what = format!("{name}, {workers} workers");
            let mut sorted = chunked.lines.clone();
            sorted.sort();
            assert!(
                sorted == serial,
                "{what}: {} lines against {} single-threaded",
                sorted.len(),
                serial.len()
            );
            assert!(
                chunked.lines == whole.lines,
                "{what}: the output in messages differs from the output of whole shares"
            );
            // The sweep after the gap ends `FLOWS` flows and the end of the input as many: about 40 bytes a flow,
            // so about 60 messages of 2 KiB each, over every worker's share.
            assert!(
                chunked.messages >= 2 * 40,
                "{what}: {} messages (whole: {})",
                chunked.messages,
                whole.messages
            );
            // A message is sent once it holds the bound: at most the bound plus the one segment that crossed it.
            assert!(
                chunked.largest < CHUNK + 200,
                "{what}: a message of {} bytes",
                chunked.largest
            );
            assert!(
                whole.largest > 20 * CHUNK,
                "{what}: whole shares of {} bytes at most: the capture does not test the bound",
                whole.largest
            );
            // `SHARE_IN_FLIGHT` bounds the messages out of one share, not of one worker: a worker that has sent
            // its last message of the sweep's share reads on to the end of the input and sends its share of the
            // flush before the collector has written the sweep's last messages (on a loaded machine the collector
            // may not run meanwhile, takes both shares' messages in at once, and counts what it holds before it
            // writes any): seen as every worker's last one or two messages of the sweep and two of the flush held
            // at once, with no wait timed out. Two shares a worker hold output here (the sweep after the gap and
            // the end of the input: the other sweeps come well within the UDP timeout and end nothing), each with
            // at most `SHARE_IN_FLIGHT` messages out, and one more for each wait that timed out.
            const SHARES_WITH_OUTPUT: usize = 2;
            let bound = (workers * SHARES_WITH_OUTPUT * SHARE_IN_FLIGHT
                + chunked.timed_out as usize)
                * (CHUNK + 200);
            assert!(
                chunked.peak <= bound,
                "{what}: the collector held {} bytes of shares at once (bound {bound}; {} waits timed out)",
                chunked.peak,
                chunked.timed_out
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
