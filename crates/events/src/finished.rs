//! What a run leaves when the engine finishes it.

use crate::cost::{CostRecord, CostSummary};
use crate::event::Event;
use crate::stats::EngineStats;

/// What the engine's `finish` returns: the end of a run, as the sinks report it.
#[derive(Debug)]
pub struct Finished {
    /// Every event not taken before, sorted ([`Event::sort_key`]).
    pub events: Vec<Event>,
    pub stats: EngineStats,
    pub cost: CostSummary,
    /// Cost records not taken before.
    pub cost_records: Vec<CostRecord>,
    /// Alerts per loaded rule: (signature id, alerts), rules that alerted only, in rule order (`noalert` rules, whose
    /// matches only set flowbits, are not there).
    pub rule_hits: Vec<(u32, u64)>,
    /// Where matching time went, per rule, inspection point and rule group, summed over the workers (with
    /// the engine's `rules_profile` option and rules).
    pub rules_profile: Option<flowbundle_rules::RulesProfile>,
    /// The most flows tracked at once, and the most out-of-order bytes buffered at once.
    pub peak_flows: usize,
    /// The cap on flows tracked at once: one budget for all workers together (`peak_flows` never passes it).
    pub max_flows: usize,
    pub peak_reassembly_bytes: usize,
    /// FTP expectations: announced, replaced under the cap, matched by data connections.
    pub expectations: (u64, u64, u64),
}
