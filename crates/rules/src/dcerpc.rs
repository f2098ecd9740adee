//! `dcerpc.iface` and `dcerpc.opnum`: conditions on a DCE/RPC call, as Suricata's DCERPC keywords define them.
//!
//! The engine hands the rules one *call header* per request and per response ([`crate::Buffer::DcerpcHeader`],
//! laid out by [`call_header`]): the interface the call's presentation context was bound to (when the server
//! accepted a bind naming it), its major version, the operation number and whether the first PDU seen of the call
//! was its first fragment. The stub goes separately, as the sticky buffer `dcerpc.stub_data`
//! ([`crate::Buffer::DcerpcStubData`]), in the same transaction: a rule with both matches when both do for one call.
//!
//! * `dcerpc.iface:<uuid>[,<op><version>][,any_frag]` (legacy `dce_iface`): the call's interface is `<uuid>`; with
//!   a version test (`<`, `>`, `=`, `!`) its major version compares so; without `any_frag` only a call whose first
//!   fragment was seen matches (Suricata inspects the first fragment only unless told otherwise). Snort 3's
//!   spelling, `dce_iface:uuid <uuid>[, version <op><version>][, any_frag]`, reads the same.
//! * `dcerpc.opnum:<n>[,<n>|<lo>-<hi>...]` (legacy `dce_opnum`, also quoted as Snort 3 writes it): the request's
//!   operation number is one of them.

/// Length of the call header ([`call_header`]).
pub const HEADER_LEN: usize = 22;

/// The call header the engine hands over for a call: `[known][uuid x16][version BE x2][opnum BE x2][first_frag]`.
pub fn call_header(
    iface: Option<([u8; 16], u16)>,
    opnum: u16,
    first_frag: bool,
) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    if let Some((uuid, version)) = iface {
        h[0] = 1;
        h[1..17].copy_from_slice(&uuid);
        h[17..19].copy_from_slice(&version.to_be_bytes());
    }
    h[19..21].copy_from_slice(&opnum.to_be_bytes());
    h[21] = u8::from(first_frag);
    h
}

/// A version test of `dcerpc.iface`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionCmp {
    Lt,
    Gt,
    Eq,
    Ne,
}

/// One DCE/RPC call condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DceCond {
    Iface {
        uuid: [u8; 16],
        version: Option<(VersionCmp, u16)>,
        any_frag: bool,
    },
    /// Operation numbers, as inclusive ranges.
    Opnum(Vec<(u16, u16)>),
}

fn uuid(s: &str) -> Option<[u8; 16]> {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5 || parts.iter().zip(lens).any(|(p, l)| p.len() != l) {
        return None;
    }
    let hex: String = parts.concat();
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl DceCond {
    /// `dcerpc.iface`'s value.
    pub fn parse_iface(v: &str) -> Result<DceCond, String> {
        let mut parts = v.split(',').map(str::trim);
        let first = parts.next().unwrap_or("");
        let id = first.strip_prefix("uuid ").map_or(first, str::trim);
        let uuid = uuid(id).ok_or_else(|| format!("invalid interface uuid `{id}`"))?;
        let mut version = None;
        let mut any_frag = false;
        for p in parts {
            if p == "any_frag" {
                if any_frag {
                    return Err("any_frag given twice".to_string());
                }
                any_frag = true;
                continue;
            }
            if version.is_some() {
                return Err(format!("unexpected `{p}`"));
            }
            let p = p.strip_prefix("version").map_or(p, str::trim);
            let (cmp, n) = match p.as_bytes().first() {
                Some(b'<') => (VersionCmp::Lt, &p[1..]),
                Some(b'>') => (VersionCmp::Gt, &p[1..]),
                Some(b'=') => (VersionCmp::Eq, &p[1..]),
                Some(b'!') => (VersionCmp::Ne, &p[1..]),
                _ => {
                    return Err(format!(
                        "invalid version test `{p}` (expected <, >, = or ! and a number)"
                    ));
                }
            };
            let n: u16 = n
                .trim()
                .parse()
                .map_err(|_| format!("invalid version `{}`", n.trim()))?;
            // Suricata refuses tests no version can pass.
            if (cmp == VersionCmp::Lt && n == 0) || (cmp == VersionCmp::Gt && n == u16::MAX) {
                return Err(format!("version test `{p}` never matches"));
            }
            version = Some((cmp, n));
        }
        Ok(DceCond::Iface {
            uuid,
            version,
            any_frag,
        })
    }

    /// `dcerpc.opnum`'s value.
    pub fn parse_opnum(v: &str) -> Result<DceCond, String> {
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(v);
        let mut ranges = Vec::new();
        for p in v.split(',').map(str::trim) {
            let num = |s: &str| {
                s.trim()
                    .parse::<u16>()
                    .map_err(|_| format!("invalid opnum `{}`", s.trim()))
            };
            let r = match p.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (num(lo)?, num(hi)?);
                    if lo > hi {
                        return Err(format!("empty opnum range `{p}`"));
                    }
                    (lo, hi)
                }
                None => {
                    let n = num(p)?;
                    (n, n)
                }
            };
            ranges.push(r);
        }
        Ok(DceCond::Opnum(ranges))
    }

    /// Whether a call header ([`call_header`]) satisfies the condition.
    pub fn matches(&self, h: &[u8]) -> bool {
        let Some(h) = h.get(..HEADER_LEN) else {
            return false;
        };
        match self {
            DceCond::Iface {
                uuid,
                version,
                any_frag,
            } => {
                let known = h[0] == 1 && h[1..17] == uuid[..];
                let v = u16::from_be_bytes([h[17], h[18]]);
                let version_ok = version.is_none_or(|(cmp, n)| match cmp {
                    VersionCmp::Lt => v < n,
                    VersionCmp::Gt => v > n,
                    VersionCmp::Eq => v == n,
                    VersionCmp::Ne => v != n,
                });
                known && version_ok && (*any_frag || h[21] == 1)
            }
            DceCond::Opnum(ranges) => {
                let op = u16::from_be_bytes([h[19], h[20]]);
                ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&op))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVCCTL: [u8; 16] = [
        0x36, 0x7a, 0xbb, 0x81, 0x98, 0x44, 0x35, 0xf1, 0xad, 0x32, 0x98, 0xf0, 0x38, 0x00, 0x10,
        0x03,
    ];

    #[test]
    fn iface_with_version_and_fragment_tests() {
        let c = DceCond::parse_iface("367abb81-9844-35f1-ad32-98f038001003").unwrap();
        let first = call_header(Some((SVCCTL, 2)), 15, true);
        let later = call_header(Some((SVCCTL, 2)), 15, false);
        assert!(c.matches(&first));
        assert!(
            !c.matches(&later),
            "only the first fragment without any_frag"
        );
        assert!(
            !c.matches(&call_header(None, 15, true)),
            "an unbound context"
        );
        let any =
            DceCond::parse_iface("367ABB81-9844-35F1-AD32-98F038001003, >1, any_frag").unwrap();
        assert!(any.matches(&later));
        let eq = DceCond::parse_iface("367abb81-9844-35f1-ad32-98f038001003,=3").unwrap();
        assert!(!eq.matches(&first));
        let snort =
            DceCond::parse_iface("uuid 367abb81-9844-35f1-ad32-98f038001003, version >1, any_frag");
        assert_eq!(snort, Ok(any));
        assert!(DceCond::parse_iface("367abb81-9844-35f1-ad32-98f03800100").is_err());
        assert!(DceCond::parse_iface("367abb81-9844-35f1-ad32-98f038001003,<0").is_err());
        assert!(DceCond::parse_iface("367abb81-9844-35f1-ad32-98f038001003,~1").is_err());
        assert!(DceCond::parse_iface("367abb81-9844-35f1-ad32-98f038001003,=1,=2").is_err());
    }

    #[test]
    fn opnum_lists_and_ranges() {
        let c = DceCond::parse_opnum("12-14, 17").unwrap();
        for (op, want) in [(11, false), (12, true), (14, true), (15, false), (17, true)] {
            assert_eq!(c.matches(&call_header(None, op, false)), want, "{op}");
        }
        assert_eq!(DceCond::parse_opnum("\"12-14,17\""), Ok(c.clone()));
        assert!(DceCond::parse_opnum("14-12").is_err());
        assert!(DceCond::parse_opnum("x").is_err());
        assert!(DceCond::parse_opnum("70000").is_err());
        assert!(!c.matches(&[0; 3]), "a short header");
    }
}
