//! The execution models of `flowbundle_sim::exec` on generated traces: every packet processed once, per-flow order
//! kept under the order-keeping policies in every model, groups that follow the core count, and run-to-completion
//! without an instruction footprint agreeing with the run-to-completion engine (`engine::simulate`) it generalises.

use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::engine::{Mode, Model, RunConfig, simulate};
use flowbundle_sim::exec::{Exec, ExecConfig, ExecParams, ExecRun, SplitScan, simulate_exec};
use flowbundle_sim::params::Params;
use flowbundle_sim::threads::Host;
use flowbundle_sim::{SimInput, profiles};

fn run(
    input: &SimInput,
    model: &Model,
    params: &Params,
    ep: &ExecParams,
    exec: Exec,
    scheduler: &str,
    cores: usize,
) -> ExecRun {
    let cfg = ExecConfig {
        exec,
        scheduler,
        cores,
        sched: SchedOptions::default(),
        base_scale: 1.0,
        group_weights: None,
        host: Host::Dedicated,
    };
    simulate_exec(input, model, params, ep, &cfg).unwrap()
}

#[test]
fn every_model_processes_every_packet_in_flow_order_at_any_core_count() {
    let input = profiles::profile("balanced", 6_000, 3).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let ep = ExecParams::engine();
    for exec in Exec::ALL {
        for sched in ["lfb", "dh", "lfb-bounded"] {
            for cores in [1, 2, 3, 7, 16] {
                let r = run(&input, &model, &params, &ep, exec, sched, cores);
                assert_eq!(r.packets, input.len() as u64);
                assert_eq!(r.reordered, 0, "{} {sched} {cores}: reordered", exec.name());
                assert_eq!(r.groups.iter().map(|g| g.cores).sum::<usize>(), cores);
                let expect_groups = match exec {
                    Exec::Rtc => 1,
                    Exec::Pipeline => 3.min(cores),
                    Exec::Multilayer => 5.min(cores),
                };
                assert_eq!(
                    r.groups.len(),
                    expect_groups,
                    "{} on {cores} cores",
                    exec.name()
                );
                if exec == Exec::Rtc {
                    assert_eq!(r.hops_per_packet, 0.0);
                }
                assert!(r.pps > 0.0 && r.code_per_packet > 0.0);
            }
        }
    }
}

#[test]
fn multilayer_skips_the_layers_a_packet_does_not_need_and_the_pipeline_does_not() {
    let input = profiles::profile("many", 6_000, 2).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let ep = ExecParams::engine();
    let at10 = |e| run(&input, &model, &params, &ep, e, "lfb", 10);
    let (pipe, ml) = (at10(Exec::Pipeline), at10(Exec::Multilayer));
    assert!(
        (pipe.hops_per_packet - 2.0).abs() < 1e-9,
        "{}",
        pipe.hops_per_packet
    );
    let udp_or_empty = (0..input.len())
        .filter(|&i| input.proto[i] != 6 || input.payload_len[i] == 0)
        .count();
    assert!(udp_or_empty > 0);
    assert!(ml.hops_per_packet < 4.0, "{}", ml.hops_per_packet);
}

#[test]
fn run_to_completion_without_code_agrees_with_the_engine() {
    let input = profiles::profile("many", 8_000, 1).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let mut ep = ExecParams::engine();
    ep.scale_code(0.0);
    for cores in [1, 4, 8] {
        let exec = run(&input, &model, &params, &ep, Exec::Rtc, "lfb", cores);
        let eng = simulate(
            &input,
            &model,
            &params,
            &RunConfig {
                scheduler: "lfb",
                cores,
                sched: SchedOptions::default(),
                mode: Mode::Raw,
                max_outstanding: 4096,
                records: false,
            },
        )
        .unwrap();
        let ratio = exec.pps / eng.pps();
        println!(
            "{cores} cores: exec rtc {:.3} Mpps, engine {:.3} Mpps ({ratio:.3})",
            exec.pps / 1e6,
            eng.pps() / 1e6
        );
        assert!((0.9..1.1).contains(&ratio), "{cores} cores: {ratio}");
    }
}

#[test]
fn the_instruction_footprint_costs_run_to_completion_more_than_multilayer() {
    let input = profiles::profile("many", 8_000, 1).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let ep = ExecParams::engine();
    let at12 = |e| run(&input, &model, &params, &ep, e, "lfb", 12);
    let (rtc, ml) = (at12(Exec::Rtc), at12(Exec::Multilayer));
    println!(
        "I$ miss rtc {:.3} ml {:.3}; code stall/pkt rtc {:.0} ml {:.0}",
        rtc.icache_miss_rate,
        ml.icache_miss_rate,
        rtc.code_stall_per_packet,
        ml.code_stall_per_packet
    );
    assert!(ml.icache_miss_rate < rtc.icache_miss_rate);
    assert!(ml.code_stall_per_packet < rtc.code_stall_per_packet);
}

/// Detection cut into its stateless content scan and the rest (`ExecParams::split_scan`): the scan's share plus the
/// rest's equals detection's, the pipeline gets a stage for each, and only the scan is stateless.
#[test]
fn the_split_scan_divides_detection_and_nothing_else() {
    let ep = ExecParams::engine();
    let split = SplitScan::measured();
    assert!(
        split.scan_share > 0.3 && split.scan_share < 0.8,
        "{split:?}"
    );
    let sp = ep.split_scan(&split).unwrap();
    let names: Vec<&str> = sp.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["packet", "flow", "stream", "app", "scan", "detect"]);
    let det = ep.layers.iter().find(|l| l.name == "detect").unwrap();
    let (scan, rest) = (&sp.layers[4], &sp.layers[5]);
    assert!((scan.cost_share + rest.cost_share - det.cost_share).abs() < 1e-12);
    assert!(scan.stateless && !rest.stateless && scan.state_share == 0.0);
    assert_eq!(rest.state_share, det.state_share);
    assert!(sp.layers[..4].iter().all(|l| !l.stateless));
    assert_eq!(sp.pipeline_stages, vec![1, 3, 1, 1]);
    assert_eq!(sp.split_backlog, split.backlog);
    assert!(ExecParams::thesis().split_scan(&split).is_ok());
    let mut no_detect = ep.clone();
    no_detect.layers[4].name = "rules".into();
    assert!(no_detect.split_scan(&split).is_err());
    assert!(
        ep.split_scan(&SplitScan {
            scan_share: 1.5,
            ..split
        })
        .is_err()
    );
}

/// With the split scan, every model still processes every packet once, and every stateful layer still sees each
/// connection's packets in order (`reordered` counts a stateful group starting a packet before an earlier one of its
/// connection): the scan group may run a connection's packets on several cores at once, and the detection group
/// takes them back in order. A connection that is backlogged is spread (the dominant trace's 55% connection always
/// is), and under run-to-completion every core serves the three groups.
#[test]
fn split_scan_spreads_a_backlogged_connection_and_keeps_every_stateful_layer_in_order() {
    let params = Params::default();
    for (profile, packets) in [("balanced", 6_000), ("dominant", 4_000)] {
        let input = profiles::profile(profile, packets, 3).unwrap();
        let model = Model::new(&input, &params).unwrap();
        let ep = ExecParams::engine()
            .split_scan(&SplitScan {
                backlog: 4,
                ..SplitScan::measured()
            })
            .unwrap();
        for exec in Exec::ALL {
            for sched in ["lfb", "dh", "lfb-bounded"] {
                for cores in [1, 2, 3, 7, 16] {
                    let r = run(&input, &model, &params, &ep, exec, sched, cores);
                    let what = format!("{profile} {} {sched} {cores}", exec.name());
                    assert_eq!(r.packets, input.len() as u64, "{what}");
                    assert_eq!(r.reordered, 0, "{what}: a stateful layer saw a reordering");
                    if exec == Exec::Rtc && cores > 1 {
                        assert_eq!(r.groups.len(), 3, "{what}");
                        assert!(r.groups.iter().all(|g| g.shared && g.cores == cores));
                    }
                    if profile == "dominant" && sched != "dh" && cores >= 7 {
                        assert!(
                            r.spread_share > 0.0 && r.overlap_per_packet > 0.0,
                            "{what}: nothing spread"
                        );
                    }
                }
            }
        }
    }
}

/// Splitting the scan of the dominant connection is what lifts run-to-completion off that connection's serial rate:
/// at 16 cores the staged run is well above the plain one, and without a backlog to split (`split_backlog` 0) the
/// split layers alone do not do it (they change only the code layout the instruction cache sees).
#[test]
fn staging_the_dominant_connection_lifts_run_to_completion() {
    let input = profiles::profile("dominant", 8_000, 1).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let plain = ExecParams::engine();
    let split = plain.split_scan(&SplitScan::measured()).unwrap();
    let off = ExecParams {
        split_backlog: 0,
        ..split.clone()
    };
    let at16 = |ep: &ExecParams| run(&input, &model, &params, ep, Exec::Rtc, "lfb", 16);
    let (p, s, o) = (at16(&plain), at16(&split), at16(&off));
    println!(
        "rtc 16 cores: plain {:.3}, split {:.3}, split layers without staging {:.3} Mpps",
        p.pps / 1e6,
        s.pps / 1e6,
        o.pps / 1e6
    );
    assert!(s.pps > 1.5 * p.pps && s.pps > 1.5 * o.pps);
    assert!(o.pps < 1.2 * p.pps);
    assert_eq!(o.hops_per_packet, 0.0);
}

/// The reorder buffer after the stateless scan is bounded: with room for only a few packets the scan group spreads
/// nothing more while it is full (each such packet counted), so the buffer never holds more than its bound plus the
/// packets inside the group, every packet is still processed once and in order; with the default bound the same run
/// spreads more.
#[test]
fn a_full_reorder_buffer_stops_spreading_and_counts_what_it_kept_in_order() {
    let input = profiles::profile("dominant", 4_000, 3).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let split = ExecParams::engine()
        .split_scan(&SplitScan {
            backlog: 4,
            ..SplitScan::measured()
        })
        .unwrap();
    for exec in [Exec::Rtc, Exec::Multilayer] {
        let open = run(&input, &model, &params, &split, exec, "lfb", 16);
        let tight_ep = ExecParams {
            reorder_cap: 4,
            ..split.clone()
        };
        let tight = run(&input, &model, &params, &tight_ep, exec, "lfb", 16);
        let what = exec.name();
        assert_eq!(tight.packets, input.len() as u64, "{what}");
        assert_eq!(tight.reordered, 0, "{what}");
        assert!(open.parked_max > 4, "{what}: {}", open.parked_max);
        assert_eq!(open.reorder_overflow, 0, "{what}");
        assert!(tight.reorder_overflow > 0, "{what}: nothing refused");
        assert!(
            tight.parked_max as usize <= 4 + split.queue,
            "{what}: {} parked",
            tight.parked_max
        );
        assert!(tight.spread_share < open.spread_share, "{what}");
    }
}

/// The measured hand-off is charged where the runtime cuts (a hop into the group that reads the payload): with it
/// the staged models are slower than without it (`Handoff::none`, the policy's overheads), run-to-completion is
/// not (it hops nowhere), and the hop moves the packet's record (and what the script copied, when it copies).
#[test]
fn the_measured_hand_off_costs_the_staged_models_and_not_run_to_completion() {
    use flowbundle_sim::handoff::Handoff;
    let input = profiles::profile("balanced", 6_000, 3).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let measured = ExecParams::engine();
    assert!(measured.handoff.is_measured());
    let none = ExecParams {
        handoff: Handoff::none(),
        ..measured.clone()
    };
    for exec in Exec::ALL {
        let with = run(&input, &model, &params, &measured, exec, "lfb", 4);
        let without = run(&input, &model, &params, &none, exec, "lfb", 4);
        let what = exec.name();
        if exec == Exec::Rtc {
            assert_eq!(with.pps, without.pps, "{what}");
            assert_eq!(with.hop_lines_per_packet, 0.0);
        } else {
            assert!(
                with.pps < without.pps,
                "{what}: {} vs {}",
                with.pps,
                without.pps
            );
            assert!(
                with.hop_lines_per_packet >= without.hop_lines_per_packet,
                "{what}: the record's lines move, and any copied payload"
            );
        }
    }
}

/// The runtime's own threads (`flowbundle_sim::threads`): one worker is the single-threaded loop (the engine's cost
/// and the loop's, nothing else); with two workers on two cores the reader's and the collector's work takes its
/// cycles from the workers' cores (every cycle of it charged once, the run slower than with a free dispatcher); with
/// two cores more they run beside the workers, and the reader, serial, bounds the rate it dispatches at.
#[test]
fn the_reader_and_the_collector_share_the_workers_cores_unless_the_machine_has_more() {
    use flowbundle_sim::threads::RuntimeThreads;
    let input = profiles::profile("balanced", 6_000, 3).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let threads = RuntimeThreads {
        source: "test".into(),
        reader_instructions: 2_000.0,
        collector_instructions: 1_000.0,
        worker_instructions: -500.0,
        loop_instructions: 1_500.0,
        cycles_per_instruction: 0.5,
        cpu: None,
    };
    let ep = ExecParams {
        threads: threads.clone(),
        ..ExecParams::engine()
    };
    let on = |host: Host, exec: Exec, cores: usize| {
        let cfg = ExecConfig {
            exec,
            scheduler: "lfb",
            cores,
            sched: SchedOptions::default(),
            base_scale: 1.0,
            group_weights: None,
            host,
        };
        simulate_exec(&input, &model, &params, &ep, &cfg).unwrap()
    };
    let clock = params.machine.clock_ghz * 1e9;
    // One worker: the single-threaded loop, its cycles per packet on top of the engine's, no reader, no collector.
    let free1 = on(Host::Dedicated, Exec::Rtc, 1);
    let loop1 = on(Host::Runtime, Exec::Rtc, 1);
    assert_eq!(loop1.threads, "single loop");
    assert_eq!(loop1.aux_on_workers_per_packet, 0.0);
    let per = |r: &ExecRun| r.elapsed_cycles as f64 / r.packets as f64;
    let extra = per(&loop1) - per(&free1);
    let expect = threads.loop_cycles() as f64 - f64::from(params.overheads.worker);
    assert!(
        (extra - expect).abs() < 0.02 * per(&free1),
        "single loop: {extra:.0} cycles more per packet, expected {expect:.0}"
    );
    for exec in Exec::ALL {
        let what = exec.name();
        let free = on(Host::Dedicated, exec, 2);
        let shared = on(Host::Runtime, exec, 2);
        let spare = on(Host::RuntimeOn { cores: 4 }, exec, 2);
        for r in [&free, &shared, &spare] {
            assert_eq!(r.packets, input.len() as u64, "{what}");
            assert_eq!(r.reordered, 0, "{what}");
        }
        assert_eq!(
            (free.threads.as_str(), free.machine_cores),
            ("dedicated", 2)
        );
        assert_eq!(
            (shared.threads.as_str(), shared.machine_cores),
            ("runtime", 2)
        );
        assert_eq!(spare.machine_cores, 4);
        // Every packet's reader and collector work ran on the workers' cores, and only there.
        let aux = (threads.reader_cycles() + threads.collector_cycles()) as f64;
        assert!(
            (shared.aux_on_workers_per_packet - aux).abs() < 1e-6,
            "{what}: {} vs {aux}",
            shared.aux_on_workers_per_packet
        );
        assert_eq!(spare.aux_on_workers_per_packet, 0.0, "{what}");
        assert!(
            shared.pps < spare.pps,
            "{what}: {} vs {}",
            shared.pps,
            spare.pps
        );
        // The two cores did at most two cores' worth of work.
        let busy: u64 = shared.groups.iter().map(|g| g.busy_cycles).sum();
        let work = busy as f64 + shared.aux_on_workers_per_packet * shared.packets as f64;
        assert!(work <= 2.0 * shared.elapsed_cycles as f64 * 1.001, "{what}");
        // The reader is serial: it never dispatches faster than one packet per its cycles.
        assert!(
            spare.pps <= clock / threads.reader_cycles() as f64 * 1.001,
            "{what}"
        );
    }
    // Without a measurement of the threads the runtime host is the dedicated one.
    let none = ExecParams {
        threads: RuntimeThreads::none(),
        ..ep.clone()
    };
    let cfg = |host| ExecConfig {
        exec: Exec::Pipeline,
        scheduler: "lfb",
        cores: 3,
        sched: SchedOptions::default(),
        base_scale: 1.0,
        group_weights: None,
        host,
    };
    let a = simulate_exec(&input, &model, &params, &none, &cfg(Host::Runtime)).unwrap();
    let b = simulate_exec(&input, &model, &params, &none, &cfg(Host::Dedicated)).unwrap();
    assert_eq!(a.pps, b.pps);
    // Fewer cores than workers is refused.
    assert!(
        simulate_exec(
            &input,
            &model,
            &params,
            &ep,
            &cfg(Host::RuntimeOn { cores: 2 })
        )
        .is_err()
    );
}

#[test]
fn the_threads_measured_time_on_a_cpu_replaces_their_instruction_counts() {
    use flowbundle_sim::threads::{RuntimeThreads, ThreadsCpu};
    let input = profiles::profile("dominant", 6_000, 3).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let counted = RuntimeThreads {
        source: "test".into(),
        reader_instructions: 1_600.0,
        collector_instructions: 100.0,
        worker_instructions: 1_200.0,
        loop_instructions: 1_600.0,
        cycles_per_instruction: 0.5,
        cpu: None,
    };
    // Measured natively: the reader a quarter of the loop's time per packet, the collector a tenth, both workers
    // 5% less than the loop (the reader decodes for them), a hand-off 30% of a loop's packet.
    let cpu = ThreadsCpu {
        source: "test".into(),
        loop_ns: 2_000.0,
        reader_ns: 500.0,
        collector_ns: 200.0,
        workers_ns: 1_900.0,
        handoff_ns: 600.0,
        loop_fixed_ns: 0.0,
        runtime_fixed_ns: 0.0,
        staged_fixed_ns: 0.0,
    };
    let measured = RuntimeThreads {
        cpu: Some(cpu),
        ..counted.clone()
    };
    let on = |threads: &RuntimeThreads, exec: Exec, cores: usize| {
        let ep = ExecParams {
            threads: threads.clone(),
            ..ExecParams::engine()
        };
        let cfg = ExecConfig {
            exec,
            scheduler: "lfb",
            cores,
            sched: SchedOptions::default(),
            base_scale: 1.0,
            group_weights: None,
            host: Host::Runtime,
        };
        simulate_exec(&input, &model, &params, &ep, &cfg).unwrap()
    };
    // One worker is the single-threaded loop either way: the measurement is a share of it.
    assert_eq!(
        on(&counted, Exec::Rtc, 1).elapsed_cycles,
        on(&measured, Exec::Rtc, 1).elapsed_cycles
    );
    let loop_per_packet = model.base.iter().map(|&b| f64::from(b)).sum::<f64>()
        / model.base.len() as f64
        + counted.loop_cycles() as f64;
    let rtc = on(&measured, Exec::Rtc, 2);
    let expect_reader = (0.25 * loop_per_packet).round();
    let expect_aux = expect_reader + (0.1 * loop_per_packet).round();
    assert_eq!(rtc.reader_cycles_per_packet, expect_reader);
    assert!(
        (rtc.aux_on_workers_per_packet - expect_aux).abs() < 1e-6,
        "{} vs {expect_aux}",
        rtc.aux_on_workers_per_packet
    );
    let before = on(&counted, Exec::Rtc, 2);
    assert_eq!(
        before.aux_on_workers_per_packet,
        (counted.reader_cycles() + counted.collector_cycles()) as f64
    );
    // The measured threads cost more than their instructions said: the two workers' cores are slower for it.
    assert!(rtc.pps < before.pps, "{} vs {}", rtc.pps, before.pps);
    let work = |r: &ExecRun| {
        r.groups.iter().map(|g| g.busy_cycles).sum::<u64>() as f64
            + r.aux_on_workers_per_packet * r.packets as f64
    };
    assert!(work(&rtc) <= 2.0 * rtc.elapsed_cycles as f64 * 1.001);
    // The hand-off's measured time: a costlier hop slows the staged models and leaves run-to-completion alone.
    let cheap = RuntimeThreads {
        cpu: measured.cpu.clone().map(|c| ThreadsCpu {
            handoff_ns: 20.0,
            ..c
        }),
        ..counted.clone()
    };
    for exec in [Exec::Pipeline, Exec::Multilayer] {
        let (dear, light) = (on(&measured, exec, 2), on(&cheap, exec, 2));
        assert_eq!(dear.packets, input.len() as u64);
        assert!(
            work(&dear) > work(&light),
            "{}: {} vs {}",
            exec.name(),
            work(&dear),
            work(&light)
        );
    }
    assert_eq!(on(&cheap, Exec::Rtc, 2).pps, rtc.pps);
    // Not measured: no fixed time, and the run's rate is the packets' rate.
    assert_eq!((rtc.fixed_cycles, rtc.run_pps), (0, rtc.pps));
    // The runtime's fixed times (a run of one packet's processing time): added to the run's time as shares of the
    // loop's, by configuration, never to the packets' rate.
    let fixed = RuntimeThreads {
        cpu: measured.cpu.clone().map(|c| ThreadsCpu {
            loop_fixed_ns: 2_000_000.0,
            runtime_fixed_ns: 2_400_000.0,
            staged_fixed_ns: 2_600_000.0,
            ..c
        }),
        ..counted.clone()
    };
    for (exec, cores, ns) in [
        (Exec::Rtc, 1, 2_000_000.0),
        (Exec::Multilayer, 1, 2_000_000.0),
        (Exec::Rtc, 2, 2_400_000.0),
        (Exec::Pipeline, 2, 2_600_000.0),
        (Exec::Multilayer, 2, 2_600_000.0),
    ] {
        let (with, without) = (on(&fixed, exec, cores), on(&measured, exec, cores));
        assert_eq!(with.elapsed_cycles, without.elapsed_cycles);
        assert_eq!(with.pps, without.pps);
        assert_eq!(
            with.fixed_cycles,
            (ns / 2_000.0 * loop_per_packet).round() as u64
        );
        let run_s =
            (with.elapsed_cycles + with.fixed_cycles) as f64 / (params.machine.clock_ghz * 1e9);
        assert!((with.run_pps - with.packets as f64 / run_s).abs() < 1e-6 * with.run_pps);
        assert!(with.run_pps < with.pps);
    }
    // Without the runtime's threads (a dedicated dispatcher) there is no runtime to set up.
    let dedicated = ExecParams {
        threads: fixed,
        ..ExecParams::engine()
    };
    let cfg = ExecConfig {
        exec: Exec::Rtc,
        scheduler: "lfb",
        cores: 2,
        sched: SchedOptions::default(),
        base_scale: 1.0,
        group_weights: None,
        host: Host::Dedicated,
    };
    assert_eq!(
        simulate_exec(&input, &model, &params, &dedicated, &cfg)
            .unwrap()
            .fixed_cycles,
        0
    );
}

/// Where the runtime's threads are modelled the simulation follows the runtime's code: the engine calls the rules
/// for every packet, so both staged models hand every packet to detection, and with two workers both cut where the
/// runtime cuts (a flow group, then detection): MultiLayer Processing runs what the pipeline runs, as
/// `flowbundle inspect --threads 2 --exec multilayer` does. On dedicated cores (the thesis' model) a packet without
/// payload still skips identification and detection.
#[test]
fn with_the_runtimes_threads_every_packet_reaches_detection_as_in_the_runtime() {
    let input = profiles::profile("dominant", 6_000, 3).unwrap();
    let params = Params::default();
    let model = Model::new(&input, &params).unwrap();
    let ep = ExecParams::engine();
    assert!(ep.threads.is_measured());
    let on = |host: Host, exec: Exec| {
        let cfg = ExecConfig {
            exec,
            scheduler: "lfb",
            cores: 2,
            sched: SchedOptions::default(),
            base_scale: 1.0,
            group_weights: None,
            host,
        };
        simulate_exec(&input, &model, &params, &ep, &cfg).unwrap()
    };
    let layers = |r: &ExecRun| {
        r.groups
            .iter()
            .map(|g| g.layers.clone())
            .collect::<Vec<_>>()
    };
    let (pipe, multi) = (
        on(Host::Runtime, Exec::Pipeline),
        on(Host::Runtime, Exec::Multilayer),
    );
    assert_eq!(layers(&multi), layers(&pipe));
    assert_eq!(layers(&multi).last().unwrap(), &vec!["detect".to_string()]);
    assert_eq!((pipe.hops_per_packet, multi.hops_per_packet), (1.0, 1.0));
    assert_eq!(multi.groups[1].packets, input.len() as u64);
    assert_eq!(multi.reordered, 0);
    // Dedicated cores: the thesis' model, where a packet without payload skips detection.
    let thesis = on(Host::Dedicated, Exec::Multilayer);
    let with_payload = input.payload_len.iter().filter(|&&p| p > 0).count() as u64;
    assert!(with_payload < input.len() as u64);
    assert_eq!(thesis.groups.last().unwrap().packets, with_payload);
    assert!(thesis.hops_per_packet < 1.0);
}
