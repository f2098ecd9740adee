//! `trace stats --cost`: the cost section (total, per packet, top connections by cost, cost by position in flow)
//! checked against an oracle with a deterministic model, and against the engine's own cost accounting
//! (`flowbundle_inspect::cost`) with the engine as the model, as the CLI runs it. No assertion depends on how
//! long anything takes: only on how the engine's counted cycles are distributed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use flowbundle_decode::{Decoded, FlowKey};
use flowbundle_ingest::PacketRecord;
use flowbundle_inspect::{Engine, EngineConfig, Prestage, WorkerCtx};
use flowbundle_trace::stats::{COST_POSITIONS, Collector, CostModel, StatsConfig, TraceStats};
use flowbundle_trace::synth::{SynthConfig, generate_trace};

/// Cost = 100 + payload bytes: deterministic, and different for different packets of one flow.
struct PayloadCost;

impl CostModel for PayloadCost {
    fn unit(&self) -> &str {
        "units"
    }
    fn cost(&mut self, _rec: &PacketRecord<'_>, d: &Decoded<'_>) -> u64 {
        100 + d.payload.len() as u64
    }
}

fn run(trace: &flowbundle_ingest::Trace, model: Box<dyn CostModel>) -> TraceStats {
    let mut c = Collector::new(StatsConfig::default()).with_cost(model);
    for r in trace.iter() {
        c.push(&r);
    }
    c.finish()
}

#[test]
fn positions_and_top_connections_follow_the_definition() {
    let cfg = SynthConfig::profile("balanced")
        .unwrap()
        .with_packets(20_000);
    let (trace, _) = generate_trace(&cfg).unwrap();
    let s = run(&trace, Box::new(PayloadCost));
    let cost = s.cost.clone().expect("a cost section");

    // Oracle: position = how many packets of the 5-tuple so far; cost summed per position and per flow.
    let mut seen: HashMap<FlowKey, u64> = HashMap::new();
    let mut per_flow: HashMap<FlowKey, u64> = HashMap::new();
    let mut by_pos = vec![(0u64, 0u64); COST_POSITIONS + 1];
    let mut total = 0;
    for r in trace.iter() {
        let d = flowbundle_decode::decode(&r, &Default::default());
        let x = 100 + d.payload.len() as u64;
        total += x;
        let (key, _) = FlowKey::from_decoded(&d).expect("generated packets are TCP or UDP");
        let p = seen.entry(key).or_default();
        *p += 1;
        *per_flow.entry(key).or_default() += x;
        let b = &mut by_pos[(*p as usize).min(COST_POSITIONS + 1) - 1];
        b.0 += 1;
        b.1 += x;
    }
    assert_eq!(cost.total, total);
    assert_eq!(cost.per_packet, Some(total as f64 / s.packets as f64));
    assert_eq!(cost.ns_per_packet, None, "the unit is not time");
    assert_eq!(cost.unpositioned_packets, 0);
    let want: Vec<(u32, u64, u64)> = by_pos
        .iter()
        .enumerate()
        .filter(|(_, b)| b.0 > 0)
        .map(|(i, b)| (i as u32 + 1, b.0, b.1))
        .collect();
    let got: Vec<(u32, u64, u64)> = cost
        .by_position
        .iter()
        .map(|b| (b.position, b.packets, b.total))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        cost.by_position[0].packets, s.connections.flows,
        "one first packet per flow"
    );
    assert!(
        cost.by_position
            .iter()
            .all(|b| b.exact == (b.position as usize <= COST_POSITIONS))
    );

    let mut flows: Vec<u64> = per_flow.values().copied().collect();
    flows.sort_unstable_by(|a, b| b.cmp(a));
    let top: Vec<u64> = cost.top.iter().map(|t| t.cost.unwrap()).collect();
    assert_eq!(
        top,
        flows[..10].to_vec(),
        "the ten most expensive flows, in order"
    );

    let table = s.render_table();
    assert!(table.contains("cost by position in flow"), "{table}");
}

/// The engine as the cost model, the way `flowbundle trace stats --cost` builds it (crates/cli/src/cmd/trace.rs),
/// with the engine shared so the test can read its own accounting afterwards.
struct Shared {
    engine: Engine,
    pre: Prestage,
    ctx: WorkerCtx,
    num: u64,
}

struct EngineCost(Rc<RefCell<Shared>>);

impl CostModel for EngineCost {
    fn unit(&self) -> &str {
        "cycles"
    }
    fn cost(&mut self, rec: &PacketRecord<'_>, _d: &Decoded<'_>) -> u64 {
        let s = &mut *self.0.borrow_mut();
        let before = s.ctx.cost().cycles;
        s.engine.process_serial(&mut s.ctx, &mut s.pre, s.num, rec);
        s.num += 1;
        s.ctx.cost().cycles - before
    }
    fn ns_per_unit(&self) -> Option<f64> {
        Some(1e9 / flowbundle_inspect::cost::tsc_hz())
    }
}

#[test]
fn the_engine_cost_section_is_the_engines_own_accounting() {
    let cfg = SynthConfig::profile("dominant")
        .unwrap()
        .with_packets(20_000);
    let (trace, _) = generate_trace(&cfg).unwrap();
    let engine = Engine::new(EngineConfig::default(), None, None);
    let pre = Prestage::new(engine.config());
    let ctx = engine.new_ctx();
    let shared = Rc::new(RefCell::new(Shared {
        engine,
        pre,
        ctx,
        num: 0,
    }));
    let s = run(&trace, Box::new(EngineCost(shared.clone())));
    let cost = s.cost.clone().expect("a cost section");
    let sh = shared.borrow();
    let summary = sh.ctx.cost();

    // Every cycle the engine counted is in the report, packet for packet.
    assert_eq!(summary.packets, s.packets);
    assert_eq!(cost.total, summary.cycles);
    assert!(cost.per_packet.unwrap() > 0.0);
    let ns = cost.ns_per_packet.expect("cycles convert to ns");
    assert!((ns - summary.ns_per_packet()).abs() <= 1e-6 * ns.max(1.0));
    // Generated connections are one engine flow each, so the positions are the engine's own.
    let ours: Vec<u64> = (0..=COST_POSITIONS)
        .map(|i| {
            cost.by_position
                .iter()
                .find(|b| b.position as usize == i + 1)
                .map_or(0, |b| b.packets)
        })
        .collect();
    let engine_positions: Vec<u64> = summary.by_position.iter().map(|b| b.0).collect();
    assert_eq!(ours, engine_positions);
    let ours_cycles: Vec<u64> = (0..=COST_POSITIONS)
        .map(|i| {
            cost.by_position
                .iter()
                .find(|b| b.position as usize == i + 1)
                .map_or(0, |b| b.total)
        })
        .collect();
    let engine_cycles: Vec<u64> = summary.by_position.iter().map(|b| b.1).collect();
    assert_eq!(ours_cycles, engine_cycles);
    // The dominant connection carries most packets; the top list is ordered and sums within the total.
    let top: Vec<u64> = cost.top.iter().map(|t| t.cost.unwrap()).collect();
    assert_eq!(top.len(), 10);
    assert!(top.windows(2).all(|w| w[0] >= w[1]), "{top:?}");
    assert!(top.iter().sum::<u64>() <= cost.total);
    let table = s.render_table();
    assert!(
        table.contains("inspection cost:") && table.contains("ns)"),
        "{table}"
    );
}
