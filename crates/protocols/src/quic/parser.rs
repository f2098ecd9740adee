//! The QUIC parser of one flow: CRYPTO frames of the client's Initials reassembled until the hello is read.

use super::*;

/// CRYPTO stream reassembly for the client's Initial packets: a buffer and the ranges received.
#[derive(Debug, Default)]
pub(super) struct CryptoAsm {
    pub(super) buf: Vec<u8>,
    /// Received ranges, sorted, merged.
    pub(super) have: Vec<(usize, usize)>,
}

impl CryptoAsm {
    pub(super) fn insert(&mut self, off: usize, data: &[u8], cap: usize, stats: &mut ParserStats) {
        let end = off.saturating_add(data.len()).min(cap);
        if off >= end {
            stats.bytes_cut += data.len() as u64;
            return;
        }
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        self.buf[off..end].copy_from_slice(&data[..end - off]);
        stats.bytes_cut += (data.len() - (end - off)) as u64;
        self.have.push((off, end));
        self.have.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.have.len());
        for &(s, e) in &self.have {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.have = merged;
        self.have.truncate(64);
    }

    /// Bytes contiguous from offset 0.
    pub(super) fn contiguous(&self) -> &[u8] {
        match self.have.first() {
            Some(&(0, e)) => self.buf.get(..e).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// The QUIC parser of one flow: decrypts client Initials until the ClientHello (or CHLO) is read.
#[derive(Debug)]
pub struct QuicParser {
    pub(super) cap: usize,
    pub(super) crypto: CryptoAsm,
    /// The client's first DCID and version, which fix the Initial keys.
    pub(super) keys: Option<(u32, InitialKeys)>,
    pub(super) tried: u32,
    pub(super) done: bool,
    pub(super) version: Option<u32>,
    /// Google QUIC framing (CRYPTO is frame type 0x08).
    pub(super) google: bool,
    pub(super) plain: Vec<u8>,
    /// The server's version was reported ([`EventSink::quic_version`]).
    pub(super) server_version_seen: bool,
    /// Cleartext gQUIC `CHLO`s read (each is an event: a client sends another after the server's rejection).
    pub(super) chlos: u32,
    pub(super) stats: ParserStats,
}

impl QuicParser {
    /// A parser for one flow.
    pub fn new(limits: &Limits) -> Self {
        QuicParser {
            cap: limits.quic_crypto_cap,
            crypto: CryptoAsm::default(),
            keys: None,
            tried: 0,
            done: false,
            version: None,
            google: false,
            plain: Vec::new(),
            server_version_seen: false,
            chlos: 0,
            stats: ParserStats::default(),
        }
    }

    pub(super) fn emit(&mut self, ev: QuicEvent, out: &mut dyn EventSink) {
        self.done = true;
        self.crypto = CryptoAsm::default();
        self.plain = Vec::new();
        out.event(AppEvent::Quic(ev));
    }

    /// Handles one client datagram (possibly several coalesced long-header packets).
    pub(super) fn client_datagram(&mut self, d: &[u8], out: &mut dyn EventSink) {
        let Some(&first) = d.first() else { return };
        if first & 0x80 == 0 {
            // gQUIC legacy public header: the CHLO is in cleartext.
            if let Some(v) = d
                .get(9..13)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                && first & 0x09 == 0x09
                && family(v) == Some(Family::GoogleLegacy)
            {
                self.version.get_or_insert(v);
                self.cleartext_chlo(v, d, out);
            }
            return;
        }
        let mut rest = d;
        while !rest.is_empty() && !self.done {
            let Some(v) = rest
                .get(1..5)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            else {
                return;
            };
            self.version.get_or_insert(v);
            if family(v) == Some(Family::GoogleLong) {
                self.cleartext_chlo(v, rest, out);
                return;
            }
            let Some(h) = parse_long_header(rest) else {
                return;
            };
            let end = (h.pn_offset + h.length).min(rest.len());
            let (pkt, next) = rest.split_at(end);
            rest = next;
            if !h.is_initial() {
                continue;
            }
            self.google = family(v) == Some(Family::GoogleIetf);
            self.tried += 1;
            if self.tried > MAX_INITIALS {
                self.done = true;
                self.stats.gave_up += 1;
                return;
            }
            let keys = match &self.keys {
                Some((kv, k)) if *kv == v => k.clone(),
                _ => match initial_keys(v, h.dcid, true) {
                    Some(k) => {
                        self.keys = Some((v, k.clone()));
                        k
                    }
                    None => return,
                },
            };
            let mut plain = std::mem::take(&mut self.plain);
            if decrypt_initial(pkt, &h, &keys, &mut plain).is_none() {
                self.stats.malformed += 1;
                self.plain = plain;
                continue;
            }
            self.frames(&plain);
            self.plain = plain;
            self.try_hello(v, out);
        }
    }

    pub(super) fn cleartext_chlo(&mut self, v: u32, d: &[u8], out: &mut dyn EventSink) {
        self.tried += 1;
        if let Some(chlo) = parse_chlo(d) {
            self.chlos += 1;
            self.emit(
                QuicEvent {
                    version: version_string(v),
                    wire_version: v,
                    cyu: chlo.cyu(v).into_iter().collect(),
                    sni: chlo.sni,
                    ua: chlo.ua,
                    ..QuicEvent::default()
                },
                out,
            );
        } else if self.tried >= MAX_INITIALS {
            self.done = true;
        }
    }

    /// Walks decrypted frames, collecting CRYPTO data; stops at a frame type it cannot skip.
    pub(super) fn frames(&mut self, mut p: &[u8]) {
        while let Some(&ty) = p.first() {
            match ty {
                0x00 | 0x01 => p = &p[1..], // PADDING, PING
                0x02 | 0x03 => {
                    // ACK: largest, delay, range count, first range, ranges, [ECN counts]
                    let mut q = &p[1..];
                    let mut fields = [0u64; 4];
                    for f in fields.iter_mut() {
                        let Some((v, n)) = varint(q) else { return };
                        *f = v;
                        q = &q[n..];
                    }
                    for _ in 0..fields[2].min(256) * 2 {
                        let Some((_, n)) = varint(q) else { return };
                        q = &q[n..];
                    }
                    if ty == 0x03 {
                        for _ in 0..3 {
                            let Some((_, n)) = varint(q) else { return };
                            q = &q[n..];
                        }
                    }
                    p = q;
                }
                // CRYPTO; Google's IETF-style versions (Q050, T050, T051) number it 0x08.
                0x06 | 0x08 if ty == 0x06 || self.google => {
                    let Some((off, n1)) = varint(&p[1..]) else {
                        return;
                    };
                    let Some((len, n2)) = p.get(1 + n1..).and_then(varint) else {
                        return;
                    };
                    let start = 1 + n1 + n2;
                    let Some(data) = usize::try_from(len)
                        .ok()
                        .and_then(|l| p.get(start..start + l))
                    else {
                        return;
                    };
                    let off = usize::try_from(off).unwrap_or(usize::MAX);
                    self.crypto.insert(off, data, self.cap, &mut self.stats);
                    p = &p[start + data.len()..];
                }
                0x1c | 0x1d => return, // CONNECTION_CLOSE
                _ => return,
            }
        }
    }

    pub(super) fn try_hello(&mut self, v: u32, out: &mut dyn EventSink) {
        let c = self.crypto.contiguous();
        if family(v) == Some(Family::GoogleIetf) && google_tag(v).is_some_and(|(k, _)| k == b'Q') {
            // Q050: the crypto stream holds a CHLO, not a TLS ClientHello.
            if c.len() >= 8 && c.starts_with(b"CHLO") {
                let n = usize::from(u16::from_le_bytes([c[4], c[5]]));
                let last = c
                    .get(8 + 8 * n.saturating_sub(1) + 4..8 + 8 * n)
                    .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
                if let Some(last) = last
                    && c.len() >= 8 + 8 * n + last as usize
                    && let Some(chlo) = parse_chlo(c)
                {
                    self.emit(
                        QuicEvent {
                            version: version_string(v),
                            wire_version: v,
                            sni: chlo.sni,
                            ua: chlo.ua,
                            ..QuicEvent::default()
                        },
                        out,
                    );
                }
            }
            return;
        }
        if c.len() < 4 || c[0] != 1 {
            return;
        }
        let len = (usize::from(c[1]) << 16) | (usize::from(c[2]) << 8) | usize::from(c[3]);
        if len + 4 > self.cap {
            self.stats.bytes_cut += len as u64;
            self.done = true;
            return;
        }
        let Some(body) = c.get(4..4 + len) else {
            return;
        };
        match parse_client_hello(body, false) {
            Ok(ch) => {
                let ev = event_from_hello(v, &ch);
                self.emit(ev, out);
            }
            Err(_) => {
                self.stats.malformed += 1;
                self.done = true;
            }
        }
    }
}

impl Parser for QuicParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if dir == Direction::ToClient {
            // The server's first long header (its Initial): the version it answers with, for the rules; with gQUIC
            // Q046 each long header is a transaction of its own (Suricata makes one of each packet it reads).
            if data.first().is_some_and(|&b| b & 0x80 != 0)
                && let Some(v) = data.get(1..5)
            {
                let v = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
                if v != 0 && (!self.server_version_seen || family(v) == Some(Family::GoogleLong)) {
                    self.server_version_seen = true;
                    out.quic_version(false, v);
                }
            }
            return;
        }
        if self.done {
            // After the hello, only another cleartext gQUIC CHLO is read (a client sends one again after the
            // server's rejection), up to a bound; another gQUIC packet with a version (a Q046 long header) is a
            // transaction of its own for the rules' `quic.version`, as it is in Suricata.
            if let Some(v) = cleartext_gquic_version(data) {
                let chlos = self.chlos;
                if chlos > 0 && chlos < MAX_CLEARTEXT_CHLOS {
                    self.cleartext_chlo(v, data, out);
                }
                if self.chlos == chlos && family(v) == Some(Family::GoogleLong) {
                    out.quic_version(true, v);
                }
            }
            return;
        }
        self.client_datagram(data, out);
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        // A QUIC flow whose ClientHello we never read still gets its version logged.
        if !self.done
            && let Some(v) = self.version
        {
            self.emit(
                QuicEvent {
                    version: version_string(v),
                    wire_version: v,
                    ..QuicEvent::default()
                },
                out,
            );
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

/// The version of a datagram of a gQUIC version whose client hello travels in cleartext: a legacy public header
/// with the version flag (Q043), or a Q046 long header.
fn cleartext_gquic_version(d: &[u8]) -> Option<u32> {
    let &first = d.first()?;
    let at = if first & 0x80 == 0 {
        if first & 0x09 != 0x09 {
            return None;
        }
        9
    } else {
        1
    };
    let b = d.get(at..at + 4)?;
    let v = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let fam = family(v)?;
    let ok = if at == 9 {
        fam == Family::GoogleLegacy
    } else {
        fam == Family::GoogleLong
    };
    ok.then_some(v)
}
