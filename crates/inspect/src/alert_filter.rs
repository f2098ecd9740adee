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
//! Its rate filters ([`flowbundle_rules::RateFilter`]) change a rule's action once it matched often enough: the
//! alert is reported as allowed (`alert`), blocked (`drop`, `reject`, in IPS mode) or not at all (`pass`, `sdrop`);
//! a drop or pass that acts on the whole flow (as the rule's scope says, see `flowbundle_rules::Rule::flow_scoped`)
//! ends the flow's alerts here, and its flow record carries the action, as the engine does for a rule's own
//! action (the engine does not see the change, so what it still inspects in that flow only shows in its
//! counters).
//!
//! A rule's `xbits` ([`flowbundle_rules::xbits`]) are applied here for the same reason: bits kept per host or
//! address pair cross flows. The engine matches such a rule as if its xbit conditions held and reports every match
//! (a `noalert` rule's too, as an event that is never written); here, in input order, the conditions are checked
//! against the table and, when they hold, the actions applied; an alert whose conditions fail is dropped and
//! corrects the totals as a threshold's does. What the rule's match did inside the worker (its flowbits, a drop or
//! pass verdict) is not undone when its xbit conditions fail here.
//!
//! A rule's host `tag`s ([`flowbundle_rules::tag`]) are applied here too: a host's tag covers its packets in every
//! flow. An alert of such a rule that is reported installs its tags on the host the tag names (the alerting packet's
//! source or destination) in a bounded table ([`flowbundle_rules::HostTags`]); while the rule set has host tags the
//! engine reports every IP packet (of a flow or not) as a candidate `packet` event (marked when its own flow's session tags
//! cover it), and here each candidate counts towards the tags of both its hosts and is kept when a session or host
//! tag covers it, dropped otherwise. Without host tags the engine reports only the packets its session tags cover,
//! and they pass. The session tags of a rule whose alerts this filter may drop (`flowbundle_rules::tag::filtered`)
//! are decided here the same way, per flow: installed by the rule's reported alerts only, counted over the flow's
//! candidates (which the engine reports from that rule's first match on), and gone with the flow's record.
//!
//! A rule's `dataset` operations on sets that some rule writes ([`flowbundle_rules::dataset`]) are applied here for
//! the same reason: a value `set` by one flow is `isset` in another. The engine matched such a rule as if they held
//! and the alert carries the buffer value each one saw; here they run in rule order against the run's sets, and the
//! alert is dropped (correcting the totals) when one fails. [`AlertFilter::save_datasets`] writes the sets with a
//! `save` or `state` file at the end of the run.
//!
//! In a parallel run the filter sees only the events it needs ([`FilterNeeds`], from its tables): the workers render
//! every other event into EVE lines as they do without a filter, and send the collector, in place of a packet's
//! (or a swept flow's) lines, its events whole when one of them is needed (`crate::stream::EventSender::whole_when`).
//! The filter keeps every event it does not need as it is and leaves its state as it was, so applying it to the
//! needed events alone, in output order, gives the same output and the same counts.
//!
//! Cost: a hash-table lookup per alert of a thresholded rule or per xbit of a rule's match, an address-set test per suppression of the alert's
//! rule, nothing for other events; one table for the run, bounded ([`flowbundle_rules::ThresholdTable`]).

use std::borrow::Cow;
use std::collections::HashMap;

use flowbundle_rules::dataset::{DatasetState, SetOp};
use flowbundle_rules::tag::{HostSide, TagScope};
use flowbundle_rules::{
    Action, HostTagStats, HostTags, RateFilter, RateTable, RuleSet, Suppress, Tag, TagList,
    Threshold, ThresholdConfig, ThresholdStats, ThresholdTable, Xbit, XbitStats, XbitTable,
};

use crate::engine::Finished;
use crate::event::{Event, EventKind, FlowAction};

/// Which events an [`AlertFilter`] must see, from its tables alone ([`AlertFilter::needs`]): every other event it
/// keeps as it is without a look at its state, and leaves its state as it was. A parallel run's workers render
/// every other event into EVE lines themselves, and hand the collector, which applies the filter in output order,
/// the events of a packet (or of a flow a sweep ends) whole only when one of them is needed here.
///
/// Needed: the alerts of a rule with a threshold, a suppression, a rate filter, xbits, a dataset operation applied
/// here, a host tag or a session tag decided here, and of a rule that does not alert (`noalert`: the filter drops
/// them); every alert when some rule has a rate filter (its action on a flow ends the flow's alerts); flow records
/// when rate filters or session tags decided here exist (a flow's action, the end of its tags); packet records when
/// host tags or session tags decided here exist, and a packet record no session tag covers (the filter drops it).
/// Application records and anomalies never.
#[derive(Debug, Clone, Default)]
pub struct FilterNeeds {
    /// Per rule index: its alerts are needed.
    alerts: Vec<bool>,
    all_alerts: bool,
    flows: bool,
    packets: bool,
}

impl FilterNeeds {
    /// Whether the filter must see `e`.
    pub fn needs(&self, e: &Event) -> bool {
        match &e.kind {
            EventKind::Alert(a) => {
                // A rule index the tables do not know (another rule set's): seen, to be safe.
                self.all_alerts
                    || self
                        .alerts
                        .get(a.rule_index as usize)
                        .copied()
                        .unwrap_or(true)
            }
            EventKind::Flow(_) => self.flows,
            EventKind::Packet(p) => self.packets || !p.session,
            EventKind::App(_) | EventKind::Anomaly(_) => false,
        }
    }

    /// Whether the filter must see any of `events`.
    pub fn any(&self, events: &[Event]) -> bool {
        events.iter().any(|e| self.needs(e))
    }
}

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
    /// Per rule index: its rate filter, whether a packet match of it acts on the flow, and its own action.
    rate: Vec<Option<RateFilter>>,
    flow_scoped: Vec<bool>,
    actions: Vec<Action>,
    rate_table: RateTable,
    /// Flows a rate filter dropped or passed: their later alerts are not reported, their record carries the action.
    /// An entry goes with the flow's record.
    flows: HashMap<u64, FlowAction>,
    /// IPS mode: a rate filter's `drop`/`reject` reports the alert as blocked.
    ips: bool,
    /// Per rule index: its xbits, and whether it does not alert (`noalert`, `pass` without `alert`: its events
    /// only carry its xbits).
    xbits: Vec<Vec<Xbit>>,
    silent: Vec<bool>,
    xbit_table: XbitTable,
    /// Per rule index: its host tags (empty for every rule when the rule set has none).
    host_tags: Vec<Vec<Tag>>,
    hosts: HostTags,
    /// Per rule index: its deferred dataset operations `(op id, set, op)`, in rule order; and the run's sets.
    datasets: Vec<Vec<(u32, u32, SetOp)>>,
    dataset_state: DatasetState,
    /// Per rule index: its session tags when its alerts may be dropped here (`flowbundle_rules::tag::filtered`), and
    /// those tags per flow, installed by the alerts reported (an entry goes with the flow's record).
    deferred_tags: Vec<Vec<Tag>>,
    flow_tags: HashMap<u64, TagList>,
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
        let rate: Vec<Option<RateFilter>> = rules
            .rules()
            .iter()
            .map(|r| config.rate_filter_for(r.gid, r.sid))
            .collect();
        let xbits: Vec<Vec<Xbit>> = rules.rules().iter().map(|r| r.xbits.clone()).collect();
        let host_tags: Vec<Vec<Tag>> = rules
            .rules()
            .iter()
            .map(|r| {
                r.tags
                    .iter()
                    .filter(|t| matches!(t.scope, TagScope::Host(_)))
                    .copied()
                    .collect()
            })
            .collect();
        let datasets: Vec<Vec<(u32, u32, SetOp)>> = rules
            .rules()
            .iter()
            .map(|r| {
                r.deferred_datasets()
                    .map(|d| (d.op_id, d.set, d.op))
                    .collect()
            })
            .collect();
        let deferred_tags: Vec<Vec<Tag>> = rules
            .rules()
            .iter()
            .map(|r| {
                let session = r.tags.iter().filter(|t| t.scope == TagScope::Session);
                if flowbundle_rules::tag::filtered(r) {
                    session.copied().collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        let needed = thresholds.iter().any(Option::is_some)
            || suppressions.iter().any(|s| !s.is_empty())
            || rate.iter().any(Option::is_some)
            || xbits.iter().any(|x| !x.is_empty())
            || host_tags.iter().any(|t| !t.is_empty())
            || datasets.iter().any(|d| !d.is_empty())
            || !rules.datasets().saves().is_empty()
            || deferred_tags.iter().any(|t| !t.is_empty());
        needed.then(|| AlertFilter {
            sids: rules.rules().iter().map(|r| r.sid).collect(),
            suppressed: vec![0; thresholds.len()],
            thresholds,
            suppressions,
            table,
            flow_scoped: rules.rules().iter().map(|r| r.flow_scoped()).collect(),
            actions: rules.rules().iter().map(|r| r.action).collect(),
            rate,
            rate_table: RateTable::default(),
            flows: HashMap::new(),
            ips: false,
            silent: rules.rules().iter().map(|r| !r.alerts()).collect(),
            xbits,
            xbit_table: XbitTable::default(),
            host_tags,
            hosts: HostTags::default(),
            datasets,
            dataset_state: DatasetState::new(rules.datasets()),
            deferred_tags,
            flow_tags: HashMap::new(),
        })
    }

    /// Which events [`AlertFilter::apply`] must see (see [`FilterNeeds`]): every other event it returns as it is,
    /// its state untouched.
    pub fn needs(&self) -> FilterNeeds {
        let rate = self.rate.iter().any(Option::is_some);
        let deferred = self.deferred_tags.iter().any(|t| !t.is_empty());
        let rules = self.thresholds.len();
        let alerts = (0..rules)
            .map(|i| {
                self.thresholds[i].is_some()
                    || self.suppressions.get(i).is_some_and(|s| !s.is_empty())
                    || self.rate.get(i).is_some_and(Option::is_some)
                    || self.silent.get(i).copied().unwrap_or(true)
                    || self.xbits.get(i).is_some_and(|x| !x.is_empty())
                    || self.host_tags.get(i).is_some_and(|t| !t.is_empty())
                    || self.datasets.get(i).is_some_and(|d| !d.is_empty())
                    || self.deferred_tags.get(i).is_some_and(|t| !t.is_empty())
            })
            .collect();
        FilterNeeds {
            alerts,
            // A rate filter's action on a flow ends the flow's later alerts, whatever their rule, and goes into its
            // record.
            all_alerts: rate,
            flows: rate || deferred,
            packets: deferred || self.host_tags.iter().any(|t| !t.is_empty()),
        }
    }

    /// IPS mode (the engine's `EngineConfig::ips`): a rate filter's `drop` or `reject` reports the alert blocked.
    pub fn ips(mut self, on: bool) -> Self {
        self.ips = on;
        self
    }

    /// Whether `e` is kept: every event but the alerts a threshold suppresses. Call once per event, in output order.
    /// A rate filter may also change a kept event; [`AlertFilter::apply`] returns it as it is to be written.
    pub fn keep(&mut self, e: &Event) -> bool {
        self.apply(e).is_some()
    }

    /// The event as it is to be written, or `None` when it is not reported. Call once per event, in output order.
    pub fn apply<'e>(&mut self, e: &'e Event) -> Option<Cow<'e, Event>> {
        if let EventKind::Packet(p) = &e.kind {
            // A tagged packet, or a candidate for the host tags (see the module documentation).
            let (src, dst, _, _) = e.key.endpoints(e.dir);
            let ts_s = e.ts_ns / 1_000_000_000;
            let host = self.hosts.on_packet(src, dst, ts_s, p.wire_len);
            let deferred = self
                .flow_tags
                .get_mut(&e.flow_id)
                .is_some_and(|l| l.on_packet(ts_s, p.wire_len));
            return (p.session || host || deferred).then_some(Cow::Borrowed(e));
        }
        if matches!(e.kind, EventKind::Flow(_)) {
            self.flow_tags.remove(&e.flow_id);
        }
        let kept = self.decide(e);
        // A reported alert installs its rule's session tags decided here.
        if kept.is_some()
            && e.has_flow()
            && let EventKind::Alert(a) = &e.kind
            && let Some(tags) = self
                .deferred_tags
                .get(a.rule_index as usize)
                .filter(|t| !t.is_empty())
        {
            let sid = self.sids.get(a.rule_index as usize).copied().unwrap_or(0);
            let list = self.flow_tags.entry(e.flow_id).or_default();
            for t in tags {
                list.add(a.gid, sid, t, e.ts_ns / 1_000_000_000);
            }
        }
        // A reported alert installs its rule's host tags.
        if kept.is_some()
            && let EventKind::Alert(a) = &e.kind
            && let Some(tags) = self
                .host_tags
                .get(a.rule_index as usize)
                .filter(|t| !t.is_empty())
        {
            let (src, dst, _, _) = e.key.endpoints(e.dir);
            let sid = self.sids.get(a.rule_index as usize).copied().unwrap_or(0);
            for t in tags {
                let host = match t.scope {
                    TagScope::Host(HostSide::Src) => src,
                    _ => dst,
                };
                self.hosts.add(host, a.gid, sid, t, e.ts_ns / 1_000_000_000);
            }
        }
        kept
    }

    /// [`AlertFilter::apply`] for every event but a tagged packet.
    fn decide<'e>(&mut self, e: &'e Event) -> Option<Cow<'e, Event>> {
        let a = match &e.kind {
            EventKind::Alert(a) => a,
            EventKind::Flow(r) => {
                return match self.flows.remove(&e.flow_id) {
                    Some(action) if r.action.is_none() => {
                        let mut e = e.clone();
                        if let EventKind::Flow(r) = &mut e.kind {
                            r.action = Some(action);
                        }
                        Some(Cow::Owned(e))
                    }
                    _ => Some(Cow::Borrowed(e)),
                };
            }
            EventKind::App(_) | EventKind::Anomaly(_) | EventKind::Packet(_) => {
                return Some(Cow::Borrowed(e));
            }
        };
        let i = a.rule_index as usize;
        let suppress = |f: &mut AlertFilter| {
            if let Some(n) = f.suppressed.get_mut(i) {
                *n += 1;
            }
            None
        };
        let silent = self.silent.get(i).copied().unwrap_or(false);
        if self.flows.contains_key(&e.flow_id) {
            return if silent { None } else { suppress(self) };
        }
        let (src, dst, _, _) = e.key.endpoints(e.dir);
        let xb = self.xbits.get(i).filter(|x| !x.is_empty());
        if let Some(xb) = xb
            && !self.xbit_table.conditions_hold(xb, src, dst, e.ts_ns)
        {
            return if silent { None } else { suppress(self) };
        }
        // Dataset operations are part of the match (they run inline in Suricata); the xbit actions follow it.
        if let Some(ops) = self.datasets.get(i).filter(|d| !d.is_empty())
            && !self.dataset_state.apply(ops, a.dataset_values.as_ref())
        {
            return if silent { None } else { suppress(self) };
        }
        if let Some(xb) = xb {
            self.xbit_table.apply(xb, src, dst, e.ts_ns);
        }
        if silent {
            return None;
        }
        let sup = self.suppressions.get(i).map_or(&[][..], Vec::as_slice);
        let t = self.thresholds.get(i).copied().flatten();
        let rf = self.rate.get(i).copied().flatten();
        if sup.is_empty() && t.is_none() && rf.is_none() {
            return Some(Cow::Borrowed(e));
        }
        let (src, dst, src_port, dst_port) = e.key.endpoints(e.dir);
        if sup.iter().any(|s| s.applies(src, dst)) {
            return suppress(self);
        }
        if let Some(t) = t
            && !self.table.check(
                a.rule_index,
                &t,
                (src, src_port),
                (dst, dst_port),
                e.flow_id,
                e.ts_ns,
            )
        {
            return suppress(self);
        }
        let Some(rf) = rf else {
            return Some(Cow::Borrowed(e));
        };
        if !self
            .rate_table
            .check(a.rule_index, &rf, src, dst, e.flow_id, e.ts_ns)
        {
            return Some(Cow::Borrowed(e));
        }
        // The new action. A match on stream data or an application buffer acts on the flow; a packet match as
        // the rule's type says.
        let flow_scope = a.source != "packet" || self.flow_scoped.get(i).copied().unwrap_or(false);
        let own = self.actions.get(i).copied().unwrap_or(Action::Alert);
        let act = rf.new_action;
        if flow_scope && (act.drops() || act.passes()) && own != act {
            let fa = if act.passes() {
                FlowAction::Pass
            } else {
                FlowAction::Drop
            };
            self.flows.insert(e.flow_id, fa);
        }
        if act.passes() || act == Action::Sdrop {
            return suppress(self);
        }
        let blocked = self.ips && act.drops();
        if blocked == a.blocked {
            return Some(Cow::Borrowed(e));
        }
        let mut e = e.clone();
        if let EventKind::Alert(a) = &mut e.kind {
            a.blocked = blocked;
        }
        Some(Cow::Owned(e))
    }

    /// Keeps the events of `events` that [`AlertFilter::apply`] keeps, as it changes them, in order.
    pub fn retain(&mut self, events: &mut Vec<Event>) {
        let all = std::mem::take(events);
        for e in all {
            let keep_as_is = match self.apply(&e) {
                None => false,
                Some(Cow::Borrowed(_)) => true,
                Some(Cow::Owned(changed)) => {
                    events.push(changed);
                    false
                }
            };
            if keep_as_is {
                events.push(e);
            }
        }
    }

    /// Counters of the threshold table.
    pub fn stats(&self) -> ThresholdStats {
        self.table.stats()
    }

    /// Counters of the host tag table.
    pub fn host_tag_stats(&self) -> HostTagStats {
        self.hosts.stats()
    }

    /// Counters of the xbits table.
    pub fn xbit_stats(&self) -> XbitStats {
        self.xbit_table.stats()
    }

    /// The run's dataset sets ([`flowbundle_rules::dataset`]): their counters.
    pub fn datasets(&self) -> &DatasetState {
        &self.dataset_state
    }

    /// Writes the sets with a `save` or `state` file (call once, at the end of the run). One line on error.
    pub fn save_datasets(&self) -> Result<(), String> {
        self.dataset_state.save()
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
