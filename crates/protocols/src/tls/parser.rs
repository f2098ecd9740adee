//! The TLS/DTLS parser of one flow: records cut from each direction's stream, handshake messages collected up to
//! the cap, the event emitted once the server's cleartext part is over.

use super::*;

/// Where a direction's record cutter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecState {
    /// Collecting a 5-byte record header (`hdr_len` bytes so far).
    Header,
    /// Inside a record body: `remaining` bytes, of content type `ty`.
    Body { ty: u8, remaining: usize },
    /// Not TLS any more (garbage): ignore the rest of this direction.
    Dead,
}

/// Handshake-layer state of one direction: reassembles messages we read, skips the others by length.
#[derive(Debug)]
pub(super) struct HsState {
    /// Bytes of the current message's 4-byte header collected.
    pub(super) hdr: [u8; 4],
    pub(super) hdr_len: usize,
    /// Type and remaining body bytes of the current message, and whether we keep them.
    pub(super) msg_type: u8,
    pub(super) msg_remaining: usize,
    pub(super) keep: bool,
    pub(super) body: Vec<u8>,
    /// This is the server's direction (its Certificate message is kept).
    pub(super) server: bool,
}

impl HsState {
    pub(super) fn new() -> Self {
        HsState {
            hdr: [0; 4],
            hdr_len: 0,
            msg_type: 0,
            msg_remaining: 0,
            keep: false,
            body: Vec::new(),
            server: false,
        }
    }
}

#[derive(Debug)]
pub(super) struct DirState {
    pub(super) rec: RecState,
    pub(super) rec_hdr: [u8; 5],
    pub(super) rec_hdr_len: usize,
    pub(super) hs: HsState,
    /// ChangeCipherSpec or application data seen: handshake records are encrypted from here on.
    pub(super) encrypted: bool,
}

impl DirState {
    pub(super) fn new() -> Self {
        DirState {
            rec: RecState::Header,
            rec_hdr: [0; 5],
            rec_hdr_len: 0,
            hs: HsState::new(),
            encrypted: false,
        }
    }
}

/// Messages completed while cutting a chunk, handled after the borrow of the direction ends.
pub(super) enum HsMsg {
    ClientHello(Vec<u8>),
    ServerHello(Vec<u8>),
    /// The server's Certificate message body.
    Certificate(Vec<u8>),
    ServerDone,
}

/// The TLS/DTLS handshake parser of one flow.
#[derive(Debug)]
pub struct TlsParser {
    pub(super) dtls: bool,
    pub(super) cap: usize,
    pub(super) dirs: [DirState; 2],
    pub(super) client: Option<ClientHello>,
    pub(super) server: Option<ServerHello>,
    /// The server's certificate chain, once its Certificate message was read.
    pub(super) certs: Option<Vec<Vec<u8>>>,
    pub(super) logged: bool,
    pub(super) stats: ParserStats,
}

impl TlsParser {
    /// A parser for one flow; `dtls` for datagram framing.
    pub fn new(limits: &Limits, dtls: bool) -> Self {
        TlsParser {
            dtls,
            cap: limits.tls_handshake_cap,
            dirs: [DirState::new(), {
                let mut d = DirState::new();
                d.hs.server = true;
                d
            }],
            client: None,
            server: None,
            certs: None,
            logged: false,
            stats: ParserStats::default(),
        }
    }

    pub(super) fn emit(&mut self, out: &mut dyn EventSink) {
        if self.logged || (self.client.is_none() && self.server.is_none()) {
            return;
        }
        self.logged = true;
        let proto = if self.dtls { 'd' } else { 't' };
        let mut ev = tls_event(self.client.as_ref(), self.server.as_ref(), proto);
        if let Some(chain) = self.certs.take() {
            ev.set_certificates(chain);
        }
        out.event(AppEvent::Tls(ev));
    }

    pub(super) fn handle(&mut self, msgs: Vec<HsMsg>, out: &mut dyn EventSink) {
        for m in msgs {
            match m {
                HsMsg::ClientHello(b) => {
                    if self.client.is_none() {
                        match parse_client_hello(&b, self.dtls) {
                            Ok(ch) => {
                                let proto = if self.dtls { 'd' } else { 't' };
                                out.tls_client_hello(&tls_event(Some(&ch), None, proto));
                                self.client = Some(ch);
                            }
                            Err(_) => self.stats.malformed += 1,
                        }
                    }
                }
                HsMsg::ServerHello(b) => {
                    if self.server.is_none() {
                        match parse_server_hello(&b) {
                            Ok(sh) => {
                                let tls13 = sh.version() == 0x0304 || sh.version() == 0xfefc;
                                self.server = Some(sh);
                                if tls13 {
                                    self.emit(out);
                                }
                            }
                            Err(_) => self.stats.malformed += 1,
                        }
                    }
                }
                HsMsg::Certificate(b) => {
                    if self.certs.is_none() {
                        match certificate_list(&b) {
                            Some(chain) => self.certs = Some(chain),
                            None => self.stats.malformed += 1,
                        }
                    }
                }
                HsMsg::ServerDone => self.emit(out),
            }
        }
    }

    /// Cuts TLS records from a chunk of stream bytes in direction `d`; returns completed messages.
    pub(super) fn cut_stream(&mut self, d: usize, mut data: &[u8], msgs: &mut Vec<HsMsg>) {
        let cap = self.cap;
        let Some(st) = self.dirs.get_mut(d) else {
            return;
        };
        while !data.is_empty() {
            match st.rec {
                RecState::Dead => return,
                RecState::Header => {
                    let take = (5 - st.rec_hdr_len).min(data.len());
                    st.rec_hdr[st.rec_hdr_len..st.rec_hdr_len + take]
                        .copy_from_slice(&data[..take]);
                    st.rec_hdr_len += take;
                    data = &data[take..];
                    if st.rec_hdr_len < 5 {
                        return;
                    }
                    st.rec_hdr_len = 0;
                    let h = st.rec_hdr;
                    let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
                    if !(CT_CCS..=CT_HEARTBEAT).contains(&h[0]) || h[1] != 3 || len > MAX_RECORD {
                        st.rec = RecState::Dead;
                        self.stats.gave_up += 1;
                        return;
                    }
                    if h[0] == CT_CCS || h[0] == CT_APPDATA {
                        st.encrypted = true;
                        if d == 1 {
                            msgs.push(HsMsg::ServerDone);
                        }
                    }
                    st.rec = RecState::Body {
                        ty: h[0],
                        remaining: len,
                    };
                    if len == 0 {
                        st.rec = RecState::Header;
                    }
                }
                RecState::Body { ty, remaining } => {
                    let take = remaining.min(data.len());
                    let (chunk, rest) = data.split_at(take);
                    data = rest;
                    if ty == CT_HANDSHAKE && !st.encrypted {
                        feed_handshake(&mut st.hs, chunk, cap, &mut self.stats, msgs);
                    }
                    let left = remaining - take;
                    st.rec = if left == 0 {
                        RecState::Header
                    } else {
                        RecState::Body {
                            ty,
                            remaining: left,
                        }
                    };
                }
            }
        }
    }

    /// One DTLS datagram: a sequence of records, each handshake fragment carrying its own offset.
    pub(super) fn cut_datagram(&mut self, d: usize, data: &[u8], msgs: &mut Vec<HsMsg>) {
        let mut r = Reader::new(data);
        while !r.is_empty() {
            let Ok(hdr) = r.take(13) else {
                self.stats.malformed += 1;
                return;
            };
            let len = usize::from(u16::from_be_bytes([hdr[11], hdr[12]]));
            let Ok(body) = r.take(len) else {
                self.stats.malformed += 1;
                return;
            };
            let epoch = u16::from_be_bytes([hdr[3], hdr[4]]);
            match hdr[0] {
                CT_HANDSHAKE if epoch == 0 => {
                    let mut hr = Reader::new(body);
                    // type(1) length(3) message_seq(2) fragment_offset(3) fragment_length(3) fragment
                    while let (Ok(ty), Ok(_len), Ok(_seq), Ok(off), Ok(flen)) =
                        (hr.u8(), hr.u24(), hr.u16(), hr.u24(), hr.u24())
                    {
                        let Ok(frag) = hr.take(flen as usize) else {
                            break;
                        };
                        // Only unfragmented hellos are read (fragmented ones are rare and counted as cut).
                        if off == 0 && flen == _len {
                            match ty {
                                HS_CLIENT_HELLO if d == 0 => {
                                    msgs.push(HsMsg::ClientHello(frag.to_vec()))
                                }
                                HS_SERVER_HELLO if d == 1 => {
                                    msgs.push(HsMsg::ServerHello(frag.to_vec()))
                                }
                                HS_SERVER_HELLO_DONE if d == 1 => msgs.push(HsMsg::ServerDone),
                                _ => {}
                            }
                        } else if ty == HS_CLIENT_HELLO || ty == HS_SERVER_HELLO {
                            self.stats.bytes_cut += u64::from(flen);
                        }
                    }
                }
                CT_APPDATA | CT_CCS if d == 1 => msgs.push(HsMsg::ServerDone),
                CT_CCS..=25 => {}
                _ => {
                    self.stats.malformed += 1;
                    return;
                }
            }
        }
    }
}

/// Feeds handshake-record bytes: message headers are collected, bodies of hellos are kept (up to `cap`), all
/// else is skipped by length.
pub(super) fn feed_handshake(
    hs: &mut HsState,
    mut data: &[u8],
    cap: usize,
    stats: &mut ParserStats,
    msgs: &mut Vec<HsMsg>,
) {
    while !data.is_empty() {
        if hs.msg_remaining == 0 && hs.hdr_len < 4 {
            let take = (4 - hs.hdr_len).min(data.len());
            hs.hdr[hs.hdr_len..hs.hdr_len + take].copy_from_slice(&data[..take]);
            hs.hdr_len += take;
            data = &data[take..];
            if hs.hdr_len < 4 {
                return;
            }
            hs.msg_type = hs.hdr[0];
            hs.msg_remaining = (usize::from(hs.hdr[1]) << 16)
                | (usize::from(hs.hdr[2]) << 8)
                | usize::from(hs.hdr[3]);
            let wanted = matches!(hs.msg_type, HS_CLIENT_HELLO | HS_SERVER_HELLO)
                || (hs.msg_type == HS_CERTIFICATE && hs.server);
            hs.keep = wanted && hs.msg_remaining <= cap;
            if wanted && !hs.keep {
                stats.bytes_cut += hs.msg_remaining as u64;
            }
            hs.body.clear();
            if hs.msg_remaining == 0 {
                finish_msg(hs, msgs);
            }
            continue;
        }
        let take = hs.msg_remaining.min(data.len());
        if hs.keep {
            hs.body.extend_from_slice(&data[..take]);
        }
        data = &data[take..];
        hs.msg_remaining -= take;
        if hs.msg_remaining == 0 {
            finish_msg(hs, msgs);
        }
    }
}

pub(super) fn finish_msg(hs: &mut HsState, msgs: &mut Vec<HsMsg>) {
    hs.hdr_len = 0;
    match hs.msg_type {
        HS_CLIENT_HELLO if hs.keep => msgs.push(HsMsg::ClientHello(std::mem::take(&mut hs.body))),
        HS_SERVER_HELLO if hs.keep => msgs.push(HsMsg::ServerHello(std::mem::take(&mut hs.body))),
        HS_CERTIFICATE if hs.keep => msgs.push(HsMsg::Certificate(std::mem::take(&mut hs.body))),
        HS_SERVER_HELLO_DONE => msgs.push(HsMsg::ServerDone),
        _ => {}
    }
    hs.keep = false;
}

impl Parser for TlsParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.logged
            && self
                .dirs
                .iter()
                .all(|d| d.encrypted || d.rec == RecState::Dead)
        {
            return; // nothing left to learn: the cheap path for the bulk of a TLS flow
        }
        let mut msgs = Vec::new();
        if self.dtls {
            self.cut_datagram(dir.index(), data, &mut msgs);
        } else {
            self.cut_stream(dir.index(), data, &mut msgs);
        }
        // A hello from the "wrong" side (flow picked up from its reply) is still a hello: the parser keys on the
        // message type, not on which way it went.
        self.handle(msgs, out);
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        if !self.dtls
            && let Some(st) = self.dirs.get_mut(dir.index())
        {
            // Record boundaries are lost: give up on this direction.
            if st.rec != RecState::Dead {
                st.rec = RecState::Dead;
                self.stats.gave_up += 1;
            }
        }
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        self.emit(out);
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}
