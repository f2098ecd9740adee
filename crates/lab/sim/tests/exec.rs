//! The execution models of `flowbundle_sim::exec` on generated traces: every packet processed once, per-flow order
//! kept under the order-keeping policies in every model, groups that follow the core count, and run-to-completion
//! without an instruction footprint agreeing with the run-to-completion engine (`engine::simulate`) it generalises.

use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::engine::{Mode, Model, RunConfig, simulate};
use flowbundle_sim::exec::{Exec, ExecConfig, ExecParams, ExecRun, simulate_exec};
use flowbundle_sim::params::Params;
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
