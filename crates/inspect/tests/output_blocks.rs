//! Every worker reading the input renders its packets' output into blocks it owns, at most
//! `BLOCKS_PER_WORKER` of them (`flowbundle_inspect::stream::BlockWriter`): a worker that has them all out
//! writes out what can be written itself, under the lock the collector takes (`EachReads::with_helper`), so that the
//! output never waits for the collector's thread to be scheduled. Checked on a real capture whose output is
//! several times what the blocks hold (a DNS tunnel, one flow, so one worker has all of it; each event rendered as
//! a line of 16 KiB), with a collector that writes nothing until every worker is done: the run ends, with the
//! single-threaded run's lines, no worker made more blocks than the bound, and the workers wrote the output out.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use flowbundle_inspect::stream::{BLOCK_BYTES, BLOCKS_PER_WORKER};
use flowbundle_inspect::{EachReads, Engine, EngineConfig, Event, EventMerge, Piece, Renderer};
use flowbundle_worker::{StreamConfig, run_each};

/// Bytes of each event's line: enough for the capture's output to fill the blocks several times over.
const LINE: usize = 16 << 10;

fn line(buf: &mut Vec<u8>, evs: &[Event]) {
    for e in evs {
        let start = buf.len();
        buf.extend_from_slice(
            format!(
                "{} {} {} {} ",
                e.ts_ns,
                e.flow_id,
                e.seq,
                e.kind.event_type()
            )
            .as_bytes(),
        );
        buf.resize(start + LINE - 1, b'.');
        buf.push(b'\n');
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

fn sorted_lines(text: &[u8]) -> Vec<String> {
    let mut l: Vec<String> = String::from_utf8(text.to_vec())
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect();
    l.sort();
    l
}

#[test]
fn the_workers_write_their_output_out_when_the_collector_does_not() {
    let Some(file) = flowbundle_testsupport::data("ndpi/pcap/dns-tunnel-iodine.pcap") else {
        return;
    };
    let mut engine = Engine::new(EngineConfig::default(), None, None);
    let finished = common::run_serial(&mut engine, std::slice::from_ref(&file));
    let mut serial = Vec::new();
    line(&mut serial, &finished.events);
    assert!(
        serial.len() > 8 * BLOCKS_PER_WORKER * BLOCK_BYTES,
        "{} bytes of output: the capture does not fill the blocks",
        serial.len()
    );
    let serial = sorted_lines(&serial);

    for workers in [2, 3] {
        let engine = Engine::new(EngineConfig::default(), None, None);
        let (tx, merge) = EventMerge::new();
        let render: &Renderer = &line;
        let stop = AtomicBool::new(false);
        let files = [file.clone()];
        let state = Mutex::new((merge, Vec::new()));
        let help = |watermark: u64| -> bool {
            let Ok(mut s) = state.try_lock() else {
                return false;
            };
            let (merge, text) = &mut *s;
            merge.release(watermark, write_into(text)).expect("writing");
            true
        };
        let reports = {
            let each = EachReads::new(&engine, &files, workers, tx, Some(render), &stop, 4096)
                .with_helper(&help);
            // The collector's own thread writes nothing while the run goes on: only the workers can.
            let mut collect = |last: bool| {
                if last {
                    let mut s = state.lock().expect("lock");
                    let (merge, text) = &mut *s;
                    merge.release_all(write_into(text)).expect("writing");
                }
            };
            let cfg = StreamConfig {
                pin: false,
                ..StreamConfig::default()
            };
            // A run that waited for ever would end here, with its output cut short.
            let (done, watchdog) = mpsc::channel::<()>();
            let stop = &stop;
            std::thread::scope(|s| {
                s.spawn(move || {
                    if watchdog.recv_timeout(Duration::from_secs(120)).is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                });
                let r = run_each(workers, &|w| each.run_worker(w), &mut collect, &cfg)
                    .expect("no thread dies");
                let _ = done.send(());
                r
            })
        };
        let (_, text) = state.into_inner().expect("lock");
        let out = sorted_lines(&text);
        assert!(
            out == serial,
            "{workers} workers: {} lines against {} single-threaded",
            out.len(),
            serial.len()
        );
        for (w, r) in reports.iter().enumerate() {
            assert!(
                r.blocks_made as usize <= BLOCKS_PER_WORKER,
                "{workers} workers: worker {w} made {} blocks",
                r.blocks_made
            );
        }
        assert!(
            reports.iter().any(|r| r.output_written > 0),
            "{workers} workers: no worker wrote the output out"
        );
    }
}
