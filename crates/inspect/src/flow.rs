//! One tracked flow: counters, timestamps, who is the client, the TCP state machine and reassembler, and the
//! application layer state.
//!
//! ## Client and server
//! The client is the side that opened the connection: the sender of a SYN without ACK, or the receiver of a SYN-ACK.
//! A TCP connection picked up mid-stream (its handshake not captured) is oriented by ports: a side whose port is a
//! service port (below 1024, or in the protocol registry's port table) while the other's is not is the server;
//! otherwise the side with the lower port is the server (ephemeral ports are allocated high), and with equal ports
//! the first sender is the client. UDP and other protocols follow Suricata: the first sender is the client, unless
//! the first datagram is its protocol's answer from the server (a DNS response from port 53, see
//! `Registry::first_datagram_answers`), whose receiver is then the client, as Suricata's probe turns such a flow
//! around.
//!
//! ## Timeouts
//! A flow ends when its next packet comes later than its timeout after its previous one (compared with the flow's
//! own packet timestamps), when a SYN reuses a closed connection's 5-tuple, when it is evicted under the flow cap, or
//! at the end of the input. See [`Timeouts`](crate::Timeouts).

use flowbundle_decode::wire::tcp::flags;
use flowbundle_decode::{FlowKey, KeySide};

use crate::app::AppState;
use crate::config::Timeouts;
use crate::event::{FlowState, TcpState};
use crate::reassembly::Reassembler;
use flowbundle_rules::StreamSizes;
use flowbundle_rules::stream_size::SeqSpan;
use flowbundle_types::{StreamEvent, StreamEvents, Transport};

/// TCP state of a connection.
#[derive(Debug)]
pub(crate) struct TcpConn {
    /// OR of the flag bits seen, per key direction.
    pub flags: [u8; 2],
    pub state: TcpState,
    pub fin: [bool; 2],
    pub reasm: Reassembler,
    pub gaps: u32,
    /// Established by a mid-stream pickup (an ACK with no handshake seen), not by a handshake.
    pub midstream: bool,
    /// Sequence space used per key direction, for `stream_size`.
    pub spans: [SeqSpan; 2],
    /// A session exists in Suricata's sense: a packet opened one (a SYN; with mid-stream pickups allowed, also a
    /// SYN-ACK, an ACK or a FIN with data). Until then a RST or FIN is a `*_but_no_session` stream event.
    pub session: bool,
    /// The highest acknowledgement number each key side sent (with an ACK flag), if any.
    pub acks: [Option<u32>; 2],
    /// The handshake as Suricata's tracker sees it, for its stream events.
    pub hs: Handshake,
}

/// Where the handshake of a connection opened by a SYN stands, as far as Suricata's handshake stream events need
/// it (see [`TcpConn::stream_events`]). `Off` for a connection picked up mid-stream and once the handshake took a
/// turn not followed (the events are then not raised).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum HsState {
    #[default]
    Off,
    SynSent,
    SynRecv,
    Established,
}

/// The handshake's numbers (see [`HsState`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Handshake {
    pub state: HsState,
    pub client_isn: u32,
    pub server_isn: u32,
    /// Bytes of data on the SYN (TCP Fast Open).
    pub syn_len: u32,
    /// The SYN carried the Fast Open option.
    pub tfo: bool,
    /// The server sent a SYN of its own while the client's was unanswered (a four-way handshake).
    pub four_whs: bool,
    /// The acknowledgement number of the accepted SYN-ACK.
    pub synack_ack: u32,
    /// The server sent an ACK on the established connection (Suricata's `3WHS_CONFIRMED`).
    pub confirmed: bool,
}

impl TcpConn {
    fn new() -> Self {
        TcpConn {
            flags: [0; 2],
            state: TcpState::None,
            fin: [false; 2],
            reasm: Reassembler::new(),
            gaps: 0,
            midstream: false,
            spans: [SeqSpan::default(); 2],
            session: false,
            acks: [None; 2],
            hs: Handshake::default(),
        }
    }

    /// The stream events of one packet, checked before the packet moves the connection's state: the session
    /// events ([`TcpConn::session_events`]) and the handshake events of Suricata's tracker for a connection opened
    /// by a SYN. `dir`: the key side that sent the packet; `to_server`: it comes from the client; `tfo`: it carries the Fast Open option. Where
    /// Suricata rejects the packet (its state does not move) the handshake stays where it was; where it would
    /// follow a turn kept here as no state (a SYN resent with another sequence number, queued; a SYN-ACK resent with
    /// another one; a completed four-way handshake; a FIN or RST; an ACK that does not complete the handshake
    /// exactly), the handshake checks stop for the connection.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stream_events(
        &mut self,
        dir: KeySide,
        to_server: bool,
        (seq, ack): (u32, u32),
        f: u16,
        payload_len: usize,
        tfo: bool,
        midstream: bool,
    ) -> StreamEvents {
        let had_session = self.session;
        let mut ev = self.session_events(f, payload_len, midstream);
        let has = |b: u16| f & b != 0;
        if !had_session {
            if self.session && has(flags::SYN) && !has(flags::ACK) {
                self.hs = Handshake {
                    state: HsState::SynSent,
                    client_isn: seq,
                    syn_len: u32::try_from(payload_len).unwrap_or(u32::MAX),
                    tfo,
                    ..Handshake::default()
                };
            }
            return ev;
        }
        let hs = &mut self.hs;
        let (syn, ackf) = (has(flags::SYN), has(flags::ACK));
        let off = HsState::Off;
        match hs.state {
            HsState::Off => {}
            _ if has(flags::RST) || has(flags::FIN) => hs.state = off,
            HsState::SynSent => {
                if syn && ackf && !to_server {
                    // Without Fast Open the SYN-ACK acknowledges the SYN; with it, the SYN's data too (or, with
                    // the data ignored, only the SYN).
                    let fast_open = tfo || hs.tfo;
                    let plain = hs.client_isn.wrapping_add(1);
                    let full = if fast_open {
                        plain.wrapping_add(hs.syn_len)
                    } else {
                        plain
                    };
                    if ack != full {
                        if fast_open && ack == plain {
                            ev.set(StreamEvent::ThreeWhsSynackTfoDataIgnored);
                            hs.state = off;
                        } else {
                            ev.set(StreamEvent::ThreeWhsSynackWithWrongAck);
                        }
                        return ev;
                    }
                    hs.state = HsState::SynRecv;
                    hs.server_isn = seq;
                    hs.synack_ack = ack;
                } else if syn && ackf {
                    if !hs.four_whs {
                        ev.set(StreamEvent::ThreeWhsSynackInWrongDirection);
                    } else if ack != hs.server_isn.wrapping_add(1) {
                        ev.set(StreamEvent::FourWhsSynackWithWrongAck);
                    } else if seq != hs.client_isn {
                        ev.set(StreamEvent::FourWhsSynackWithWrongSyn);
                    } else {
                        hs.state = off;
                    }
                } else if syn && !to_server {
                    hs.four_whs = true;
                    hs.server_isn = seq;
                } else if syn && seq != hs.client_isn {
                    hs.state = off;
                }
            }
            HsState::SynRecv => {
                if syn && ackf && to_server {
                    ev.set(StreamEvent::ThreeWhsSynackToserverOnSynRecv);
                } else if syn && ackf {
                    if ack != hs.synack_ack {
                        ev.set(StreamEvent::ThreeWhsSynackResendWithDiffAck);
                    } else if seq != hs.server_isn {
                        hs.state = off;
                    }
                } else if syn && !to_server {
                    ev.set(StreamEvent::ThreeWhsSynToclientOnSynRecv);
                } else if syn {
                    if seq != hs.client_isn {
                        ev.set(StreamEvent::ThreeWhsSynResendDiffSeqOnSynRecv);
                    }
                } else if ackf {
                    hs.state = if to_server
                        && seq == hs.synack_ack
                        && ack == hs.server_isn.wrapping_add(1)
                    {
                        HsState::Established
                    } else {
                        off
                    };
                }
            }
            HsState::Established => {
                if syn && ackf && to_server {
                    ev.set(StreamEvent::EstSynackToserver);
                } else if syn && ackf {
                    // The server's last acknowledgement (the SYN-ACK's, or a later one).
                    let last = self.acks[dir.index()].unwrap_or(hs.synack_ack);
                    if ack != last {
                        ev.set(StreamEvent::EstSynackResendWithDiffAck);
                    } else if seq != hs.server_isn {
                        ev.set(StreamEvent::EstSynackResendWithDiffSeq);
                    } else if hs.confirmed {
                        ev.set(StreamEvent::EstSynackResend);
                    }
                } else if syn && !to_server {
                    ev.set(StreamEvent::EstSynToclient);
                } else if syn {
                    ev.set(if seq != hs.client_isn {
                        StreamEvent::EstSynResendDiffSeq
                    } else {
                        StreamEvent::EstSynResend
                    });
                } else if ackf && !to_server {
                    hs.confirmed = true;
                }
            }
        }
        ev
    }

    /// The stream events of a packet with TCP flags `f` and `payload_len` bytes on a connection that has no session
    /// yet, and whether it opens one, as Suricata's tracker decides on a packet without a session: a RST is
    /// `rst_but_no_session`; a FIN is `fin_but_no_session` unless mid-stream pickups are allowed (`midstream`) and
    /// it carries data; otherwise a SYN opens a session, and with `midstream` a SYN-ACK or an ACK does too. Checked in
    /// that order (a SYN with RST or FIN is the RST's or FIN's event). Nothing once a session exists.
    pub(crate) fn session_events(
        &mut self,
        f: u16,
        payload_len: usize,
        midstream: bool,
    ) -> StreamEvents {
        let mut ev = StreamEvents::EMPTY;
        if self.session {
            return ev;
        }
        let has = |b: u16| f & b != 0;
        if has(flags::RST) {
            ev.set(StreamEvent::RstButNoSession);
        } else if has(flags::FIN) {
            if !midstream || payload_len == 0 {
                ev.set(StreamEvent::FinButNoSession);
            } else {
                self.session = true;
            }
        } else if has(flags::SYN) && has(flags::ACK) {
            self.session = midstream;
        } else if has(flags::SYN) {
            self.session = true;
        } else if has(flags::ACK) {
            self.session = midstream;
        }
        ev
    }

    /// A segment sent from key side `dir` moves that side's sequence span (and fixes the peer's from its
    /// acknowledgement when the peer was not seen yet), as Suricata's session tracks `isn` and `next_seq`.
    pub(crate) fn on_seq(&mut self, dir: KeySide, seq: u32, ack: u32, len: usize, f: u16) {
        let (syn, fin, rst) = (
            f & flags::SYN != 0,
            f & flags::FIN != 0,
            f & flags::RST != 0,
        );
        if f & flags::ACK != 0 {
            let last = &mut self.acks[dir.index()];
            // The highest in sequence space (a later segment may carry an older acknowledgement).
            if last.is_none_or(|l| (ack.wrapping_sub(l) as i32) > 0) {
                *last = Some(ack);
            }
        }
        if rst {
            return;
        }
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        self.spans[dir.index()].on_segment(seq, len, syn, fin);
        if f & flags::ACK != 0 {
            self.spans[dir.flip().index()].on_peer_ack(ack);
        }
    }

    /// Whether the peer of key side `dir` acknowledged sequence space past stream offset `offset` of `dir` (the
    /// receiver has what the capture is missing there).
    pub(crate) fn acked_past(&self, dir: KeySide, offset: u64) -> bool {
        match (
            self.acks[dir.flip().index()],
            self.reasm.seq_at(dir, offset),
        ) {
            (Some(ack), Some(seq)) => (ack.wrapping_sub(seq) as i32) > 0,
            _ => false,
        }
    }

    /// The sizes `stream_size` compares, with `client` the flow's client side.
    pub(crate) fn stream_sizes(&self, client: KeySide) -> StreamSizes {
        StreamSizes {
            client: self.spans[client.index()].size(),
            server: self.spans[client.flip().index()].size(),
        }
    }

    /// The state machine (Suricata's names, simplified to what flow records report).
    pub(crate) fn on_flags(&mut self, dir: KeySide, from_client: bool, f: u16) {
        self.flags[dir.index()] |= f as u8;
        let (syn, ack, fin, rst) = (
            f & flags::SYN != 0,
            f & flags::ACK != 0,
            f & flags::FIN != 0,
            f & flags::RST != 0,
        );
        if rst {
            self.state = TcpState::Closed;
            return;
        }
        if self.state == TcpState::Closed {
            return;
        }
        if syn && !ack {
            if matches!(self.state, TcpState::None | TcpState::SynSent) {
                self.state = TcpState::SynSent;
            }
        } else if syn && ack {
            if matches!(self.state, TcpState::None | TcpState::SynSent) {
                self.state = TcpState::SynRecv;
            }
        } else if ack
            && (self.state == TcpState::SynRecv && from_client || self.state == TcpState::None)
        {
            // The handshake's last ACK, or a connection picked up mid-stream.
            self.midstream = self.state == TcpState::None;
            self.state = TcpState::Established;
        }
        if fin {
            self.fin[dir.index()] = true;
            self.state = if self.fin[0] && self.fin[1] {
                TcpState::Closed
            } else if from_client {
                TcpState::FinWait1
            } else {
                TcpState::CloseWait
            };
        }
    }
}

/// A tracked flow.
pub(crate) struct Flow {
    pub id: u64,
    pub key: FlowKey,
    /// Key direction of the client's packets.
    pub client: KeySide,
    pub transport: Transport,
    pub start_ns: u64,
    pub last_ns: u64,
    /// Packets and bytes per key direction.
    pub pkts: [u64; 2],
    pub bytes: [u64; 2],
    pub tcp: Option<Box<TcpConn>>,
    pub app: AppState,
    /// Events emitted so far (the next event's sequence number).
    pub events: u32,
    pub alerted: bool,
    /// Cycles spent inspecting this flow's packets.
    pub cycles: u64,
    /// ICMP flows: type and code of the first message from each key side.
    pub icmp: [Option<(u8, u8)>; 2],
}

impl Flow {
    pub(crate) fn new(id: u64, key: FlowKey, client: KeySide, ts_ns: u64, app: AppState) -> Self {
        let transport = Transport::from_ip_proto(key.proto);
        Flow {
            id,
            key,
            client,
            transport,
            start_ns: ts_ns,
            last_ns: ts_ns,
            pkts: [0; 2],
            bytes: [0; 2],
            tcp: (transport == Transport::Tcp).then(|| Box::new(TcpConn::new())),
            app,
            events: 0,
            alerted: false,
            cycles: 0,
            icmp: [None; 2],
        }
    }

    /// Packets seen so far, both directions.
    pub(crate) fn packets(&self) -> u64 {
        self.pkts[0] + self.pkts[1]
    }

    pub(crate) fn state(&self) -> FlowState {
        match &self.tcp {
            Some(t) => match t.state {
                TcpState::Closed => FlowState::Closed,
                TcpState::None | TcpState::SynSent | TcpState::SynRecv => {
                    // A mid-stream pickup with traffic both ways counts as established.
                    if t.state == TcpState::None && self.pkts[0] > 0 && self.pkts[1] > 0 {
                        FlowState::Established
                    } else {
                        FlowState::New
                    }
                }
                _ => FlowState::Established,
            },
            None => {
                if self.pkts[0] > 0 && self.pkts[1] > 0 {
                    FlowState::Established
                } else {
                    FlowState::New
                }
            }
        }
    }

    /// The idle timeout that applies now.
    pub(crate) fn timeout_ns(&self, t: &Timeouts) -> u64 {
        let state = self.state();
        match self.transport {
            Transport::Tcp => match state {
                FlowState::New => t.tcp_new_ns,
                FlowState::Established => t.tcp_established_ns,
                FlowState::Closed => t.tcp_closed_ns,
            },
            Transport::Udp => match state {
                FlowState::Established => t.udp_established_ns,
                _ => t.udp_new_ns,
            },
            Transport::Icmp | Transport::Other(_) => match state {
                FlowState::Established => t.other_established_ns,
                _ => t.other_new_ns,
            },
        }
    }

    /// Whether a packet at `ts_ns` comes after the flow timed out.
    pub(crate) fn expired_at(&self, ts_ns: u64, t: &Timeouts) -> bool {
        ts_ns.saturating_sub(self.last_ns) > self.timeout_ns(t)
    }

    /// Whether a packet with TCP flags `f` reopens the 5-tuple of this closed connection (a new SYN).
    pub(crate) fn reused_by(&self, f: u16) -> bool {
        f & flags::SYN != 0
            && f & flags::ACK == 0
            && self
                .tcp
                .as_ref()
                .is_some_and(|t| t.state == TcpState::Closed || t.reasm.is_closed())
    }
}

/// Which key direction is the client's, from the first packet of a flow (see the module documentation).
pub(crate) fn pick_client(
    key: &FlowKey,
    dir: KeySide,
    tcp_flags: Option<u16>,
    is_service: impl Fn(u16) -> bool,
) -> KeySide {
    let Some(f) = tcp_flags else {
        return dir;
    };
    if f & flags::SYN != 0 {
        return if f & flags::ACK == 0 { dir } else { dir.flip() };
    }
    // Mid-stream: orient by ports. `lo_port` belongs to the key's Forward side.
    let (fwd, rev) = (key.lo_port, key.hi_port);
    let server_is = |server_fwd: bool| {
        // The client sends towards the server: the client's direction is the server side's opposite.
        if server_fwd {
            KeySide::Reverse
        } else {
            KeySide::Forward
        }
    };
    match (is_service(fwd), is_service(rev)) {
        (true, false) => server_is(true),
        (false, true) => server_is(false),
        _ if fwd != rev => server_is(fwd < rev),
        _ => dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn key(sport: u16, dport: u16) -> (FlowKey, KeySide) {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        FlowKey::new(a, sport, b, dport, 6)
    }

    #[test]
    fn client_from_syn_synack_or_ports() {
        let svc = |p: u16| p < 1024;
        let (k, d) = key(40000, 80);
        assert_eq!(pick_client(&k, d, Some(flags::SYN), svc), d);
        assert_eq!(
            pick_client(&k, d.flip(), Some(flags::SYN | flags::ACK), svc),
            d
        );
        // Mid-stream, first packet from the server: still the port-40000 side is the client.
        assert_eq!(pick_client(&k, d.flip(), Some(flags::ACK), svc), d);
        let (k, d) = key(50000, 8080);
        assert_eq!(
            pick_client(&k, d.flip(), Some(flags::ACK), svc),
            d,
            "lower port serves"
        );
        let (k, d) = key(7, 7);
        assert_eq!(
            pick_client(&k, d, Some(flags::ACK), svc),
            d,
            "equal ports: first sender"
        );
        assert_eq!(pick_client(&k, d, None, svc), d, "UDP: first sender");
    }

    #[test]
    fn handshake_and_close() {
        let mut t = TcpConn::new();
        let (c, s) = (KeySide::Forward, KeySide::Reverse);
        t.on_flags(c, true, flags::SYN);
        assert_eq!(t.state, TcpState::SynSent);
        t.on_flags(s, false, flags::SYN | flags::ACK);
        assert_eq!(t.state, TcpState::SynRecv);
        t.on_flags(c, true, flags::ACK);
        assert_eq!(t.state, TcpState::Established);
        t.on_flags(s, false, flags::FIN | flags::ACK);
        assert_eq!(t.state, TcpState::CloseWait);
        t.on_flags(c, true, flags::FIN | flags::ACK);
        assert_eq!(t.state, TcpState::Closed);
        assert_eq!(t.flags[c.index()], 0x13);
        let mut t = TcpConn::new();
        t.on_flags(c, true, flags::ACK | flags::PSH);
        assert_eq!(t.state, TcpState::Established, "mid-stream pickup");
        t.on_flags(s, false, flags::RST);
        assert_eq!(t.state, TcpState::Closed);
    }
}
