//! The EVE `dcerpc` record: one per connection-oriented DCE/RPC transaction, as Suricata 8 writes it.
//!
//! A transaction is a request PDU and its answer, paired by call id: a `bind` or `alter_context` and its
//! `bind_ack` / `alter_context_resp`, or a `request` and its `response`. Suricata counts a side as done at its first
//! PDU (a multi-fragment request is done at its first fragment, its answer at the first response fragment), logs
//! the transaction once both sides are done and forgets it then; a response fragment that arrives after its call
//! was logged opens a transaction of its own, whose request is lost. [`TxLog`] keeps the transactions of one flow
//! that way and hands each finished one over as a [`DcerpcEvent`]; those still open when the flow ends are handed
//! over then (`UNREPLIED`, `REQUEST_LOST`), as Suricata logs every transaction at the end of its flow.
//!
//! Fields (Suricata's names): `request` and `response` (the PDU types' names, `REQUEST_LOST` / `UNREPLIED` when a
//! side never came or was lost in a gap); `req` (`opnum`, `frag_cnt`, `stub_data_size`) for a request, `res`
//! (`frag_cnt`, `stub_data_size`) for a response (`frag_cnt` is 1 once the side was seen: Suricata sets it at each
//! fragment rather than counting; the stub size adds up every fragment's body, a response's 8-byte header
//! included, until the record is written); `interfaces`: for a bind, the interfaces it offered, for a request,
//! every interface offered under the request's context id that the server did not reject (each with its UUID, its
//! version `major.minor` and, once answered, the bind_ack's `ack_result`; an answer goes to the offers of its call
//! id not answered yet); `call_id`; `rpc_version` (`5.0` or `5.1`). Suricata 9 adds each
//! known interface's `service` name, and in a request's record the operation's `procedure` name
//! ([`DcerpcEvent::name_interfaces`], from [`super::interfaces`]); Suricata 8's schema has neither, so they are
//! written only when [`crate::Limits::dcerpc_names`] asks for them. PDU types other than bind, alter_context,
//! request and their answers (auth3, fault, ...) make no transaction.
//!
//! Connectionless DCE/RPC (over UDP) has its own transactions ([`UdpTxLog`]): a request and its response, paired by
//! activity UUID and sequence number, written with `activityuuid`, `seqnum` and `rpc_version` `4.0` instead of a
//! call id; there `frag_cnt` counts the fragments.
//!
//! Costs and caps: at most [`MAX_TXS`] transactions open per flow (the oldest is handed over as it is when a new one
//! would exceed that) and [`MAX_INTERFACES`] offered interfaces (the oldest is forgotten).

use std::collections::VecDeque;

/// Transactions open at once per flow (beyond, the oldest is logged as it stands).
pub const MAX_TXS: usize = 64;

/// PDU types (C706 §12.6.4).
pub(crate) const REQUEST: u8 = 0;
pub(crate) const RESPONSE: u8 = 2;
pub(crate) const BIND: u8 = 11;
pub(crate) const BIND_ACK: u8 = 12;
pub(crate) const ALTER_CONTEXT: u8 = 14;
pub(crate) const ALTER_CONTEXT_RESP: u8 = 15;

/// The name Suricata writes for a PDU type.
pub fn pdu_type_name(t: u8) -> &'static str {
    match t {
        0 => "REQUEST",
        1 => "PING",
        2 => "RESPONSE",
        3 => "FAULT",
        4 => "WORKING",
        5 => "NOCALL",
        6 => "REJECT",
        7 => "ACK",
        8 => "CL_CANCEL",
        9 => "FACK",
        10 => "CANCEL_ACK",
        11 => "BIND",
        12 => "BINDACK",
        13 => "BINDNAK",
        14 => "ALTER_CONTEXT",
        15 => "ALTER_CONTEXT_RESP",
        16 => "AUTH3",
        17 => "SHUTDOWN",
        18 => "CO_CANCEL",
        19 => "ORPHANED",
        20 => "RTS",
        _ => "UNKNOWN",
    }
}

/// One DCE/RPC transaction as Suricata's EVE `dcerpc` record writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DcerpcEvent {
    /// The transaction, numbered per flow in the order they began (binds included). Not written inside the object.
    #[serde(skip)]
    pub tx_id: u64,
    /// The request's PDU type, or `REQUEST_LOST`.
    pub request: &'static str,
    /// A request's operation number, fragments and stub size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub req: Option<DcerpcSide>,
    /// A bind's offered interfaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<DcerpcInterface>,
    /// The answer's PDU type, or `UNREPLIED`.
    pub response: &'static str,
    /// A response's fragments and stub size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub res: Option<DcerpcSide>,
    /// The call id (connection-oriented).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<u32>,
    /// The activity UUID and sequence number (connectionless).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activityuuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seqnum: Option<u32>,
    /// `5.0` or `5.1` (connection-oriented), `4.0` (connectionless).
    pub rpc_version: &'static str,
}

/// `req` / `res`: one side of a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DcerpcSide {
    /// The request's operation number (`req` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opnum: Option<u16>,
    pub frag_cnt: u32,
    pub stub_data_size: u64,
}

/// An interface a bind offered.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DcerpcInterface {
    /// `367abb81-9844-35f1-ad32-98f038001003`.
    pub uuid: String,
    /// `major.minor`.
    pub version: String,
    /// The bind_ack's result for it (0: accepted), once answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_result: Option<u16>,
    /// Suricata 9's name of its service, when the table knows the UUID and names are asked for
    /// ([`DcerpcEvent::name_interfaces`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<&'static str>,
    /// Suricata 9's name of a request's operation, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub procedure: Option<&'static str>,
}

impl DcerpcEvent {
    /// Writes Suricata 9's `service` (and, in a request's record, the operation's `procedure`) beside each
    /// interface the table knows ([`super::interfaces`]); Suricata 8 writes neither ([`crate::Limits::dcerpc_names`]).
    pub fn name_interfaces(&mut self) {
        let opnum = self
            .req
            .and_then(|r| r.opnum)
            .filter(|_| self.request == pdu_type_name(REQUEST));
        for i in &mut self.interfaces {
            (i.service, i.procedure) = super::interfaces::names(&i.uuid, opnum);
        }
    }
}

/// A UUID in the textual byte order, written as Suricata (and everyone) writes it.
pub fn uuid_string(u: &[u8; 16]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// An interface a bind offers: UUID (textual order), major and minor version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Offered {
    pub uuid: [u8; 16],
    pub major: u16,
    pub minor: u16,
}

#[derive(Debug)]
struct Tx {
    id: u64,
    call_id: u32,
    req_cmd: u8,
    resp_cmd: u8,
    req_done: bool,
    resp_done: bool,
    req_lost: bool,
    resp_lost: bool,
    opnum: u16,
    frags: [u32; 2],
    stub: [u64; 2],
    minor: u8,
    /// A request's presentation context.
    ctx_id: u16,
}

/// An interface a bind offered, as the flow keeps it: the bind's call id, the context id, the bind_ack's result.
#[derive(Clone, Copy, Debug)]
struct Bound {
    call_id: u32,
    ctx_id: u16,
    iface: Offered,
    result: Option<u16>,
}

/// Interfaces remembered per flow (the oldest is forgotten beyond).
pub const MAX_INTERFACES: usize = 64;

fn interface(b: &Bound) -> DcerpcInterface {
    DcerpcInterface {
        uuid: uuid_string(&b.iface.uuid),
        version: format!("{}.{}", b.iface.major, b.iface.minor),
        ack_result: b.result,
        ..Default::default()
    }
}

impl Tx {
    /// The record, with the interfaces of `bound` it names (a bind's own; a request's context's).
    fn record(self, bound: &VecDeque<Bound>) -> DcerpcEvent {
        let req_seen = self.req_done && !self.req_lost;
        let resp_seen = self.resp_done && !self.resp_lost;
        let mut e = DcerpcEvent {
            tx_id: self.id,
            request: if req_seen {
                pdu_type_name(self.req_cmd)
            } else {
                "REQUEST_LOST"
            },
            response: if resp_seen {
                pdu_type_name(self.resp_cmd)
            } else {
                "UNREPLIED"
            },
            call_id: Some(self.call_id),
            rpc_version: if self.minor == 1 { "5.1" } else { "5.0" },
            ..Default::default()
        };
        if req_seen && self.req_cmd == REQUEST {
            e.req = Some(DcerpcSide {
                opnum: Some(self.opnum),
                frag_cnt: self.frags[0],
                stub_data_size: self.stub[0],
            });
        }
        if req_seen && self.req_cmd == BIND {
            e.interfaces = bound
                .iter()
                .filter(|b| b.call_id == self.call_id)
                .map(interface)
                .collect();
        }
        if req_seen && self.req_cmd == REQUEST {
            // An offer the server rejected bound nothing: a request on a context id whose first offer was
            // rejected and a later one accepted (suricata-verify `dcerpc-ctxids`) names the accepted interface.
            e.interfaces = bound
                .iter()
                .filter(|b| b.ctx_id == self.ctx_id && b.result.is_none_or(|r| r == 0))
                .map(interface)
                .collect();
        }
        if resp_seen && self.resp_cmd == RESPONSE {
            e.res = Some(DcerpcSide {
                opnum: None,
                frag_cnt: self.frags[1],
                stub_data_size: self.stub[1],
            });
        }
        e
    }
}

/// The request type a response type answers, and the response type a request type expects.
fn request_for(resp: u8) -> Option<u8> {
    match resp {
        RESPONSE => Some(REQUEST),
        BIND_ACK => Some(BIND),
        ALTER_CONTEXT_RESP => Some(ALTER_CONTEXT),
        _ => None,
    }
}

fn response_for(req: u8) -> Option<u8> {
    match req {
        REQUEST => Some(RESPONSE),
        BIND => Some(BIND_ACK),
        ALTER_CONTEXT => Some(ALTER_CONTEXT_RESP),
        _ => None,
    }
}

/// The transactions of one flow, kept as Suricata keeps them (see the module docs).
#[derive(Debug, Default)]
pub struct TxLog {
    txs: VecDeque<Tx>,
    next_id: u64,
    /// The interfaces binds offered, oldest first (at most [`MAX_INTERFACES`]).
    bound: VecDeque<Bound>,
    /// Finished transactions not yet handed over.
    done: Vec<DcerpcEvent>,
}

impl TxLog {
    fn create(&mut self, call_id: u32, minor: u8) -> usize {
        if self.txs.len() >= MAX_TXS
            && let Some(old) = self.txs.pop_front()
        {
            self.done.push(old.record(&self.bound));
        }
        self.txs.push_back(Tx {
            id: self.next_id,
            call_id,
            req_cmd: REQUEST,
            resp_cmd: RESPONSE,
            req_done: false,
            resp_done: false,
            req_lost: false,
            resp_lost: false,
            opnum: 0,
            frags: [0; 2],
            stub: [0; 2],
            minor,
            ctx_id: 0,
        });
        self.next_id += 1;
        self.txs.len() - 1
    }

    /// The open transaction a PDU of type `ptype` of call `call_id` continues: to the server, one still expecting
    /// the answer `ptype` asks for; to the client, one whose request is the one `ptype` answers.
    fn find(&self, call_id: u32, ptype: u8, to_server: bool) -> Option<usize> {
        let want = if to_server {
            response_for(ptype)
        } else {
            request_for(ptype)
        };
        self.txs.iter().position(|t| {
            t.call_id == call_id
                && if to_server {
                    Some(t.resp_cmd) == want
                } else {
                    Some(t.req_cmd) == want
                }
        })
    }

    /// One whole PDU of type `ptype` with its call id, minor version, a request's context and operation number
    /// (`req`), and `stub` bytes (a request's or response's body). `offered`: a bind's or alter_context's
    /// contexts (id, interface); `results`: a bind_ack's results in order. Returns the id of the transaction it
    /// belongs to, when it belongs to one (PDU types other than these six belong to none and change nothing).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn pdu(
        &mut self,
        ptype: u8,
        call_id: u32,
        minor: u8,
        req: (u16, u16),
        stub: usize,
        offered: &[(u16, Offered)],
        results: &[u16],
    ) -> Option<u64> {
        let i = match ptype {
            BIND | ALTER_CONTEXT => {
                let i = self.create(call_id, minor);
                let t = &mut self.txs[i];
                t.req_cmd = ptype;
                t.req_done = true;
                t.frags[0] = 1;
                for &(ctx_id, iface) in offered {
                    if self.bound.len() >= MAX_INTERFACES {
                        self.bound.pop_front();
                    }
                    self.bound.push_back(Bound {
                        call_id,
                        ctx_id,
                        iface,
                        result: None,
                    });
                }
                i
            }
            BIND_ACK | ALTER_CONTEXT_RESP => {
                let i = match self.find(call_id, ptype, false) {
                    Some(i) => i,
                    None => self.create(call_id, minor),
                };
                let t = &mut self.txs[i];
                t.resp_cmd = ptype;
                t.resp_done = true;
                t.frags[1] = 1;
                // The answer is to the offers of its call not answered yet (two alter_contexts may share a call
                // id; the second answer is the second's).
                let answered = self
                    .bound
                    .iter_mut()
                    .filter(|b| b.call_id == call_id && b.result.is_none());
                for (b, r) in answered.zip(results) {
                    b.result = Some(*r);
                }
                i
            }
            REQUEST => {
                let i = match self.find(call_id, ptype, true) {
                    Some(i) => i,
                    None => self.create(call_id, minor),
                };
                let t = &mut self.txs[i];
                t.req_cmd = REQUEST;
                (t.ctx_id, t.opnum) = req;
                t.req_done = true;
                t.frags[0] = 1;
                t.stub[0] += stub as u64;
                i
            }
            RESPONSE => {
                let i = match self.find(call_id, ptype, false) {
                    Some(i) => i,
                    None => self.create(call_id, minor),
                };
                let t = &mut self.txs[i];
                t.resp_cmd = RESPONSE;
                t.resp_done = true;
                t.frags[1] = 1;
                t.stub[1] += stub as u64;
                i
            }
            _ => return None,
        };
        let id = self.txs[i].id;
        if self.txs[i].req_done
            && self.txs[i].resp_done
            && let Some(t) = self.txs.remove(i)
        {
            self.done.push(t.record(&self.bound));
        }
        Some(id)
    }

    /// A gap in one direction: the open transactions' sides that direction owes are lost (to the server: the
    /// requests not seen; to the client: both sides), as Suricata marks them; those now done are handed over.
    pub fn gap(&mut self, to_server: bool) {
        let mut i = 0;
        while i < self.txs.len() {
            let t = &mut self.txs[i];
            if !t.req_done {
                t.req_lost = true;
            }
            t.req_done = true;
            if !to_server {
                if !t.resp_done {
                    t.resp_lost = true;
                }
                t.resp_done = true;
            }
            if t.resp_done
                && let Some(t) = self.txs.remove(i)
            {
                self.done.push(t.record(&self.bound));
            } else {
                i += 1;
            }
        }
    }

    /// The finished transactions, in the order they finished.
    pub fn take_done(&mut self) -> std::vec::Drain<'_, DcerpcEvent> {
        self.done.drain(..)
    }

    /// The flow ended: every open transaction is handed over as it stands, oldest first.
    pub fn finish(&mut self) -> std::vec::Drain<'_, DcerpcEvent> {
        while let Some(t) = self.txs.pop_front() {
            self.done.push(t.record(&self.bound));
        }
        self.done.drain(..)
    }
}

/// A connectionless transaction: a request and its response, paired by activity and sequence number.
#[derive(Debug)]
struct UdpTx {
    id: u64,
    activity: [u8; 16],
    seqnum: u32,
    opnum: u16,
    done: [bool; 2],
    frags: [u32; 2],
    stub: [u64; 2],
}

impl UdpTx {
    fn record(self) -> DcerpcEvent {
        let side = |i: usize, opnum: Option<u16>| DcerpcSide {
            opnum,
            frag_cnt: self.frags[i],
            stub_data_size: self.stub[i],
        };
        DcerpcEvent {
            tx_id: self.id,
            request: if self.done[0] {
                "REQUEST"
            } else {
                "REQUEST_LOST"
            },
            req: self.done[0].then(|| side(0, Some(self.opnum))),
            response: if self.done[1] {
                "RESPONSE"
            } else {
                "UNREPLIED"
            },
            res: self.done[1].then(|| side(1, None)),
            activityuuid: Some(uuid_string(&self.activity)),
            seqnum: Some(self.seqnum),
            rpc_version: "4.0",
            ..Default::default()
        }
    }
}

/// The connectionless (UDP) transactions of one flow, as Suricata keeps them: a request or response datagram
/// continues the open transaction of its activity and sequence number whose side is not done yet, or opens one; a
/// side is done at its last fragment (or an unfragmented datagram); a transaction is handed over once both sides
/// are done, or when the flow ends. Datagrams of other PDU types make none. At most [`MAX_TXS`] are open.
#[derive(Debug, Default)]
pub struct UdpTxLog {
    txs: VecDeque<UdpTx>,
    next_id: u64,
    done: Vec<DcerpcEvent>,
}

/// The connectionless header's length.
const UDP_HEADER: usize = 80;
/// Its flags1 bits: a fragment, the last fragment.
const PFCL1_LASTFRAG: u8 = 0x02;
const PFCL1_FRAG: u8 = 0x04;

impl UdpTxLog {
    /// One datagram. Returns whether it read as a connectionless request or response.
    pub fn datagram(&mut self, d: &[u8]) -> bool {
        if d.len() < UDP_HEADER || d[0] != 4 || !matches!(d[1], REQUEST | RESPONSE) {
            return false;
        }
        let little = d[4] & 0x10 != 0;
        let rd16 = |at: usize| {
            let b = [d[at], d[at + 1]];
            if little {
                u16::from_le_bytes(b)
            } else {
                u16::from_be_bytes(b)
            }
        };
        let seqnum = {
            let b = [d[64], d[65], d[66], d[67]];
            if little {
                u32::from_le_bytes(b)
            } else {
                u32::from_be_bytes(b)
            }
        };
        let body = usize::from(rd16(74));
        let Some(stub) = d.get(UDP_HEADER..UDP_HEADER + body) else {
            return false;
        };
        // Suricata reads the activity UUID's first three fields little-endian whatever the data representation.
        let mut activity = [0u8; 16];
        activity.copy_from_slice(&d[40..56]);
        activity[..4].reverse();
        activity[4..6].reverse();
        activity[6..8].reverse();
        let si = usize::from(d[1] == RESPONSE);
        let pos = self
            .txs
            .iter()
            .position(|t| t.seqnum == seqnum && t.activity == activity && !t.done[si]);
        let i = match pos {
            Some(i) => i,
            None => {
                if self.txs.len() >= MAX_TXS
                    && let Some(old) = self.txs.pop_front()
                {
                    self.done.push(old.record());
                }
                self.txs.push_back(UdpTx {
                    id: self.next_id,
                    activity,
                    seqnum,
                    opnum: 0,
                    done: [false; 2],
                    frags: [0; 2],
                    stub: [0; 2],
                });
                self.next_id += 1;
                self.txs.len() - 1
            }
        };
        let t = &mut self.txs[i];
        if si == 0 {
            t.opnum = rd16(68);
        }
        t.frags[si] = t.frags[si].saturating_add(1);
        t.stub[si] += stub.len() as u64;
        let flags1 = d[2];
        if flags1 & PFCL1_FRAG == 0 || flags1 & PFCL1_LASTFRAG != 0 {
            t.done[si] = true;
        }
        if t.done == [true; 2]
            && let Some(t) = self.txs.remove(i)
        {
            self.done.push(t.record());
        }
        true
    }

    /// The finished transactions, in the order they finished.
    pub fn take_done(&mut self) -> std::vec::Drain<'_, DcerpcEvent> {
        self.done.drain(..)
    }

    /// The flow ended: every open transaction is handed over as it stands, oldest first.
    pub fn finish(&mut self) -> std::vec::Drain<'_, DcerpcEvent> {
        while let Some(t) = self.txs.pop_front() {
            self.done.push(t.record());
        }
        self.done.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVCCTL: Offered = Offered {
        uuid: [
            0x36, 0x7a, 0xbb, 0x81, 0x98, 0x44, 0x35, 0xf1, 0xad, 0x32, 0x98, 0xf0, 0x38, 0x00,
            0x10, 0x03,
        ],
        major: 2,
        minor: 0,
    };

    fn json(e: &DcerpcEvent) -> serde_json::Value {
        serde_json::to_value(e).unwrap()
    }

    #[test]
    fn bind_then_call_as_suricata_logs_them() {
        let mut log = TxLog::default();
        let offered = [(0, SVCCTL), (1, SVCCTL)];
        assert_eq!(log.pdu(BIND, 1, 0, (0, 0), 0, &offered, &[]), Some(0));
        assert_eq!(log.take_done().count(), 0);
        assert_eq!(log.pdu(BIND_ACK, 1, 0, (0, 0), 0, &[], &[2, 0]), Some(0));
        let bind: Vec<_> = log.take_done().collect();
        let iface = |r: u16| serde_json::json!({"uuid": "367abb81-9844-35f1-ad32-98f038001003", "version": "2.0", "ack_result": r});
        assert_eq!(
            json(&bind[0]),
            serde_json::json!({
                "request": "BIND", "response": "BINDACK", "call_id": 1, "rpc_version": "5.0",
                "interfaces": [iface(2), iface(0)]
            })
        );
        // A request in two fragments, answered in two: logged at the first response fragment, with the interface
        // of its context.
        assert_eq!(log.pdu(REQUEST, 2, 0, (1, 15), 100, &[], &[]), Some(1));
        assert_eq!(log.pdu(REQUEST, 2, 0, (1, 15), 20, &[], &[]), Some(1));
        assert_eq!(log.pdu(RESPONSE, 2, 0, (0, 0), 60, &[], &[]), Some(1));
        let call: Vec<_> = log.take_done().collect();
        assert_eq!(
            json(&call[0]),
            serde_json::json!({
                "request": "REQUEST", "response": "RESPONSE", "call_id": 2, "rpc_version": "5.0",
                "req": {"opnum": 15, "frag_cnt": 1, "stub_data_size": 120},
                "res": {"frag_cnt": 1, "stub_data_size": 60},
                "interfaces": [iface(0)]
            })
        );
        assert_eq!(call[0].tx_id, 1);
        // The second response fragment: a transaction of its own, its request lost, logged at the end.
        assert_eq!(log.pdu(RESPONSE, 2, 0, (0, 0), 10, &[], &[]), Some(2));
        assert_eq!(log.take_done().count(), 0);
        // An auth3 belongs to no transaction.
        assert_eq!(log.pdu(16, 3, 0, (0, 0), 0, &[], &[]), None);
        let end: Vec<_> = log.finish().collect();
        assert_eq!(end.len(), 1);
        assert_eq!(
            (end[0].request, end[0].response),
            ("REQUEST_LOST", "RESPONSE")
        );
    }

    /// Named as Suricata 9 names them: a bind's interfaces by service, a request's also by its operation; an
    /// unknown UUID keeps neither key, and records are left as they are unless asked.
    #[test]
    fn interfaces_named_as_suricata_9() {
        let mut log = TxLog::default();
        let unknown = Offered {
            uuid: [7; 16],
            ..SVCCTL
        };
        log.pdu(BIND, 1, 0, (0, 0), 0, &[(0, SVCCTL), (1, unknown)], &[]);
        log.pdu(BIND_ACK, 1, 0, (0, 0), 0, &[], &[0, 0]);
        log.pdu(REQUEST, 2, 0, (0, 15), 8, &[], &[]);
        log.pdu(RESPONSE, 2, 0, (0, 0), 8, &[], &[]);
        log.pdu(REQUEST, 3, 0, (1, 15), 8, &[], &[]);
        log.pdu(RESPONSE, 3, 0, (0, 0), 8, &[], &[]);
        let mut done: Vec<_> = log.take_done().collect();
        assert!(done.iter().all(|e| {
            e.interfaces
                .iter()
                .all(|i| i.service.is_none() && i.procedure.is_none())
        }));
        done.iter_mut().for_each(DcerpcEvent::name_interfaces);
        let svcctl = "367abb81-9844-35f1-ad32-98f038001003";
        let other = "07070707-0707-0707-0707-070707070707";
        assert_eq!(
            json(&done[0])["interfaces"],
            serde_json::json!([
                {"uuid": svcctl, "version": "2.0", "ack_result": 0, "service": "svcctl"},
                {"uuid": other, "version": "2.0", "ack_result": 0}
            ])
        );
        assert_eq!(
            json(&done[1])["interfaces"],
            serde_json::json!([{"uuid": svcctl, "version": "2.0", "ack_result": 0, "service": "svcctl",
                "procedure": "OpenSCManagerW"}])
        );
        assert_eq!(
            json(&done[2])["interfaces"],
            serde_json::json!([{"uuid": other, "version": "2.0", "ack_result": 0}])
        );
    }

    /// The capture of suricata-verify `dcerpc-ctxids`, in short: context 2 offered at the bind (rejected, 3), then
    /// by two alter_contexts of one call id (rejected, 2; then accepted). Each answer goes to the offers it answers
    /// (the second alter_context's to the second's), and a request on context 2 names the accepted interface only.
    #[test]
    fn rejected_offers_bind_nothing() {
        let mut log = TxLog::default();
        let other = Offered {
            uuid: [1; 16],
            ..SVCCTL
        };
        log.pdu(BIND, 2, 0, (0, 0), 0, &[(0, SVCCTL), (2, SVCCTL)], &[]);
        log.pdu(BIND_ACK, 2, 0, (0, 0), 0, &[], &[0, 3]);
        log.pdu(
            ALTER_CONTEXT,
            3,
            0,
            (0, 0),
            0,
            &[(2, other), (3, other)],
            &[],
        );
        log.pdu(ALTER_CONTEXT_RESP, 3, 0, (0, 0), 0, &[], &[2, 0]);
        log.pdu(ALTER_CONTEXT, 3, 0, (0, 0), 0, &[(2, other)], &[]);
        log.pdu(ALTER_CONTEXT_RESP, 3, 0, (0, 0), 0, &[], &[0]);
        log.pdu(REQUEST, 4, 0, (2, 3), 8, &[], &[]);
        log.pdu(RESPONSE, 4, 0, (0, 0), 8, &[], &[]);
        log.pdu(REQUEST, 5, 0, (0, 3), 8, &[], &[]);
        log.pdu(RESPONSE, 5, 0, (0, 0), 8, &[], &[]);
        let done: Vec<_> = log.take_done().collect();
        let on = |call: u32| {
            let e = done.iter().find(|e| e.call_id == Some(call)).unwrap();
            json(e)["interfaces"].clone()
        };
        let other_uuid = "01010101-0101-0101-0101-010101010101";
        assert_eq!(
            on(4),
            serde_json::json!([{"uuid": other_uuid, "version": "2.0", "ack_result": 0}])
        );
        assert_eq!(
            on(5),
            serde_json::json!([{"uuid": "367abb81-9844-35f1-ad32-98f038001003", "version": "2.0", "ack_result": 0}])
        );
        // The bind's record still lists every offer with its answer.
        assert_eq!(on(2)[1]["ack_result"], 3);
    }

    #[test]
    fn unanswered_and_gaps() {
        let mut log = TxLog::default();
        log.pdu(REQUEST, 7, 1, (0, 3), 8, &[], &[]);
        log.pdu(ALTER_CONTEXT, 8, 1, (0, 0), 0, &[(0, SVCCTL)], &[]);
        // The alter_context's answer pairs with it, not with the request of another call id; an alter_context
        // lists no interfaces.
        log.pdu(ALTER_CONTEXT_RESP, 8, 1, (0, 0), 0, &[], &[0]);
        let done: Vec<_> = log.take_done().collect();
        assert_eq!(done.len(), 1);
        assert_eq!(
            json(&done[0]),
            serde_json::json!({"request": "ALTER_CONTEXT", "response": "ALTER_CONTEXT_RESP",
                "call_id": 8, "rpc_version": "5.1"})
        );
        log.gap(false);
        let lost: Vec<_> = log.take_done().collect();
        assert_eq!(
            (lost[0].request, lost[0].response, lost[0].call_id),
            ("REQUEST", "UNREPLIED", Some(7))
        );
        // A response whose request was never seen, then a gap to the server: its request is lost.
        log.pdu(RESPONSE, 9, 0, (0, 0), 4, &[], &[]);
        log.gap(true);
        let lost: Vec<_> = log.take_done().collect();
        assert_eq!(
            (lost[0].request, lost[0].response),
            ("REQUEST_LOST", "RESPONSE")
        );
        assert_eq!(log.finish().count(), 0);
    }

    #[test]
    fn open_transactions_and_interfaces_are_bounded() {
        let mut log = TxLog::default();
        for call in 0..(MAX_TXS as u32 + 10) {
            log.pdu(REQUEST, call, 0, (0, 0), 0, &[], &[]);
            log.pdu(BIND, call, 0, (0, 0), 0, &[(0, SVCCTL)], &[]);
        }
        assert_eq!(log.txs.len(), MAX_TXS);
        assert_eq!(log.bound.len(), MAX_INTERFACES);
        assert_eq!(log.take_done().count(), MAX_TXS + 20);
        assert_eq!(log.finish().count(), MAX_TXS);
    }

    /// A connectionless request and its response (big-endian, as scapy writes them), then a fragmented request
    /// left unanswered.
    #[test]
    fn connectionless_calls() {
        let dgram = |ptype: u8, flags1: u8, seq: u32, body: &[u8]| {
            let mut d = vec![4, ptype, flags1, 0, 0, 0, 0, 0];
            d.extend_from_slice(&[0; 32]);
            d.extend_from_slice(&[
                0x4e, 0x32, 0xdc, 0xdd, 0xd8, 0x03, 0x4e, 0xaf, 0x86, 0xee, 0x76, 0x50, 0xdf, 0x59,
                0x9e, 0x40,
            ]);
            d.extend_from_slice(&[0; 8]);
            d.extend_from_slice(&seq.to_be_bytes());
            d.extend_from_slice(&7u16.to_be_bytes()); // opnum
            d.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
            d.extend_from_slice(&(body.len() as u16).to_be_bytes());
            d.extend_from_slice(&[0; 4]);
            d.extend_from_slice(body);
            d
        };
        let mut log = UdpTxLog::default();
        assert!(log.datagram(&dgram(REQUEST, 1, 2, b"")));
        assert!(log.datagram(&dgram(RESPONSE, 1, 2, b"abc")));
        let done: Vec<_> = log.take_done().collect();
        assert_eq!(
            json(&done[0]),
            serde_json::json!({
                "request": "REQUEST", "response": "RESPONSE", "rpc_version": "4.0",
                "activityuuid": "dddc324e-03d8-af4e-86ee-7650df599e40", "seqnum": 2,
                "req": {"opnum": 7, "frag_cnt": 1, "stub_data_size": 0},
                "res": {"frag_cnt": 1, "stub_data_size": 3}
            })
        );
        assert!(log.datagram(&dgram(REQUEST, PFCL1_FRAG, 3, b"ab")));
        assert!(log.datagram(&dgram(REQUEST, PFCL1_FRAG | PFCL1_LASTFRAG, 3, b"c")));
        assert!(
            !log.datagram(&dgram(9, 0, 3, b"")),
            "a fack makes no transaction"
        );
        assert!(!log.datagram(&dgram(REQUEST, 0, 3, b"")[..79]));
        assert_eq!(log.take_done().count(), 0);
        let end: Vec<_> = log.finish().collect();
        assert_eq!(
            (end[0].response, end[0].req.unwrap().frag_cnt),
            ("UNREPLIED", 2)
        );
        assert_eq!(end[0].req.unwrap().stub_data_size, 3);
    }
}
