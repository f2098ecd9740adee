//! Parallel equals serial: the engine run by the worker runtime under every scheduler, with 1 to 4 workers, gives
//! exactly the events (flow records, application events) and counters of the single-threaded run, on real captures.
//! Every run goes through the scheduler crate's exclusivity checker, and debug builds check shard ownership too.

mod common;

use common::run_serial;
use flowbundle_ingest::Trace;
use flowbundle_inspect::{
    Engine, EngineConfig, EventKind, Finished, InspectWorkload, PreparedTrace, Prestage,
};
use flowbundle_scheduler::check::ExclusivityChecker;
use flowbundle_scheduler::{ALL, SchedOptions, Scheduler, build};
use flowbundle_worker::{BundleToken, RunConfig, run};

fn captures() -> Vec<std::path::PathBuf> {
    [
        "reassembly/example.pcap",
        "reassembly/frag_http_req.pcap",
        "ndpi/pcap/ftp.pcap",
        "ndpi/pcap/quic-mvfst-22.pcap",
        "ndpi/pcap/dns_long_domainname.pcap",
        "ndpi/pcap/tls_certificate_too_long.pcap",
        "ndpi/pcap/1kxun.pcap",
        "ndpi/pcap/bittorrent.pcap",
    ]
    .iter()
    .filter_map(|r| flowbundle_testsupport::data(r))
    .collect()
}

/// `late`: `ph` claims after the workload's `prepare` (the engine's decode), as PAM does.
fn parallel(
    path: &std::path::Path,
    cfg: &EngineConfig,
    policy: &str,
    threads: usize,
    late: bool,
) -> (Finished, u64) {
    let trace = Trace::load(path).expect("load capture");
    let mut engine = Engine::new(cfg.clone(), None, None);
    let mut pre = Prestage::new(engine.config());
    let prepared = pre.run(&trace);
    let opts = SchedOptions {
        capacity: 64,
        ph_late_claim: late,
        ..SchedOptions::default()
    };
    let sched = ExclusivityChecker::new(build(policy, threads, &opts).expect("policy"));
    let source = PreparedTrace {
        trace: &trace,
        prepared: &prepared,
        number_base: Some(0),
    };
    let (locals, deferred) = {
        let w = InspectWorkload::new(&engine, sched.shape(), &source);
        assert_eq!(w.decodes_before_claim(), late && policy == "ph");
        let r = run(&sched, &w, &prepared.descs, &RunConfig::default()).expect("run");
        assert_eq!(r.lost, 0);
        let mut locals = r.locals;
        // SAFETY: `run` joined every worker.
        let deferred =
            unsafe { w.finish_deferred(&mut locals[0], &prepared.descs, |d| sched.bundle(d)) };
        (locals, deferred)
    };
    let check = sched.finish();
    assert_eq!(check.processed, prepared.descs.len() as u64);
    (engine.finish(locals), deferred)
}

#[test]
fn every_policy_and_thread_count_gives_the_serial_output() {
    let files = captures();
    if files.is_empty() {
        return;
    }
    same_as_serial(&files, &EngineConfig::default());
}

/// ICMPv4 errors filed as Suricata files them, under the flow they quote: the prestage keys them by the quoted flow,
/// so every policy sends them to that flow's bundle (captures with port unreachables about UDP and TCP flows).
#[test]
fn icmp_errors_in_their_quoted_flows_give_the_serial_output() {
    let files: Vec<_> = [
        "ndpi/pcap/stun_signal.pcapng",
        "suricata-verify/bug-3616-smtp/input.pcap",
    ]
    .iter()
    .filter_map(|r| flowbundle_testsupport::data(r))
    .collect();
    if files.is_empty() {
        return;
    }
    let mut cfg = EngineConfig::default();
    cfg.decode.icmp_errors_in_quoted_flow = true;
    same_as_serial(&files, &cfg);
}

fn same_as_serial(files: &[std::path::PathBuf], cfg: &EngineConfig) {
    for path in files {
        let mut e = Engine::new(cfg.clone(), None, None);
        let serial = run_serial(&mut e, std::slice::from_ref(path));
        let flows = serial
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Flow(_)))
            .count();
        assert!(flows > 0, "{}: no flows", path.display());
        let runs = ALL
            .iter()
            .map(|&p| (p, false))
            .chain(std::iter::once(("ph", true)));
        for (policy, late) in runs {
            for threads in 1..=4 {
                let (par, deferred) = parallel(path, cfg, policy, threads, late);
                assert_eq!(deferred, 0, "nothing left deferred in raw mode");
                let late = if late { " (late claim)" } else { "" };
                let name = format!("{} {policy}{late}/{threads}", path.display());
                assert_eq!(par.events.len(), serial.events.len(), "{name}: event count");
                for (a, b) in par.events.iter().zip(&serial.events) {
                    assert_eq!(a, b, "{name}: first differing event");
                }
                assert_eq!(
                    par.stats.flows_created, serial.stats.flows_created,
                    "{name}"
                );
                assert_eq!(par.stats.protocols, serial.stats.protocols, "{name}");
                assert_eq!(par.stats.reassembly, serial.stats.reassembly, "{name}");
                assert_eq!(par.stats.packets, serial.stats.packets, "{name}");
            }
        }
        eprintln!(
            "{}: {} events, {flows} flows identical under {} policies x 4 thread counts",
            path.display(),
            serial.events.len(),
            ALL.len()
        );
    }
}

/// The slot that keeps `prepare`'s decode for `process` (`ph` with late claim) belongs to the first context that uses
/// it: a second context made for the same worker number, and a `process` for another packet than the one prepared
/// (a handoff), decode afresh; nothing is lost or inspected twice, and the output is the serial one.
#[test]
fn prepare_slots_fall_back_to_decoding_in_process() {
    use flowbundle_worker::Workload;
    let Some(path) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let mut e = Engine::new(EngineConfig::default(), None, None);
    let serial = run_serial(&mut e, std::slice::from_ref(&path));
    let trace = Trace::load(&path).expect("load capture");
    let mut engine = Engine::new(EngineConfig::default(), None, None);
    let prepared = Prestage::new(engine.config()).run(&trace);
    let opts = SchedOptions {
        ph_late_claim: true,
        ..SchedOptions::default()
    };
    let sched = build("ph", 1, &opts).expect("policy");
    let source = PreparedTrace {
        trace: &trace,
        prepared: &prepared,
        number_base: Some(0),
    };
    let ctxs = {
        let w = InspectWorkload::new(&engine, sched.shape(), &source).with_order_guard(false);
        assert!(w.decodes_before_claim());
        let (mut a, mut b) = (w.local(0), w.local(0));
        for (i, d) in prepared.descs.iter().enumerate() {
            // SAFETY: one thread does everything here, so it holds every bundle.
            let held = &mut unsafe { BundleToken::assume_held(sched.bundle(d)) };
            match i % 3 {
                0 => {
                    w.prepare(&mut a, *d);
                    w.process(&mut a, *d, held);
                }
                1 => {
                    // `b` never owns the slot `a` took: its prepare does nothing, its process decodes.
                    w.prepare(&mut b, *d);
                    w.process(&mut b, *d, held);
                }
                _ => {
                    // A packet prepared and handed off, then another one processed: the slot does not match.
                    w.prepare(&mut a, *d);
                    if let Some(next) = prepared.descs.get(i + 1) {
                        w.prepare(&mut a, *next);
                    }
                    w.process(&mut a, *d, held);
                }
            }
        }
        vec![a, b]
    };
    let par = engine.finish(ctxs);
    assert_eq!(par.stats.packets, serial.stats.packets);
    assert_eq!(par.events, serial.events);
}
