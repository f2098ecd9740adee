//! # Thresholds applied where alerts come together in input order
//!
//! A rule's `threshold` or `detection_filter` counts its matches per host, address pair, rule or flow
//! ([`flowbundle_rules::threshold`]). Counting by host crosses flows, and flows live on different workers, so the
//! count cannot be kept by a worker without making the result depend on the thread count. The engine's output
//! already comes together in one place in input order: the single-threaded loop's events as they are produced, and
//! in a parallel run the ordered merge ([`crate::EventMerge`]), which releases exactly the single-threaded run's
//! order. [`AlertFilter`] sits there: it sees every event, drops the alerts a threshold suppresses, and keeps the
//! counts that correct the engine's alert totals ([`AlertFilter::correct`]). Parallel output equals serial output
//! because both feed it the same sequence.
//!
//! A `threshold.config` ([`flowbundle_rules::ThresholdConfig`]) applies here too: its thresholds replace or add to
//! the rules' own, and its suppressions drop a rule's alerts (all of them, or those from or to given addresses).
//!
//! Cost: a hash-table lookup per alert of a thresholded rule, an address-set test per suppression of the alert's
//! rule, nothing for other events; one table for the run, bounded ([`flowbundle_rules::ThresholdTable`]).

use flowbundle_rules::{
    RuleSet, Suppress, Threshold, ThresholdConfig, ThresholdStats, ThresholdTable,
};

use crate::engine::Finished;
use crate::event::{Event, EventKind};

/// Drops the alerts that rules' thresholds suppress (see the module documentation).
#[derive(Debug)]
pub struct AlertFilter {
    /// Per rule index: its threshold, if it has one.
    thresholds: Vec<Option<Threshold>>,
    /// Per rule index: the `threshold.config` suppressions that apply to it.
    suppressions: Vec<Vec<Suppress>>,
    /// Per rule index: its sid (to correct the per-rule totals).
    sids: Vec<u32>,
    /// Per rule index: alerts suppressed.
    suppressed: Vec<u64>,
    table: ThresholdTable,
}

impl AlertFilter {
    /// A filter for `rules`, or `None` when no rule has a threshold (then nothing needs filtering).
    pub fn new(rules: &RuleSet) -> Option<AlertFilter> {
        AlertFilter::with_table(rules, ThresholdTable::default())
    }

    /// A filter counting in `table` (its capacity bounds the state).
    pub fn with_table(rules: &RuleSet, table: ThresholdTable) -> Option<AlertFilter> {
        AlertFilter::with_config(rules, &ThresholdConfig::default(), table)
    }

    /// A filter for `rules` with the thresholds and suppressions of a `threshold.config`, or `None` when nothing
    /// needs filtering.
    pub fn with_config(
        rules: &RuleSet,
        config: &ThresholdConfig,
        table: ThresholdTable,
    ) -> Option<AlertFilter> {
        let thresholds: Vec<Option<Threshold>> = rules
            .rules()
            .iter()
            .map(|r| config.threshold_for(r.gid, r.sid, r.threshold))
            .collect();
        let suppressions: Vec<Vec<Suppress>> = rules
            .rules()
            .iter()
            .map(|r| config.suppressions_for(r.gid, r.sid))
            .collect();
        let needed =
            thresholds.iter().any(Option::is_some) || suppressions.iter().any(|s| !s.is_empty());
        needed.then(|| AlertFilter {
            sids: rules.rules().iter().map(|r| r.sid).collect(),
            suppressed: vec![0; thresholds.len()],
            thresholds,
            suppressions,
            table,
        })
    }

    /// Whether `e` is kept: every event but the alerts a threshold suppresses. Call once per event, in output order.
    pub fn keep(&mut self, e: &Event) -> bool {
        let EventKind::Alert(a) = &e.kind else {
            return true;
        };
        let i = a.rule_index as usize;
        let sup = self.suppressions.get(i).map_or(&[][..], Vec::as_slice);
        let t = self.thresholds.get(i).copied().flatten();
        if sup.is_empty() && t.is_none() {
            return true;
        }
        let (src, dst, _, _) = e.key.endpoints(e.dir);
        let keep = if sup.iter().any(|s| s.applies(src, dst)) {
            false
        } else if let Some(t) = t {
            self.table
                .check(a.rule_index, &t, src, dst, e.flow_id, e.ts_ns)
        } else {
            true
        };
        if !keep && let Some(n) = self.suppressed.get_mut(i) {
            *n += 1;
        }
        keep
    }

    /// Keeps the events of `events` that [`AlertFilter::keep`] keeps, in order.
    pub fn retain(&mut self, events: &mut Vec<Event>) {
        events.retain(|e| self.keep(e));
    }

    /// Counters of the threshold table.
    pub fn stats(&self) -> ThresholdStats {
        self.table.stats()
    }

    /// Takes the suppressed alerts out of the engine's totals (alerts, alerts per rule), so the summary counts what
    /// was reported.
    pub fn correct(&self, fin: &mut Finished) {
        let total: u64 = self.suppressed.iter().sum();
        fin.stats.alerts = fin.stats.alerts.saturating_sub(total);
        for (i, &n) in self.suppressed.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let Some(&sid) = self.sids.get(i) else {
                continue;
            };
            if let Some(hit) = fin.rule_hits.iter_mut().find(|(s, _)| *s == sid) {
                hit.1 = hit.1.saturating_sub(n);
            }
        }
        fin.rule_hits.retain(|&(_, n)| n > 0);
    }
}
