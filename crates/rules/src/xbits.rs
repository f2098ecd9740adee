//! `xbits`: named bits kept per host or per address pair, across flows, as Suricata 8 defines them.
//!
//! `xbits:set|unset|toggle|isset|isnotset,NAME,track ip_src|ip_dst|ip_pair[,expire SECONDS]` and `xbits:noalert`.
//! `track ip_src` and `ip_dst` name the host whose bit is read or written: the packet's source or destination
//! (Suricata's host bits, one name space for both: a bit set with `ip_dst` on a request is read with `ip_src` on the
//! response); `ip_pair` names the two addresses together, either way round (Suricata's IP-pair bits, a name space of
//! its own). `set` and `toggle` give the bit a lifetime of `expire` seconds of *capture time* (default
//! [`DEFAULT_EXPIRE`]; `0` is refused as in Suricata); an expired bit is unset. `isset`/`isnotset` are conditions
//! checked before the rule's match counts, `set`/`unset`/`toggle` actions done after it. Suricata 8's `track tx`
//! (bits per application transaction) is not supported: such a rule is skipped as `xbits:track tx`.
//!
//! The state crosses flows, so, as for `threshold` (see [`crate::threshold`]), it does not live in a worker: the
//! engine applies [`XbitTable`] where alerts come together in input order. A rule with xbits reports its matches
//! there (a `noalert` one silently), where its conditions are checked against the table and its actions applied, in
//! the order of the input. That order is the one a single-threaded run sees; where flows on different hosts
//! interleave in time it is also the order Suricata's threads would see only approximately ("due to subtle timing
//! issues between threads the order of sets and checks can be slightly unpredictable", its documentation says).
//!
//! The table is bounded ([`XbitTable::with_capacity`]): when full, expired bits are dropped first; if none has
//! expired, the new bit is not stored and the drop is counted in [`XbitStats::table_full`].

use std::collections::HashMap;
use std::net::IpAddr;

/// Lifetime of a bit set without `expire`, in seconds (Suricata's default).
pub const DEFAULT_EXPIRE: u32 = 30;
/// Longest name accepted (Suricata copies names into a 256-byte buffer).
pub const MAX_NAME: usize = 255;
/// Default most bits in an [`XbitTable`] (about 64 bytes each).
pub const DEFAULT_CAPACITY: usize = 1 << 16;

/// What an `xbits` option does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XbitOp {
    Set,
    Unset,
    Toggle,
    IsSet,
    IsNotSet,
}

impl XbitOp {
    /// Whether this is a condition (checked before the match counts) rather than an action (done after).
    pub fn is_condition(self) -> bool {
        matches!(self, XbitOp::IsSet | XbitOp::IsNotSet)
    }
}

/// Whose bit it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XbitTrack {
    /// The packet's source host.
    IpSrc,
    /// The packet's destination host.
    IpDst,
    /// The two addresses together, either way round.
    IpPair,
}

impl XbitTrack {
    /// Whether bits of this track live in the host name space (`ip_src`, `ip_dst`) rather than the pair one.
    pub fn is_host(self) -> bool {
        !matches!(self, XbitTrack::IpPair)
    }
}

/// One `xbits` option of a rule; `id` numbers the name within its name space (host or pair) at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Xbit {
    pub op: XbitOp,
    pub id: u32,
    pub track: XbitTrack,
    /// Seconds a `set` or `toggle` keeps the bit.
    pub expire: u32,
}

/// An `xbits` value as written, before its name is numbered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XbitSpec {
    /// `xbits:noalert`.
    NoAlert,
    Bit {
        op: XbitOp,
        name: String,
        track: XbitTrack,
        expire: u32,
    },
}

/// Why an `xbits` value was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XbitError {
    /// Malformed (the rule is an error).
    Invalid(String),
    /// Valid in Suricata but outside what is supported (the rule is skipped under this reason).
    Unsupported(String),
}

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

/// Lifetime of a bit `hostbits` sets, in seconds (Suricata's, fixed: `hostbits` takes no `expire`).
pub const HOSTBITS_EXPIRE: u32 = 300;

/// The command and bit name that begin an `xbits` or `hostbits` value (`<set|unset|toggle|isset|isnotset>,<name>`);
/// `None` for `noalert`, which takes no name. `bad` words the keyword's errors.
fn command_and_name<'v>(
    parts: &mut impl Iterator<Item = &'v str>,
    bad: &impl Fn(String) -> XbitError,
) -> Result<Option<(XbitOp, &'v str)>, XbitError> {
    let cmd = parts.next().unwrap_or("");
    let op = match cmd {
        "noalert" => {
            return match parts.next() {
                None => Ok(None),
                Some(_) => Err(bad("noalert takes no name".into())),
            };
        }
        "set" => XbitOp::Set,
        "unset" => XbitOp::Unset,
        "toggle" => XbitOp::Toggle,
        "isset" => XbitOp::IsSet,
        "isnotset" => XbitOp::IsNotSet,
        other => return Err(bad(format!("unknown command `{}`", short(other)))),
    };
    let name = parts.next().unwrap_or("");
    if name.is_empty() {
        return Err(bad(format!("{cmd} needs a name")));
    }
    if name.len() > MAX_NAME || name.contains(char::is_whitespace) {
        return Err(bad(format!("invalid name `{}`", short(name))));
    }
    Ok(Some((op, name)))
}

impl XbitSpec {
    /// Parses the value of `hostbits`: `<set|unset|toggle|isset|isnotset>,<name>[,src|dst]` (the packet's source
    /// host when no direction is given, as Suricata) or `noalert`. Suricata refuses `both`, which it never
    /// implemented; so does this.
    pub fn parse_hostbits(value: &str) -> Result<XbitSpec, XbitError> {
        let bad = |m: String| XbitError::Invalid(format!("hostbits: {m}"));
        let mut parts = value.split(',').map(str::trim);
        let Some((op, name)) = command_and_name(&mut parts, &bad)? else {
            return Ok(XbitSpec::NoAlert);
        };
        let track = match parts.next() {
            None | Some("src") => XbitTrack::IpSrc,
            Some("dst") => XbitTrack::IpDst,
            Some("both") => return Err(bad("direction both is not implemented".into())),
            Some(d) => return Err(bad(format!("unknown direction `{}`", short(d)))),
        };
        if let Some(extra) = parts.next() {
            return Err(bad(format!("unexpected `{}`", short(extra))));
        }
        Ok(XbitSpec::Bit {
            op,
            name: name.to_string(),
            track,
            expire: HOSTBITS_EXPIRE,
        })
    }

    /// Parses the value of `xbits`.
    pub fn parse(value: &str) -> Result<XbitSpec, XbitError> {
        let bad = |m: String| XbitError::Invalid(format!("xbits: {m}"));
        let mut parts = value.split(',').map(str::trim);
        let Some((op, name)) = command_and_name(&mut parts, &bad)? else {
            return Ok(XbitSpec::NoAlert);
        };
        let (mut track, mut expire) = (None, None);
        for part in parts {
            let (k, v) = part
                .split_once(char::is_whitespace)
                .map(|(k, v)| (k, v.trim()))
                .ok_or_else(|| bad(format!("`{}` needs a value", short(part))))?;
            match k {
                "track" if track.is_none() => {
                    track = Some(match v {
                        "ip_src" => XbitTrack::IpSrc,
                        "ip_dst" => XbitTrack::IpDst,
                        "ip_pair" => XbitTrack::IpPair,
                        "tx" => return Err(XbitError::Unsupported("xbits:track tx".into())),
                        other => return Err(bad(format!("unknown track `{}`", short(other)))),
                    });
                }
                "expire" if expire.is_none() => {
                    let n: u32 = v
                        .parse()
                        .map_err(|_| bad(format!("invalid expire `{}`", short(v))))?;
                    if n == 0 {
                        return Err(bad("expire must be bigger than 0".into()));
                    }
                    expire = Some(n);
                }
                "track" | "expire" => return Err(bad(format!("`{k}` given twice"))),
                other => return Err(bad(format!("unknown option `{}`", short(other)))),
            }
        }
        let track = track.ok_or_else(|| bad("`track ip_src|ip_dst|ip_pair` needed".into()))?;
        Ok(XbitSpec::Bit {
            op,
            name: name.to_string(),
            track,
            expire: expire.unwrap_or(DEFAULT_EXPIRE),
        })
    }
}

/// Whose bits an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Host(IpAddr),
    /// The pair, lower address first.
    Pair(IpAddr, IpAddr),
}

impl Key {
    fn of(track: XbitTrack, src: IpAddr, dst: IpAddr) -> Key {
        match track {
            XbitTrack::IpSrc => Key::Host(src),
            XbitTrack::IpDst => Key::Host(dst),
            XbitTrack::IpPair => Key::Pair(src.min(dst), src.max(dst)),
        }
    }
}

/// Counters of an [`XbitTable`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XbitStats {
    /// Bits set (by `set` or `toggle`).
    pub set: u64,
    /// Bits not stored because the table was full of live bits.
    pub table_full: u64,
}

/// The bits of every host and pair, bounded (see the module documentation).
#[derive(Debug)]
pub struct XbitTable {
    /// (name id, whose) → when the bit expires, in capture-time nanoseconds.
    bits: HashMap<(u32, Key), u64>,
    capacity: usize,
    stats: XbitStats,
}

impl Default for XbitTable {
    fn default() -> Self {
        XbitTable::with_capacity(DEFAULT_CAPACITY)
    }
}

impl XbitTable {
    /// A table holding at most `capacity` bits (at least one).
    pub fn with_capacity(capacity: usize) -> XbitTable {
        XbitTable {
            bits: HashMap::new(),
            capacity: capacity.max(1),
            stats: XbitStats::default(),
        }
    }

    pub fn stats(&self) -> XbitStats {
        self.stats
    }

    /// Bits held now (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    fn is_set(&self, k: (u32, Key), now_ns: u64) -> bool {
        self.bits.get(&k).is_some_and(|&until| now_ns < until)
    }

    fn set(&mut self, k: (u32, Key), now_ns: u64, expire: u32) {
        let until = now_ns.saturating_add(u64::from(expire) * 1_000_000_000);
        if self.bits.len() >= self.capacity && !self.bits.contains_key(&k) {
            self.bits.retain(|_, &mut u| now_ns < u);
            if self.bits.len() >= self.capacity {
                self.stats.table_full += 1;
                return;
            }
        }
        self.stats.set += 1;
        self.bits.insert(k, until);
    }

    /// Whether every condition (`isset`, `isnotset`) of `bits` holds for a packet from `src` to `dst` at `now_ns`.
    pub fn conditions_hold(&self, bits: &[Xbit], src: IpAddr, dst: IpAddr, now_ns: u64) -> bool {
        bits.iter().all(|b| {
            let k = (b.id, Key::of(b.track, src, dst));
            match b.op {
                XbitOp::IsSet => self.is_set(k, now_ns),
                XbitOp::IsNotSet => !self.is_set(k, now_ns),
                _ => true,
            }
        })
    }

    /// Does the actions (`set`, `unset`, `toggle`) of `bits`, in order, for a packet from `src` to `dst`.
    pub fn apply(&mut self, bits: &[Xbit], src: IpAddr, dst: IpAddr, now_ns: u64) {
        for b in bits {
            let k = (b.id, Key::of(b.track, src, dst));
            match b.op {
                XbitOp::Set => self.set(k, now_ns, b.expire),
                XbitOp::Unset => {
                    self.bits.remove(&k);
                }
                XbitOp::Toggle => {
                    if self.is_set(k, now_ns) {
                        self.bits.remove(&k);
                    } else {
                        self.set(k, now_ns, b.expire);
                    }
                }
                XbitOp::IsSet | XbitOp::IsNotSet => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit(v: &str) -> (XbitOp, String, XbitTrack, u32) {
        match XbitSpec::parse(v).unwrap() {
            XbitSpec::Bit {
                op,
                name,
                track,
                expire,
            } => (op, name, track, expire),
            XbitSpec::NoAlert => panic!("noalert"),
        }
    }

    #[test]
    fn parses_as_suricata() {
        assert_eq!(
            bit("set,abc,track ip_pair"),
            (XbitOp::Set, "abc".into(), XbitTrack::IpPair, DEFAULT_EXPIRE)
        );
        assert_eq!(
            bit("set, ET.PROPFIND, track ip_src, expire 360"),
            (XbitOp::Set, "ET.PROPFIND".into(), XbitTrack::IpSrc, 360)
        );
        assert_eq!(bit("isset,ET.IBMDRM1,track ip_dst").0, XbitOp::IsSet);
        assert_eq!(bit("toggle,a,track ip_dst").0, XbitOp::Toggle);
        assert_eq!(bit("unset,a,track ip_src").0, XbitOp::Unset);
        assert_eq!(bit("isnotset,a,track ip_src").0, XbitOp::IsNotSet);
        assert_eq!(XbitSpec::parse("noalert"), Ok(XbitSpec::NoAlert));
        assert_eq!(
            XbitSpec::parse("set,a,track tx"),
            Err(XbitError::Unsupported("xbits:track tx".into()))
        );
        for bad in [
            "",
            "alert",
            "n0alert",
            "noalert,a",
            "!set,a,track ip_dst",
            "set,abc,track nonsense, expire 3600",
            "set,abc,track ip_source, expire 3600",
            "set,abc,track ip_src, expire -1",
            "set,abc,track ip_src, expire 0",
            "set,abc,track ip_src, expire 1, expire 2",
            "set,abc",
            "set,,track ip_src",
            "set,a b,track ip_src",
            "set,a,track ip_src,color red",
            "set,a,track",
        ] {
            assert!(
                matches!(XbitSpec::parse(bad), Err(XbitError::Invalid(_))),
                "{bad:?}"
            );
        }
        let long = format!("set,{},track ip_src", "n".repeat(MAX_NAME + 1));
        assert!(XbitSpec::parse(&long).is_err());
    }

    fn x(op: XbitOp, id: u32, track: XbitTrack, expire: u32) -> Xbit {
        Xbit {
            op,
            id,
            track,
            expire,
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn host_bits_follow_the_host_and_expire_in_capture_time() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let mut t = XbitTable::default();
        // Set on the request's destination, read as the response's source.
        t.apply(&[x(XbitOp::Set, 0, XbitTrack::IpDst, 10)], a, b, 0);
        let isset_src = [x(XbitOp::IsSet, 0, XbitTrack::IpSrc, 30)];
        assert!(t.conditions_hold(&isset_src, b, a, 5 * S));
        assert!(t.conditions_hold(&isset_src, b, c, 5 * S));
        assert!(!t.conditions_hold(&isset_src, a, b, 5 * S));
        // Expired at 10 s.
        assert!(!t.conditions_hold(&isset_src, b, a, 10 * S));
        let isnotset = [x(XbitOp::IsNotSet, 0, XbitTrack::IpSrc, 30)];
        assert!(t.conditions_hold(&isnotset, b, a, 11 * S));
        // Another name is another bit.
        assert!(!t.conditions_hold(&[x(XbitOp::IsSet, 1, XbitTrack::IpSrc, 30)], b, a, S));
        // Toggle flips; unset clears.
        t.apply(&[x(XbitOp::Toggle, 0, XbitTrack::IpSrc, 30)], b, a, 20 * S);
        assert!(t.conditions_hold(&isset_src, b, a, 21 * S));
        t.apply(&[x(XbitOp::Toggle, 0, XbitTrack::IpSrc, 30)], b, a, 22 * S);
        assert!(!t.conditions_hold(&isset_src, b, a, 23 * S));
        t.apply(&[x(XbitOp::Set, 0, XbitTrack::IpSrc, 30)], b, a, 24 * S);
        t.apply(&[x(XbitOp::Unset, 0, XbitTrack::IpDst, 30)], a, b, 25 * S);
        assert!(!t.conditions_hold(&isset_src, b, a, 26 * S));
    }

    #[test]
    fn pair_bits_hold_either_way_round_and_not_across_families() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a6: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let mut t = XbitTable::default();
        t.apply(&[x(XbitOp::Set, 0, XbitTrack::IpPair, 60)], a, b, 0);
        let isset = [x(XbitOp::IsSet, 0, XbitTrack::IpPair, 60)];
        assert!(t.conditions_hold(&isset, a, b, S));
        assert!(t.conditions_hold(&isset, b, a, S));
        assert!(!t.conditions_hold(&isset, a6, b, S));
        // The host name space is another one.
        assert!(!t.conditions_hold(&[x(XbitOp::IsSet, 0, XbitTrack::IpSrc, 60)], a, b, S));
    }

    #[test]
    fn a_full_table_drops_expired_bits_first_then_counts() {
        let mut t = XbitTable::with_capacity(2);
        let h = |i: u8| IpAddr::from([10, 0, 0, i]);
        let set = |e| [x(XbitOp::Set, 0, XbitTrack::IpSrc, e)];
        t.apply(&set(1), h(1), h(9), 0);
        t.apply(&set(100), h(2), h(9), 0);
        // Full: h(1)'s bit has expired at 2 s, so it makes room.
        t.apply(&set(100), h(3), h(9), 2 * S);
        assert_eq!(t.len(), 2);
        assert_eq!(t.stats().table_full, 0);
        // Full of live bits: the new one is not stored, and counted.
        t.apply(&set(100), h(4), h(9), 3 * S);
        assert_eq!(t.len(), 2);
        assert_eq!(t.stats().table_full, 1);
        let isset = [x(XbitOp::IsSet, 0, XbitTrack::IpSrc, 1)];
        assert!(!t.conditions_hold(&isset, h(4), h(9), 3 * S));
        assert!(t.conditions_hold(&isset, h(3), h(9), 3 * S));
        // Updating a bit already held needs no room.
        t.apply(&set(100), h(3), h(9), 4 * S);
        assert_eq!(t.stats().table_full, 1);
    }

    #[test]
    fn hostbits_values() {
        let bit = |op, name: &str, track| XbitSpec::Bit {
            op,
            name: name.to_string(),
            track,
            expire: HOSTBITS_EXPIRE,
        };
        assert_eq!(
            XbitSpec::parse_hostbits("set,abc"),
            Ok(bit(XbitOp::Set, "abc", XbitTrack::IpSrc))
        );
        assert_eq!(
            XbitSpec::parse_hostbits("isnotset, abc , dst "),
            Ok(bit(XbitOp::IsNotSet, "abc", XbitTrack::IpDst))
        );
        assert_eq!(
            XbitSpec::parse_hostbits("toggle,abc,src"),
            Ok(bit(XbitOp::Toggle, "abc", XbitTrack::IpSrc))
        );
        assert_eq!(XbitSpec::parse_hostbits("noalert"), Ok(XbitSpec::NoAlert));
        for bad in [
            "",
            "set",
            "!isset,abc,dst",
            "set,abc,both",
            "set,abc,left",
            "noalert,x",
            "set,a b",
            "set,abc,dst,60",
        ] {
            assert!(
                matches!(XbitSpec::parse_hostbits(bad), Err(XbitError::Invalid(_))),
                "{bad}"
            );
        }
    }
}
