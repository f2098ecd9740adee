//! # The detection context: what the app layer reads, and what it hands back
//!
//! The app layer ([`crate::app`]) needs the protocol registry, the L7-filter signatures (with the label each gives a
//! flow) and the content rules: all read-only while inspecting. [`Detection`] holds them, the engine owns one, and
//! the app layer gets `&Detection`, never the engine: it cannot reach the connection table, the expectation table or
//! the engine's counters. What it produces besides events (alert and app-event counts, FTP data-connection
//! announcements) goes into a [`Produced`] that the engine folds into its own state after each packet
//! (`Engine::absorb`). Data flows one way: engine → app layer → back to the engine, no circle.

use std::net::IpAddr;
use std::sync::Arc;

use flowbundle_protocols::{AppProto, Registry};
use flowbundle_rules::{Action, ActionOrder, RuleSet};
use flowbundle_signatures::{SigId, SignatureSet};

use crate::config::EngineConfig;
use crate::event::AppLabel;

/// Everything identification and rule matching read: built once, shared by every worker, never written while
/// inspecting.
pub struct Detection {
    registry: Registry,
    /// The compiled sets are shared (`Arc`): building them is the expensive part (a 10,000-rule set takes seconds),
    /// and a harness that needs a fresh engine per run builds them once.
    pub(crate) signatures: Option<Arc<SignatureSet>>,
    /// Per signature: its label, and the built-in protocol of the same name if there is one.
    sig_labels: Vec<(AppLabel, Option<AppProto>)>,
    rules: Option<Arc<RuleSet>>,
    /// Whether application events (HTTP, DNS, TLS records, ...) are kept as events.
    app_events: bool,
    /// [`EngineConfig::anomaly`].
    anomaly: crate::config::AnomalyTypes,
    /// The engine epoch that brought this signature set (a reload that keeps the set keeps its epoch, so flows keep
    /// their signature matching state: see the engine's "Reloading").
    pub(crate) sig_epoch: u64,
    /// IPS mode ([`EngineConfig::ips`]).
    ips: bool,
    /// [`EngineConfig::action_order`].
    action_order: ActionOrder,
    /// [`EngineConfig::packet_alert_max`], 0 read as the default.
    packet_alert_max: usize,
    /// Tagged packets are logged ([`EngineConfig::tagged_packets`]) and the rule set has session tags, host tags
    /// (see [`crate::app::tag_packet`]).
    session_tags: bool,
    host_tags: bool,
}

impl Detection {
    /// The built-in detectors configured by `cfg`, with optional signature and rule sets.
    pub fn new(
        cfg: &EngineConfig,
        signatures: Option<Arc<SignatureSet>>,
        rules: Option<Arc<RuleSet>>,
    ) -> Self {
        // HASSH is computed when the configuration asks for it or a rule reads it, as Suricata's keywords enable it.
        let mut limits = cfg.limits;
        limits.ssh_hassh |= rules.as_ref().is_some_and(|r| {
            use flowbundle_rules::Buffer as B;
            r.rules().iter().any(|r| {
                r.groups.iter().any(|g| {
                    matches!(
                        g.buffer,
                        B::SshHassh
                            | B::SshHasshString
                            | B::SshHasshServer
                            | B::SshHasshServerString
                    )
                })
            })
        });
        // Every file carrier computes what the rules' file keywords read: the hashes the lists test, the magic
        // they inspect (EVE `fileinfo` then carries them too).
        if let Some(n) = rules.as_deref().map(RuleSet::file_needs) {
            limits.file_hashes = limits
                .file_hashes
                .union(flowbundle_protocols::file::FileHashes {
                    md5: n.md5,
                    sha1: n.sha1,
                    sha256: n.sha256,
                });
            limits.file_magic |= n.magic;
        }
        let registry = Registry::new(
            flowbundle_protocols::registry::builtin_detectors(),
            cfg.classifier,
            limits,
        )
        .with_detection_ports(&cfg.detection_ports);
        let sig_labels = signatures
            .as_ref()
            .map(|set| {
                set.iter()
                    .map(|(_, s)| {
                        // The protocol whose registration record claims this L7-filter name.
                        let proto = AppProto::from_l7filter_name(&s.name);
                        let app = match proto {
                            Some(p) => AppLabel::Proto(p),
                            None => AppLabel::Signature(Arc::from(s.name.as_str())),
                        };
                        (app, proto)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let tags = |scope: fn(&flowbundle_rules::Tag) -> bool| {
            cfg.tagged_packets
                && rules
                    .as_ref()
                    .is_some_and(|r| r.rules().iter().any(|r| r.tags.iter().any(scope)))
        };
        let session_tags = tags(|t| t.scope == flowbundle_rules::tag::TagScope::Session);
        let host_tags = tags(|t| t.scope != flowbundle_rules::tag::TagScope::Session);
        Detection {
            session_tags,
            host_tags,
            registry,
            signatures,
            sig_labels,
            rules,
            app_events: cfg.app_events,
            anomaly: cfg.anomaly,
            sig_epoch: 0,
            ips: cfg.ips,
            action_order: cfg.action_order,
            packet_alert_max: match cfg.packet_alert_max {
                0 => crate::config::DEFAULT_PACKET_ALERT_MAX,
                n => n,
            },
        }
    }

    /// IPS mode: drop and reject rules block what they match ([`EngineConfig::ips`]).
    pub fn ips(&self) -> bool {
        self.ips
    }

    /// Where a rule's matches apply among a packet's ([`EngineConfig::action_order`]).
    pub fn action_rank(&self, action: Action) -> u8 {
        self.action_order.rank(action)
    }

    /// Packets a rule's `tag` covers are reported (see [`crate::app::tag_packet`]): tagged packets are logged and
    /// some rule has a tag.
    pub fn tagging(&self) -> bool {
        self.session_tags || self.host_tags
    }

    /// Tagged packets are logged and some rule has a session tag.
    pub fn session_tags(&self) -> bool {
        self.session_tags
    }

    /// Tagged packets are logged and some rule has a host tag: every IP packet is reported as a candidate
    /// for the alert filter, which keeps those a host tag covers.
    pub fn host_tags(&self) -> bool {
        self.host_tags
    }

    /// The most alerts one packet reports ([`EngineConfig::packet_alert_max`]).
    pub fn packet_alert_max(&self) -> usize {
        self.packet_alert_max
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn signatures(&self) -> Option<&SignatureSet> {
        self.signatures.as_deref()
    }

    pub fn rules(&self) -> Option<&RuleSet> {
        self.rules.as_deref()
    }

    /// The signature set, shared.
    pub fn shared_signatures(&self) -> Option<Arc<SignatureSet>> {
        self.signatures.clone()
    }

    /// The rule set, shared.
    pub fn shared_rules(&self) -> Option<Arc<RuleSet>> {
        self.rules.clone()
    }

    /// Whether application events are kept.
    pub fn app_events(&self) -> bool {
        self.app_events
    }

    /// Which EVE `anomaly` records are written ([`EngineConfig::anomaly`]).
    pub fn anomaly(&self) -> crate::config::AnomalyTypes {
        self.anomaly
    }

    /// The label signature `id` gives a flow, and the built-in protocol of the same name if there is one.
    pub(crate) fn signature_label(&self, id: SigId) -> (AppLabel, Option<AppProto>) {
        self.sig_labels
            .get(id.index())
            .cloned()
            .unwrap_or((AppLabel::Unknown, None))
    }
}

/// An FTP data connection an FTP control connection announced: `peer` will connect to `listener:port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Announced {
    pub listener: IpAddr,
    pub port: u16,
    pub peer: IpAddr,
    pub ts_ns: u64,
}

/// What the app layer produced while handling packets, besides events: the engine folds it into its counters and
/// its expectation table after each packet. Lives in the worker's context, so nothing is allocated per packet (the
/// announcement list keeps its capacity).
#[derive(Debug, Default)]
pub(crate) struct Produced {
    pub alerts: u64,
    pub app_events: u64,
    pub announced: Vec<Announced>,
    /// Files named by FTP transfer commands, each for the announced connection it goes over.
    pub named: Vec<(Announced, flowbundle_protocols::ftp::data::Transfer)>,
}
