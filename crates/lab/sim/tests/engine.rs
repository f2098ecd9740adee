//! The event loop's promises, on real captures and on generated profiles: every packet processed exactly once under
//! every policy and core count, per-flow order where the policy promises it, drops counted in scaled mode, refusals
//! waited out in raw mode, determinism, and the model's basic arithmetic.

use flowbundle_lab_core::metrics;
use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::params::{CostModel, Machine, Overheads, Params, WorkModel};
use flowbundle_sim::{Mode, Model, RunConfig, SimInput, profiles, simulate};
use flowbundle_worker::Status;

fn cfg(scheduler: &str, cores: usize) -> RunConfig<'_> {
    RunConfig {
        scheduler,
        cores,
        sched: SchedOptions {
            ph_late_claim: true,
            ..SchedOptions::default()
        },
        mode: Mode::Raw,
        max_outstanding: 4096,
        records: true,
    }
}

/// Every packet processed once, by a worker in range, after it was enqueued; and per-flow order where promised.
fn check_run(
    input: &SimInput,
    params: &Params,
    scheduler: &str,
    cores: usize,
) -> flowbundle_sim::SimRun {
    let model = Model::new(input, params).unwrap();
    let run = simulate(input, &model, params, &cfg(scheduler, cores)).unwrap();
    let rec = run.report.records.as_ref().unwrap();
    assert_eq!(
        run.report.processed(),
        input.len() as u64,
        "{scheduler} × {cores}"
    );
    assert_eq!(run.report.lost, 0);
    for i in 0..input.len() {
        assert_eq!(
            rec.status[i],
            Status::Processed,
            "{scheduler} × {cores}: packet {i}"
        );
        assert!((rec.worker[i] as usize) < cores);
        assert!(rec.enqueue_ns[i] <= rec.start_ns[i] && rec.start_ns[i] <= rec.end_ns[i]);
    }
    let per_worker: u64 = run.report.workers.iter().map(|w| w.packets).sum();
    assert_eq!(per_worker, input.len() as u64);
    let order = metrics::order(rec, &input.flows, "raw");
    if scheduler != "ph" {
        assert_eq!(
            order.reordered_packets, 0,
            "{scheduler} × {cores} keeps per-flow order"
        );
    }
    run
}

#[test]
fn every_packet_once_on_a_real_capture_under_every_policy() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let input = profiles::files(&[p], None).unwrap();
    assert_eq!(input.len(), 4631);
    let params = Params::default();
    for name in flowbundle_scheduler::ALL {
        for cores in [1, 3, 8] {
            check_run(&input, &params, name, cores);
        }
    }
}

#[test]
fn every_packet_once_on_merged_ndpi_captures_at_many_cores() {
    let Some(a) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let Some(b) = flowbundle_testsupport::data("ndpi/pcap/netflix.pcap") else {
        return;
    };
    let input = profiles::files(&[a, b], None).unwrap();
    let params = Params::default();
    for name in ["dh", "ph", "lfb", "lfb-affinity"] {
        check_run(&input, &params, name, 64);
    }
}

#[test]
fn ph_hands_off_and_reorders_with_several_cores_and_is_fifo_alone() {
    let input = profiles::profile("dominant", 20_000, 3).unwrap();
    let params = Params::default();
    let one = check_run(&input, &params, "ph", 1);
    assert_eq!(one.report.sched.handoffs, 0);
    let rec = one.report.records.as_ref().unwrap();
    assert_eq!(
        metrics::order(rec, &input.flows, "raw").reordered_packets,
        0
    );
    let many = check_run(&input, &params, "ph", 8);
    assert!(many.report.sched.handoffs > 1000, "{:?}", many.report.sched);
    let rec = many.report.records.as_ref().unwrap();
    let order = metrics::order(rec, &input.flows, "raw");
    assert!(order.reordered_packets > 0, "late claims race as in PAM");
    let xfers = many.cache_total();
    assert!(xfers.handoff_lines > 0 && xfers.xfer_socket + xfers.xfer_remote > 0);
}

#[test]
fn one_core_dh_and_ph_process_in_arrival_order_and_agree() {
    let input = profiles::profile("many", 10_000, 5).unwrap();
    let params = Params::default();
    let dh = check_run(&input, &params, "dh", 1);
    let ph = check_run(&input, &params, "ph", 1);
    assert_eq!(dh.elapsed_cycles, ph.elapsed_cycles);
    let rec = dh.report.records.as_ref().unwrap();
    assert!(
        rec.start_ns.windows(2).all(|w| w[0] <= w[1]),
        "FIFO on one core"
    );
    // LFB on one core groups each bundle's packets: fewer flow-state misses, never more time.
    let lfb = check_run(&input, &params, "lfb", 1);
    assert!(lfb.cache_total().l1_miss < dh.cache_total().l1_miss);
    assert!(lfb.elapsed_cycles < dh.elapsed_cycles);
}

#[test]
fn runs_are_deterministic() {
    let input = profiles::profile("balanced", 8_000, 2).unwrap();
    let params = Params::default();
    for name in ["ph", "lfb-affinity", "rss"] {
        let a = check_run(&input, &params, name, 6);
        let b = check_run(&input, &params, name, 6);
        assert_eq!(a.elapsed_cycles, b.elapsed_cycles);
        assert_eq!(
            a.report.records.unwrap().worker,
            b.report.records.unwrap().worker
        );
        assert_eq!(a.cache, b.cache);
    }
}

#[test]
fn raw_mode_waits_out_refusals_of_a_small_policy() {
    let input = profiles::profile("dominant", 5_000, 1).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    for name in ["dh", "ph", "lfb"] {
        let mut c = cfg(name, 4);
        c.sched.capacity = 16;
        let run = simulate(&input, &model, &params, &c).unwrap();
        assert_eq!(run.report.processed(), input.len() as u64);
        assert!(run.report.dispatcher.full_waits > 0, "{name}");
        assert_eq!(
            run.report.dispatcher.dropped_full + run.report.dispatcher.dropped_outstanding,
            0
        );
    }
}

#[test]
fn scaled_mode_drops_beyond_the_outstanding_limit_and_counts_every_packet() {
    let input = profiles::profile("balanced", 20_000, 4).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    for (rate, expect_drops) in [(2e4, false), (5e7, true)] {
        let release = flowbundle_lab_core::search::release_times(&input.ts_ns, rate).unwrap();
        for name in ["dh", "ph", "lfb"] {
            let mut c = cfg(name, 2);
            c.mode = Mode::Scaled {
                release_ns: &release,
            };
            let run = simulate(&input, &model, &params, &c).unwrap();
            let d = &run.report.dispatcher;
            let dropped = d.dropped_outstanding + d.dropped_full;
            assert_eq!(
                d.dispatched + dropped,
                input.len() as u64,
                "{name} at {rate}"
            );
            assert_eq!(run.report.processed(), d.dispatched);
            assert_eq!(
                dropped > 0,
                expect_drops,
                "{name} at {rate} pps: {dropped} dropped"
            );
            let rec = run.report.records.as_ref().unwrap();
            let counted = rec
                .status
                .iter()
                .filter(|s| matches!(s, Status::DroppedOutstanding | Status::DroppedFull))
                .count() as u64;
            assert_eq!(counted, dropped);
            if !expect_drops {
                // Arrivals follow the rescaled capture: the run lasts about as long as the replay.
                let span = *release.last().unwrap();
                assert!(run.report.elapsed_ns >= span);
            }
        }
    }
}

#[test]
fn one_core_service_is_the_sum_of_costs_and_overheads() {
    // A per-packet cost array, no state effects beyond the cold misses: elapsed = Σ (cost + worker overhead +
    // stalls) on one core, the dispatcher never the bottleneck.
    let mut input = profiles::profile("many", 3_000, 9).unwrap();
    input.cost_ns = Some((0..input.len() as u32).map(|i| 1000 + i % 7).collect());
    let params = Params {
        machine: Machine::nehalem(),
        work: WorkModel {
            cost: CostModel::PerPacket,
            ..WorkModel::pam()
        },
        overheads: Overheads::default(),
    };
    let model = Model::new(&input, &params).unwrap();
    let run = simulate(&input, &model, &params, &cfg("dh", 1)).unwrap();
    let base: u64 = model.base.iter().map(|&b| u64::from(b)).sum();
    let expect = base
        + input.len() as u64 * u64::from(params.overheads.worker)
        + run.cache_total().stall_cycles;
    let got = run.busy_cycles[0];
    // The decode share is rounded down per packet: at most one cycle each.
    assert!(
        got <= expect && got + input.len() as u64 >= expect,
        "{got} vs {expect}"
    );
    assert!(run.elapsed_cycles >= got);
}

#[test]
fn bad_inputs_are_refused_not_panicked_on() {
    let input = profiles::profile("dominant", 1_000, 1).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    assert!(simulate(&input, &model, &params, &cfg("dh", 0)).is_err());
    assert!(simulate(&input, &model, &params, &cfg("dh", 65)).is_err());
    assert!(simulate(&input, &model, &params, &cfg("nope", 2)).is_err());
    let short = vec![0u64; 3];
    let mut c = cfg("lfb", 2);
    c.mode = Mode::Scaled { release_ns: &short };
    assert!(simulate(&input, &model, &params, &c).is_err());
    let mut broken = input.clone();
    broken.flows.pop();
    assert!(Model::new(&broken, &params).is_err());
    let empty = SimInput::default();
    let m = Model::new(&empty, &params).unwrap();
    let run = simulate(&empty, &m, &params, &cfg("ph", 3)).unwrap();
    assert_eq!(run.report.processed(), 0);
    let mut needs_costs = params.clone();
    needs_costs.work.cost = CostModel::PerPacket;
    assert!(Model::new(&input, &needs_costs).is_err());
}
