//! Rule groups change which rules a packet meets, never what alerts: the grouped matcher against the reference
//! that checks every rule of a kind on every packet (`LoadOptions::rule_groups: false`), on the nDPI captures, with
//! ET Open and with the Snort 3 community rules. Both runs must give the same alerts, event for event. The grouped
//! matcher also puts one group per rule into the prefilter and checks a rule's other application-layer groups only
//! once that one matched (against the buffer values the flow kept): ET Open runs a second time with
//! `EXTERNAL_NET` set to `any`, as many deployments set it, so that the rules written for the other direction of
//! each connection are candidates too.

mod common;

use std::path::PathBuf;

use flowbundle_inspect::rules::{LoadOptions, RuleSet, Vars};
use flowbundle_inspect::{Engine, EngineConfig, EventKind};

/// Every alert of a run, in output order, as text (signature, flow, direction, packet, transaction, payload span).
fn alerts(rules: RuleSet, captures: &[PathBuf]) -> Vec<String> {
    let mut engine = Engine::new(EngineConfig::default(), None, Some(rules));
    let f = common::run_serial(&mut engine, captures);
    let st = &f.stats.rules;
    eprintln!(
        "buffer values kept for lazily checked groups: {} evicted, {} too long",
        st.stored_evicted, st.stored_too_long
    );
    f.events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Alert(_)))
        .map(|e| format!("{e:?}"))
        .collect()
}

fn same_alerts(rules: &str, min_alerts: usize) {
    same_alerts_with(rules, min_alerts, Vars::suricata_defaults());
}

fn same_alerts_with(rules: &str, min_alerts: usize, vars: Vars) {
    let Some(path) = flowbundle_testsupport::data(rules) else {
        return;
    };
    let captures = flowbundle_testsupport::captures("ndpi/pcap", usize::MAX);
    if captures.is_empty() {
        return;
    }
    let load = |rule_groups| {
        let opts = LoadOptions {
            rule_groups,
            vars: vars.clone(),
            ..LoadOptions::default()
        };
        RuleSet::load_files_with(&[&path], &opts)
            .expect("rules load")
            .0
    };
    let grouped = alerts(load(true), &captures);
    let every = alerts(load(false), &captures);
    assert!(
        every.len() >= min_alerts,
        "{rules}: only {} alerts: the comparison would say little",
        every.len()
    );
    if grouped != every {
        let only_grouped: Vec<_> = grouped.iter().filter(|a| !every.contains(a)).collect();
        let only_every: Vec<_> = every.iter().filter(|a| !grouped.contains(a)).collect();
        panic!(
            "{rules}: {} alerts grouped, {} checking every rule\nonly grouped: {only_grouped:#?}\nonly every rule: \
             {only_every:#?}",
            grouped.len(),
            every.len()
        );
    }
}

#[test]
fn et_open_alerts_do_not_depend_on_rule_groups() {
    same_alerts("rules/et-open", 200);
}

#[test]
fn community_alerts_do_not_depend_on_rule_groups() {
    same_alerts("rules/snort3-community.rules", 20);
}

#[test]
fn et_open_alerts_do_not_depend_on_rule_groups_with_any_external_net() {
    let mut vars = Vars::suricata_defaults();
    vars.set("EXTERNAL_NET", "any");
    same_alerts_with("rules/et-open", 1000, vars);
}
