//! Every capture of `shared/data/malformed` (830 tcpdump test captures: odd link types, truncated and fuzzed
//! packets, tunnels) goes through `trace stats` without a panic, within a time limit per file, and within the
//! flow-table cap.
//!
//! A watchdog runs the files on a worker thread and waits for each with a timeout: a file that takes longer than
//! [`LIMIT`] fails the test by name instead of hanging it. The limit is generous (the largest file takes well
//! under a second even at test opt-level on a loaded machine): it catches loops, not slowness.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use flowbundle_trace::stats::{Collector, Progress, StatsConfig, TraceStats, run_file};

/// Longest a single file may take.
const LIMIT: Duration = Duration::from_secs(10);
/// A small flow-table cap, so that the corpus exercises it.
const MAX_FLOWS: usize = 16;
/// What the collector may hold with that cap: the fixed parts (rate ring, density set, fragment cache, counters)
/// plus the capped table.
const MAX_MEMORY: u64 = 2 << 20;

enum Msg {
    Start(usize),
    Done(usize, Result<Box<TraceStats>, String>),
}

#[test]
fn malformed_corpus_without_panic_hang_or_unbounded_memory() {
    const T: &str = "malformed_corpus_without_panic_hang_or_unbounded_memory";
    let Some(dir) = flowbundle_testsupport::data("malformed") else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 830, "captures in {}", dir.display());

    let cfg = StatsConfig {
        max_flows: MAX_FLOWS,
        ..StatsConfig::default()
    };
    let (tx, rx) = mpsc::channel();
    let list = files.clone();
    let worker = std::thread::spawn(move || {
        for (i, f) in list.iter().enumerate() {
            if tx.send(Msg::Start(i)).is_err() {
                return;
            }
            let r = run_file(f, Collector::new(cfg), Progress::Hidden)
                .map(Box::new)
                .map_err(|e| e.to_string());
            if tx.send(Msg::Done(i, r)).is_err() {
                return;
            }
        }
    });

    let (mut read, mut unreadable, mut packets, mut untracked, mut stopped) = (0, 0, 0, 0, 0);
    let mut current = None;
    let mut done = 0;
    while done < files.len() {
        match rx.recv_timeout(LIMIT) {
            Ok(Msg::Start(i)) => current = Some(i),
            Ok(Msg::Done(i, r)) => {
                done += 1;
                current = None;
                let name = files[i].display();
                match r {
                    Ok(s) => {
                        read += 1;
                        packets += s.packets;
                        untracked += s.connections.untracked_packets;
                        stopped += u64::from(s.read.error.is_some());
                        assert!(
                            s.connections.flows <= MAX_FLOWS as u64,
                            "{name}: {} flows tracked, cap {MAX_FLOWS}",
                            s.connections.flows
                        );
                        assert!(
                            s.memory_bytes <= MAX_MEMORY,
                            "{name}: collector holds {} bytes",
                            s.memory_bytes
                        );
                        let sized: u64 = s.packet_sizes.iter().map(|b| b.packets).sum();
                        assert_eq!(sized, s.packets, "{name}: size histogram");
                        assert_eq!(s.decode.packets(), s.packets, "{name}: decode outcomes");
                        // The report must serialise (the CLI's --json) whatever the capture held.
                        assert!(s.to_json().starts_with('{'), "{name}: JSON");
                        assert!(!s.render_table().is_empty(), "{name}: table");
                    }
                    // Not a capture at all (bad magic, truncated file header): ingest's error to report.
                    Err(_) => unreadable += 1,
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let f =
                    current.map_or("(between files)".into(), |i| files[i].display().to_string());
                panic!("{T}: {f} took longer than {LIMIT:?}");
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let f =
                    current.map_or("(between files)".into(), |i| files[i].display().to_string());
                let why = worker.join().err();
                panic!("{T}: the worker stopped while reading {f}: {why:?}");
            }
        }
    }
    worker.join().expect("worker thread");
    eprintln!(
        "{T}: {read} captures read ({unreadable} not captures), {packets} packets, {stopped} stopped early by a read error, \
         {untracked} packets beyond the {MAX_FLOWS}-flow cap"
    );
    assert!(read >= 800, "only {read} of {} readable", files.len());
    assert!(untracked > 0, "no capture exercised the flow-table cap");
}
