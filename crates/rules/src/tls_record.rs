//! `ssl_state` and `ssl_version`: what the TLS (or SSLv2) records that begin a packet's payload carry.
//!
//! Suricata matches both against its TLS parser's state for the data just parsed: the handshake messages seen in it
//! (`ssl_state`: `client_hello`, `server_hello`, `client_keyx`, `server_keyx`, `unknown`) and the protocol version
//! (`ssl_version`: `sslv2`, `sslv3`, `tls1.0`, `tls1.1`, `tls1.2`, `tls1.3`). Here a rule with either keyword
//! inspects TCP packets (not the stream), and the records are read from the start of the packet's payload, one after
//! another while their headers lie in it: a message counts when its handshake type byte lies in this packet. A packet
//! that starts inside a record (a certificate chain continued from the previous segment) shows no state. The
//! version is the hello's version for a ClientHello or ServerHello, the record's version otherwise; an SSLv2 record
//! (two-byte header with the high bit set) counts as `sslv2` unless its hello names a later version.
//!
//! A list (`client_hello,server_hello` or `client_hello|server_hello`) matches when any entry does; `!name` matches
//! when that state or version is absent (a version test needs a record: without one, `!tls1.0` does not match).
//!
//! Suricata reads the flow's TLS state, so a rule with only these keywords alerts once per transaction and
//! direction (suricata-verify `ssl_version_negated`: 12 alerts over 6 flows); here such a rule alerts on the first
//! packet of each flow direction whose records show the state or version, and not again in that direction (the
//! scanner remembers it as fired there). A rule that also has content still matches per packet.

/// Handshake states, as bits.
pub const CLIENT_HELLO: u8 = 1;
pub const SERVER_HELLO: u8 = 2;
pub const CLIENT_KEYX: u8 = 4;
pub const SERVER_KEYX: u8 = 8;
/// No handshake message known to the keyword was found.
pub const UNKNOWN: u8 = 16;

/// Versions, as bits.
pub const SSLV2: u8 = 1;
pub const SSLV3: u8 = 2;
pub const TLS10: u8 = 4;
pub const TLS11: u8 = 8;
pub const TLS12: u8 = 16;
pub const TLS13: u8 = 32;

/// What the records at the start of a payload show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub states: u8,
    pub versions: u8,
}

/// Which of the two keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsField {
    State,
    Version,
}

/// One `ssl_state` or `ssl_version` condition: any of `want` present, or any of `absent` missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsCond {
    pub field: TlsField,
    pub want: u8,
    pub absent: u8,
}

impl TlsCond {
    /// Parses the keyword's value; `Err` names what is wrong.
    pub fn parse(field: TlsField, v: &str) -> Result<TlsCond, String> {
        let mut c = TlsCond {
            field,
            want: 0,
            absent: 0,
        };
        for part in v.split([',', '|']).map(str::trim) {
            let (neg, name) = match part.strip_prefix('!') {
                Some(n) => (true, n.trim()),
                None => (false, part),
            };
            let bit = match (field, name.to_ascii_lowercase().as_str()) {
                (TlsField::State, "client_hello") => CLIENT_HELLO,
                (TlsField::State, "server_hello") => SERVER_HELLO,
                (TlsField::State, "client_keyx") => CLIENT_KEYX,
                (TlsField::State, "server_keyx") => SERVER_KEYX,
                (TlsField::State, "unknown") => UNKNOWN,
                (TlsField::Version, "sslv2") => SSLV2,
                (TlsField::Version, "sslv3") => SSLV3,
                (TlsField::Version, "tls1.0") => TLS10,
                (TlsField::Version, "tls1.1") => TLS11,
                (TlsField::Version, "tls1.2") => TLS12,
                (TlsField::Version, "tls1.3") => TLS13,
                _ => {
                    return Err(format!(
                        "unknown value `{}`",
                        name.chars().take(32).collect::<String>()
                    ));
                }
            };
            if neg {
                c.absent |= bit;
            } else {
                c.want |= bit;
            }
        }
        if c.want | c.absent == 0 {
            return Err("needs a value".into());
        }
        Ok(c)
    }

    /// Whether the condition holds for what a payload shows.
    pub fn matches(&self, seen: Seen) -> bool {
        let have = match self.field {
            TlsField::State => seen.states,
            TlsField::Version => seen.versions,
        };
        // A negated version needs a version to compare with: a payload without TLS records matches no version test.
        if self.field == TlsField::Version && have == 0 {
            return false;
        }
        have & self.want != 0 || !have & self.absent != 0
    }
}

fn version_bit(major: u8, minor: u8) -> u8 {
    match (major, minor) {
        (0, 2) => SSLV2,
        (3, 0) => SSLV3,
        (3, 1) => TLS10,
        (3, 2) => TLS11,
        (3, 3) => TLS12,
        (3, 4) => TLS13,
        _ => 0,
    }
}

/// Reads the records that begin `p` (bounded by its length; never fails).
pub fn scan(p: &[u8]) -> Seen {
    let mut seen = Seen::default();
    let b = |i: usize| p.get(i).copied();
    match b(0) {
        // TLS record types: change_cipher_spec, alert, handshake, application_data, heartbeat.
        Some(20..=24) => {
            let mut at = 0usize;
            while let (Some(kind), Some(maj), Some(min), Some(h), Some(l)) =
                (b(at), b(at + 1), b(at + 2), b(at + 3), b(at + 4))
            {
                if !(20..=24).contains(&kind) || maj != 3 {
                    break;
                }
                let len = usize::from(h) << 8 | usize::from(l);
                let end = (at + 5).saturating_add(len);
                let mut version = version_bit(maj, min);
                if kind == 22 {
                    let mut q = at + 5;
                    // A message whose type byte lies in the packet counts, even when the rest follows later.
                    while let Some(t) = b(q).filter(|_| q < end) {
                        seen.states |= match t {
                            1 => CLIENT_HELLO,
                            2 => SERVER_HELLO,
                            12 => SERVER_KEYX,
                            16 => CLIENT_KEYX,
                            _ => 0,
                        };
                        if matches!(t, 1 | 2)
                            && let (Some(vmaj), Some(vmin)) = (b(q + 4), b(q + 5))
                            && version_bit(vmaj, vmin) != 0
                        {
                            version = version_bit(vmaj, vmin);
                        }
                        let (Some(a), Some(m), Some(z)) = (b(q + 1), b(q + 2), b(q + 3)) else {
                            break;
                        };
                        let hl = usize::from(a) << 16 | usize::from(m) << 8 | usize::from(z);
                        q = q.saturating_add(4).saturating_add(hl);
                    }
                }
                seen.versions |= version;
                at = end;
            }
        }
        // SSLv2: a two-byte header with the high bit set, then the message type.
        Some(h) if h & 0x80 != 0 => {
            let (version_at, state) = match b(2) {
                Some(1) => (3, CLIENT_HELLO),
                Some(2) => (usize::MAX, CLIENT_KEYX),
                Some(4) => (5, SERVER_HELLO),
                _ => (usize::MAX, 0),
            };
            if state != 0 && p.len() >= 3 {
                seen.states |= state;
                let named = match (b(version_at), b(version_at.saturating_add(1))) {
                    (Some(maj), Some(min)) => version_bit(maj, min),
                    _ => 0,
                };
                seen.versions |= if named == 0 { SSLV2 } else { named };
            }
        }
        _ => {}
    }
    if seen.states & (CLIENT_HELLO | SERVER_HELLO | CLIENT_KEYX | SERVER_KEYX) == 0 {
        seen.states |= UNKNOWN;
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hellos_key_exchanges_and_versions() {
        // A TLS 1.2 ServerHello record followed by a ServerKeyExchange record, in one payload.
        let mut p = vec![22, 3, 3, 0, 6, 2, 0, 0, 2, 3, 3];
        p.extend_from_slice(&[22, 3, 3, 0, 4, 12, 0, 0, 0]);
        let s = scan(&p);
        assert_eq!(s.states, SERVER_HELLO | SERVER_KEYX);
        assert_eq!(s.versions, TLS12);
        // A ClientHello in a TLS 1.0 record naming TLS 1.2.
        let s = scan(&[22, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3]);
        assert_eq!((s.states, s.versions), (CLIENT_HELLO, TLS12));
        // SSLv2 ClientHello, version 0x0002.
        let s = scan(&[0x80, 0x2e, 1, 0, 2, 0, 0x15]);
        assert_eq!((s.states, s.versions), (CLIENT_HELLO, SSLV2));
        // Application data, or the middle of a record: no known state.
        assert_eq!(scan(&[23, 3, 3, 0, 1, 0]).states, UNKNOWN);
        assert_eq!(scan(b"\x30\x82\x01").states, UNKNOWN);
        // Truncated and hostile lengths stay in bounds.
        assert_eq!(scan(&[22, 3, 3, 0xff, 0xff, 1]).states, CLIENT_HELLO);
        assert_eq!(
            scan(&[22, 3, 3, 0, 4, 1, 0xff, 0xff, 0xff]).states,
            CLIENT_HELLO
        );
        assert_eq!(scan(&[]).states, UNKNOWN);
    }

    #[test]
    fn conditions_parse_and_match() {
        let c = TlsCond::parse(TlsField::State, "client_hello|server_hello").unwrap();
        assert!(c.matches(Seen {
            states: SERVER_HELLO,
            versions: 0
        }));
        assert!(!c.matches(Seen {
            states: CLIENT_KEYX,
            versions: 0
        }));
        let c = TlsCond::parse(TlsField::Version, "!sslv2").unwrap();
        assert!(c.matches(Seen {
            states: 0,
            versions: TLS12
        }));
        assert!(!c.matches(Seen {
            states: 0,
            versions: SSLV2
        }));
        assert!(!c.matches(Seen {
            states: UNKNOWN,
            versions: 0
        }));
        assert!(TlsCond::parse(TlsField::State, "client_hellox").is_err());
        assert!(TlsCond::parse(TlsField::Version, "").is_err());
    }
}
