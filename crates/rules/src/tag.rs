//! # `tag`: logging the packets that follow an alert
//!
//! `tag:session[,N,packets|seconds|bytes]` and `tag:host[,N,packets|seconds|bytes[,src|dst]]`, as Suricata 8 reads
//! them: after a rule with `tag` alerts, the packets that follow in the same flow (`session`) or to and from one
//! host of the alerting packet (`host`: its destination unless `src` is named) are *tagged*, and the EVE output
//! writes each tagged packet as an `event_type: packet` record (when `types.alert.tagged-packets` is on). Without a
//! count the tag lasts 256 packets; a count of packets is capped at 256, as Suricata caps it. A rule may have
//! several tags.
//!
//! What counts, as in Suricata's tagging engine:
//! * a tag is installed by an alert (a match that is reported: after thresholds, never by a `noalert` rule), keyed by
//!   the rule's `(gid, sid)`; the same rule matching again renews it (its counters restart), at most
//!   [`MATCH_LIMIT`] times; a flow or host holds at most [`MAX_TAGS`] tags, further ones are dropped and counted;
//! * every packet after installation counts towards the tag: one packet, its length in bytes, or its capture time
//!   (whole seconds since the tag was installed). The alerting packet itself counts (it is the first), but is not
//!   logged as a tagged packet: its alert describes it. A tag ends on the first packet beyond its count (more
//!   packets or bytes than the count, or more seconds than the count after the alert);
//! * a packet tagged by several tags is logged once.
//!
//! A session tag lives in its flow's matcher state ([`TagList`] inside [`crate::FlowMatchState`]): the worker that
//! inspects the flow's packets updates it, so its records do not depend on the thread count. The session tags of a
//! rule whose alerts may be dropped after it matched ([`filtered`]: a threshold, an xbits or dataset condition) are decided
//! where alerts meet in input order instead, where it is known whether the alert that sets them is reported. Host tags cross flows:
//! the engine applies them where its events meet in input order, as it applies `xbits` and thresholds, in a
//! bounded [`HostTags`] table (a tag for a new host when the table is full is dropped and counted).

use std::collections::HashMap;
use std::net::IpAddr;

/// Packets a tag lasts without a count, and the most a count of packets may say (Suricata's `DETECT_TAG_MAX_PKTS`).
pub const DEFAULT_PACKETS: u32 = 256;
/// Tags one flow or host holds at most (Suricata's `DETECT_TAG_MAX_TAGS`).
pub const MAX_TAGS: usize = 50;
/// How often a rule's repeated match renews its tag (Suricata's `DETECT_TAG_MATCH_LIMIT`): later matches leave it
/// running down, so a flood of matches cannot keep a tag alive forever.
pub const MATCH_LIMIT: u32 = 10;
/// Hosts the host table holds by default.
pub const DEFAULT_HOSTS: usize = 65_536;
/// A host tag not refreshed by a packet for this long (seconds of capture time) may be evicted to make room
/// (Suricata's `TAG_MAX_LAST_TIME_SEEN`).
pub const IDLE_SECS: u64 = 600;

/// Which packets a tag covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagScope {
    /// The alerting packet's flow.
    Session,
    /// Every packet from or to one address of the alerting packet: its source or its destination.
    Host(HostSide),
}

/// Which address of the alerting packet a host tag follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostSide {
    Src,
    Dst,
}

/// What a tag's count counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagMetric {
    Packets,
    /// Whole seconds of capture time since the alert.
    Seconds,
    /// Bytes of the packets (as captured).
    Bytes,
}

/// One `tag` option of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tag {
    pub scope: TagScope,
    pub count: u32,
    pub metric: TagMetric,
}

impl Tag {
    /// Parses the value of `tag:`: Suricata's `session|host[, count, packets|seconds|bytes[, src|dst]]`, and Snort
    /// 3's `session|host_src|host_dst[, packets N|seconds N|bytes N]` (one metric; Snort 3 rules in the community
    /// set write it so). Case-insensitive, spaces around commas allowed.
    pub fn parse(v: &str) -> Result<Tag, String> {
        let parts: Vec<&str> = v.split(',').map(str::trim).collect();
        let bad = || format!("tag: invalid value `{}`", crate::rule::trunc(v));
        let scope_word = parts
            .first()
            .map(|s| s.to_ascii_lowercase())
            .unwrap_or_default();
        let (scope, snort3_side) = match scope_word.as_str() {
            "session" => (TagScope::Session, None),
            "host" => (TagScope::Host(HostSide::Dst), None),
            "host_src" => (TagScope::Host(HostSide::Src), Some(())),
            "host_dst" => (TagScope::Host(HostSide::Dst), Some(())),
            _ => {
                return Err(format!(
                    "tag: the scope must be session or host, not `{}`",
                    crate::rule::trunc(parts.first().copied().unwrap_or(""))
                ));
            }
        };
        let mut tag = Tag {
            scope,
            count: DEFAULT_PACKETS,
            metric: TagMetric::Packets,
        };
        let metric = |m: &str| match m.to_ascii_lowercase().as_str() {
            "packets" => Some(TagMetric::Packets),
            "seconds" => Some(TagMetric::Seconds),
            "bytes" => Some(TagMetric::Bytes),
            _ => None,
        };
        match parts.len() {
            1 => {}
            // Snort 3: `session, packets 5`.
            2 => {
                let mut w = parts[1].split_whitespace();
                let (Some(m), Some(n), None) = (w.next().and_then(metric), w.next(), w.next())
                else {
                    return Err(bad());
                };
                tag.metric = m;
                tag.count = n.parse().map_err(|_| bad())?;
            }
            3 | 4 if snort3_side.is_none() => {
                tag.count = parts[1].parse().map_err(|_| bad())?;
                tag.metric = metric(parts[2]).ok_or_else(bad)?;
                if let Some(side) = parts.get(3) {
                    let side = match side.to_ascii_lowercase().as_str() {
                        "src" => HostSide::Src,
                        "dst" => HostSide::Dst,
                        _ => return Err(bad()),
                    };
                    // Suricata warns and ignores a direction on a session tag.
                    if let TagScope::Host(s) = &mut tag.scope {
                        *s = side;
                    }
                }
            }
            _ => return Err(bad()),
        }
        if tag.metric == TagMetric::Packets {
            tag.count = tag.count.min(DEFAULT_PACKETS);
        }
        Ok(tag)
    }
}

/// One installed tag and what has counted towards it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    gid: u32,
    sid: u32,
    metric: TagMetric,
    count: u32,
    packets: u32,
    bytes: u64,
    first_s: u64,
    last_s: u64,
    /// The alerting packet has been counted (it is not logged).
    skipped_first: bool,
    /// Matches of the rule since the tag was installed.
    matches: u32,
}

impl Entry {
    /// Counts a packet; returns `None` when the tag has ended, else whether the packet is a tagged one.
    fn on_packet(&mut self, ts_s: u64, len: u32) -> Option<bool> {
        self.last_s = ts_s;
        match self.metric {
            TagMetric::Packets => self.packets = self.packets.saturating_add(1),
            TagMetric::Bytes => self.bytes = self.bytes.saturating_add(u64::from(len)),
            TagMetric::Seconds => {}
        }
        if !self.skipped_first {
            self.skipped_first = true;
            return Some(false);
        }
        let ended = match self.metric {
            TagMetric::Packets => self.packets > self.count,
            TagMetric::Bytes => self.bytes > u64::from(self.count),
            TagMetric::Seconds => self.last_s.saturating_sub(self.first_s) > u64::from(self.count),
        };
        (!ended).then_some(true)
    }
}

/// The tags of one flow or one host (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagList {
    entries: Vec<Entry>,
    /// An alert of a rule whose alerts may not be reported ([`filtered`]) matched in this flow: its tags are decided
    /// where alerts meet in input order, so the flow's packets go there as candidates.
    deferred: bool,
}

/// Whether a rule's alerts may be dropped after its match (a threshold, an xbits condition, a dataset operation on a
/// set some rule writes: decided where alerts meet in input order), so its session tags are decided there too, where
/// it is known whether the alert that sets them is reported.
pub fn filtered(rule: &crate::Rule) -> bool {
    rule.threshold.is_some()
        || rule.xbits.iter().any(|x| x.op.is_condition())
        || rule.deferred_datasets().next().is_some()
}

/// What [`TagList::add`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// A new tag.
    Installed,
    /// The rule's tag was running: renewed, or left as it was past [`MATCH_LIMIT`].
    Renewed,
    /// The list already holds [`MAX_TAGS`] tags: not installed.
    Full,
}

impl TagList {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Tags running.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Marks the flow as having a tag decided where alerts meet (see [`filtered`]).
    pub fn defer(&mut self) {
        self.deferred = true;
    }

    /// Whether a tag of the flow is decided where alerts meet.
    pub fn deferred(&self) -> bool {
        self.deferred
    }

    /// Installs the tag of rule `(gid, sid)` at capture time `ts_s` (seconds), or renews it when it runs.
    pub fn add(&mut self, gid: u32, sid: u32, tag: &Tag, ts_s: u64) -> Added {
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.gid == gid && e.sid == sid)
        {
            e.matches = e.matches.saturating_add(1);
            if e.matches < MATCH_LIMIT {
                e.first_s = ts_s;
                e.last_s = ts_s;
                e.packets = 0;
                e.bytes = 0;
            }
            return Added::Renewed;
        }
        if self.entries.len() >= MAX_TAGS {
            return Added::Full;
        }
        self.entries.push(Entry {
            gid,
            sid,
            metric: tag.metric,
            count: tag.count,
            packets: 0,
            bytes: 0,
            first_s: ts_s,
            last_s: ts_s,
            skipped_first: false,
            matches: 0,
        });
        Added::Installed
    }

    /// Counts a packet of capture time `ts_s` (seconds) and `len` bytes towards every tag, ending those it goes
    /// beyond; returns whether the packet is a tagged one.
    pub fn on_packet(&mut self, ts_s: u64, len: u32) -> bool {
        let mut tagged = false;
        self.entries.retain_mut(|e| match e.on_packet(ts_s, len) {
            Some(t) => {
                tagged |= t;
                true
            }
            None => false,
        });
        tagged
    }

    /// The latest capture time (seconds) a packet counted towards any tag, or installed one.
    fn last_s(&self) -> u64 {
        self.entries.iter().map(|e| e.last_s).max().unwrap_or(0)
    }
}

/// Counters of a [`HostTags`] table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostTagStats {
    /// Tags installed on hosts.
    pub installed: u64,
    /// Tags not installed: the table was full of hosts with running tags, or the host held [`MAX_TAGS`].
    pub dropped: u64,
    /// Hosts evicted after [`IDLE_SECS`] without a packet to make room.
    pub evicted: u64,
}

/// The host tags of a run, one [`TagList`] per address, at most `capacity` hosts (see the module documentation).
#[derive(Debug)]
pub struct HostTags {
    hosts: HashMap<IpAddr, TagList>,
    capacity: usize,
    stats: HostTagStats,
}

impl Default for HostTags {
    fn default() -> Self {
        HostTags::with_capacity(DEFAULT_HOSTS)
    }
}

impl HostTags {
    /// A table of at most `capacity` hosts (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        HostTags {
            hosts: HashMap::new(),
            capacity: capacity.max(1),
            stats: HostTagStats::default(),
        }
    }

    pub fn stats(&self) -> HostTagStats {
        self.stats
    }

    /// Hosts with running tags.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Whether no host has a tag (then no packet needs looking up).
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Installs rule `(gid, sid)`'s host tag on `host` at capture time `ts_s` (seconds). When the table is full,
    /// hosts idle for [`IDLE_SECS`] make room; failing that the tag is dropped and counted.
    pub fn add(&mut self, host: IpAddr, gid: u32, sid: u32, tag: &Tag, ts_s: u64) {
        if !self.hosts.contains_key(&host) && self.hosts.len() >= self.capacity {
            let before = self.hosts.len();
            self.hosts
                .retain(|_, l| ts_s.saturating_sub(l.last_s()) <= IDLE_SECS);
            self.stats.evicted += (before - self.hosts.len()) as u64;
            if self.hosts.len() >= self.capacity {
                self.stats.dropped += 1;
                return;
            }
        }
        match self.hosts.entry(host).or_default().add(gid, sid, tag, ts_s) {
            Added::Installed => self.stats.installed += 1,
            Added::Renewed => {}
            Added::Full => self.stats.dropped += 1,
        }
    }

    /// Counts a packet from `src` to `dst` towards the tags of both hosts (the source's first, as Suricata does);
    /// returns whether it is a tagged packet. A host whose last tag ended leaves the table.
    pub fn on_packet(&mut self, src: IpAddr, dst: IpAddr, ts_s: u64, len: u32) -> bool {
        if self.hosts.is_empty() {
            return false;
        }
        let mut tagged = false;
        for host in [src, dst] {
            if let Some(list) = self.hosts.get_mut(&host) {
                tagged |= list.on_packet(ts_s, len);
                if list.is_empty() {
                    self.hosts.remove(&host);
                }
            }
        }
        tagged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Tag {
        Tag::parse(v).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    #[test]
    fn suricata_forms_and_defaults() {
        assert_eq!(
            parse("session"),
            Tag {
                scope: TagScope::Session,
                count: 256,
                metric: TagMetric::Packets
            }
        );
        assert_eq!(parse("host").scope, TagScope::Host(HostSide::Dst));
        assert_eq!(
            parse("host, 200, bytes, src"),
            Tag {
                scope: TagScope::Host(HostSide::Src),
                count: 200,
                metric: TagMetric::Bytes
            }
        );
        assert_eq!(
            parse("Session,300,Seconds"),
            Tag {
                scope: TagScope::Session,
                count: 300,
                metric: TagMetric::Seconds
            }
        );
        assert_eq!(
            parse("host,3600,seconds,dst").scope,
            TagScope::Host(HostSide::Dst)
        );
        // A count of packets is capped as Suricata caps it; other metrics are not.
        assert_eq!(parse("session,1000,packets").count, 256);
        assert_eq!(parse("session,1000,bytes").count, 1000);
        // A direction on a session tag is ignored (Suricata warns).
        assert_eq!(parse("session,5,packets,src").scope, TagScope::Session);
    }

    #[test]
    fn snort3_form() {
        assert_eq!(
            parse("session,packets 5"),
            Tag {
                scope: TagScope::Session,
                count: 5,
                metric: TagMetric::Packets
            }
        );
        assert_eq!(
            parse("host_src, seconds 60"),
            Tag {
                scope: TagScope::Host(HostSide::Src),
                count: 60,
                metric: TagMetric::Seconds
            }
        );
    }

    #[test]
    fn malformed_values_are_errors() {
        for v in [
            "",
            "flow",
            "session,5",
            "session,x,packets",
            "session,5,frames",
            "host,5,packets,both",
            "session,-1,packets",
            "session,99999999999,packets",
            "session,5,packets,src,extra",
            "host_src,5,packets",
            "session,packets",
            "session,packets 5 6",
        ] {
            assert!(Tag::parse(v).is_err(), "{v:?}");
        }
    }

    #[test]
    fn the_alerting_packet_counts_but_is_not_tagged() {
        let mut l = TagList::default();
        l.add(1, 9, &parse("session,3,packets"), 10);
        // The alerting packet: the first of the three.
        assert!(!l.on_packet(10, 60));
        assert!(l.on_packet(10, 60));
        assert!(l.on_packet(10, 60));
        // The fourth goes beyond the count: the tag ends.
        assert!(!l.on_packet(10, 60));
        assert!(l.is_empty());
        assert!(!l.on_packet(10, 60));
    }

    #[test]
    fn bytes_and_seconds_end_their_tags() {
        let mut l = TagList::default();
        l.add(1, 1, &parse("session,150,bytes"), 0);
        assert!(!l.on_packet(0, 60));
        assert!(l.on_packet(0, 60));
        assert!(!l.on_packet(0, 60), "180 bytes > 150");
        assert!(l.is_empty());
        l.add(1, 2, &parse("session,2,seconds"), 100);
        assert!(!l.on_packet(100, 60));
        assert!(l.on_packet(101, 60));
        assert!(l.on_packet(102, 60));
        assert!(!l.on_packet(103, 60), "3 s > 2 s");
        assert!(l.is_empty());
    }

    #[test]
    fn a_rule_matching_again_renews_its_tag_a_bounded_number_of_times() {
        let mut l = TagList::default();
        let t = parse("session,2,packets");
        assert_eq!(l.add(1, 5, &t, 0), Added::Installed);
        assert!(!l.on_packet(0, 1));
        assert!(l.on_packet(0, 1));
        // Renewed: the counters restart (the renewing packet is counted and, the first being past, tagged).
        assert_eq!(l.add(1, 5, &t, 0), Added::Renewed);
        assert!(l.on_packet(0, 1));
        assert!(l.on_packet(0, 1));
        assert!(!l.on_packet(0, 1));
        // Past the match limit a match no longer restarts the counters.
        let mut l = TagList::default();
        l.add(1, 5, &t, 0);
        for _ in 0..MATCH_LIMIT {
            l.add(1, 5, &t, 0);
        }
        assert!(!l.on_packet(0, 1));
        assert!(l.on_packet(0, 1));
        l.add(1, 5, &t, 0);
        assert!(!l.on_packet(0, 1), "not renewed: ended");
    }

    #[test]
    fn a_list_holds_a_bounded_number_of_tags() {
        let mut l = TagList::default();
        let t = parse("session");
        for sid in 0..MAX_TAGS as u32 {
            assert_eq!(l.add(1, sid, &t, 0), Added::Installed);
        }
        assert_eq!(l.add(1, 999, &t, 0), Added::Full);
        assert_eq!(l.len(), MAX_TAGS);
    }

    #[test]
    fn host_tags_cover_either_side_and_count_drops_when_full() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let mut h = HostTags::with_capacity(1);
        h.add(b, 1, 1, &parse("host,3,packets,dst"), 0);
        assert!(!h.on_packet(a, b, 0, 60), "the alerting packet");
        assert!(h.on_packet(b, a, 0, 60), "from the host");
        assert!(h.on_packet(c, b, 0, 60), "to the host, another flow");
        assert!(!h.on_packet(a, c, 0, 60), "neither side tagged");
        assert!(!h.on_packet(b, c, 0, 60), "past the count");
        assert!(h.is_empty());
        // Full of a running tag: a new host's tag is dropped and counted.
        h.add(a, 1, 1, &parse("host"), 0);
        h.add(c, 1, 1, &parse("host"), 10);
        assert_eq!(h.stats().dropped, 1);
        assert_eq!(h.hosts(), 1);
        // Once the running host is idle long enough it makes room.
        h.add(c, 1, 1, &parse("host"), 10 + IDLE_SECS + 1);
        assert_eq!(h.stats().evicted, 1);
        assert_eq!(h.stats().installed, 3);
        assert!(!h.on_packet(c, b, 10 + IDLE_SECS + 1, 60));
        assert!(h.on_packet(c, b, 10 + IDLE_SECS + 1, 60));
    }
}
