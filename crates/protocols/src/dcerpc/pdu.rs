//! Connection-oriented DCE/RPC (C706 chapter 12, MS-RPCE) over TCP: PDU framing, the interfaces a bind names and
//! the server accepts, and each call's request and response stub, for the rules (`dcerpc.iface`, `dcerpc.opnum`,
//! `dcerpc.stub_data`).
//!
//! Every PDU starts with a 16-byte header: version 5, minor version, PDU type, flags (`0x01` first fragment, `0x02`
//! last fragment, `0x80` object UUID present), the data representation (byte 4 bit `0x10`: integers little-endian),
//! the fragment length, the authentication length and the call id. PDUs are framed by the fragment length, across
//! segments and several to a segment. A `bind` or `alter_context` (read from a first fragment only) lists
//! presentation contexts (context id, the
//! interface UUID and version); its `bind_ack` / `alter_context_resp` answers each in order, and the contexts
//! accepted (result 0) are the flow's interfaces, as Suricata keeps them. A `request` names its context and operation
//! number; its stub (the fragments' bodies joined, without the authentication trailer) is handed over at its last
//! fragment, with the interface of its context; a `response`'s stub likewise, under the same call.
//!
//! Costs and caps: a partial PDU is buffered up to its fragment length (at most 65,535 bytes); a call's stub is kept
//! up to [`MAX_STUB`] bytes (the rest is counted as cut); at most [`MAX_CONTEXTS`] contexts and [`MAX_CALLS`] open
//! calls per flow (the oldest call is forgotten). A header that is not DCE/RPC ends the parsing of that direction;
//! a reassembly gap drops the partial PDU and the calls in progress, and parsing resumes at the next header that
//! reads as one.

use std::collections::VecDeque;

/// A call's stub kept for the rules, per direction.
pub const MAX_STUB: usize = 1 << 20;
/// Presentation contexts remembered per flow.
pub const MAX_CONTEXTS: usize = 64;
/// Calls in progress remembered per flow.
pub const MAX_CALLS: usize = 16;

use super::log::{
    ALTER_CONTEXT, ALTER_CONTEXT_RESP, BIND, BIND_ACK, Offered, REQUEST, RESPONSE, TxLog,
};

const HEADER: usize = 16;
const FIRST_FRAG: u8 = 0x01;
const LAST_FRAG: u8 = 0x02;
const OBJECT_UUID: u8 = 0x80;

/// An interface: its UUID in the textual byte order (`367abb81-9844-...` is `36 7a bb 81 98 44 ...`) and its major
/// version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    pub uuid: [u8; 16],
    pub version: u16,
}

/// One side of a call, complete: what the rules see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcerpcCall<'a> {
    /// The call, numbered per flow in the order requests began (its response has the request's number).
    pub tx_id: u64,
    /// A request (to the server) or a response.
    pub to_server: bool,
    /// The interface of the call's presentation context, when a bind named it and the server accepted it.
    pub iface: Option<Interface>,
    /// The request's operation number.
    pub opnum: u16,
    /// Whether the first PDU seen of this call was its first fragment.
    pub first_frag: bool,
    /// The data representation's integer byte order (`byte_test ... dce` reads with it).
    pub little_endian: bool,
    /// The stub data, every fragment's body joined.
    pub stub: &'a [u8],
}

/// A call whose request (and perhaps response) is in progress.
#[derive(Debug)]
struct Call {
    call_id: u32,
    tx_id: u64,
    ctx_id: u16,
    opnum: u16,
    first_frag: [bool; 2],
    stub: [Vec<u8>; 2],
    /// The side's stub is being collected (its first fragment or a later one was seen, its last not yet).
    open: [bool; 2],
}

/// One direction's framing state.
#[derive(Debug, Default)]
struct Side {
    buf: Vec<u8>,
    /// Not DCE/RPC any more (until a gap resynchronises).
    broken: bool,
}

/// The connection-oriented parser's state for one flow.
#[derive(Debug, Default)]
pub struct CoState {
    sides: [Side; 2],
    /// Accepted contexts: id → interface.
    contexts: Vec<(u16, Interface)>,
    /// Contexts a bind or alter_context offered, awaiting the answer, in order.
    offered: Vec<(u16, Interface)>,
    calls: VecDeque<Call>,
    next_tx: u64,
    /// The EVE `dcerpc` transactions (a flow of DCE/RPC over TCP; not the pipes of an SMB flow, whose calls
    /// Suricata logs in its `smb` records).
    pub records: Option<Box<TxLog>>,
    /// Stub bytes beyond [`MAX_STUB`] not kept, PDUs that did not read as DCE/RPC.
    pub cut_bytes: u64,
    pub malformed: u64,
}

fn u16_at(d: &[u8], at: usize, little: bool) -> Option<u16> {
    let b: [u8; 2] = d.get(at..at + 2)?.try_into().ok()?;
    Some(if little {
        u16::from_le_bytes(b)
    } else {
        u16::from_be_bytes(b)
    })
}

fn u32_at(d: &[u8], at: usize, little: bool) -> Option<u32> {
    let b: [u8; 4] = d.get(at..at + 4)?.try_into().ok()?;
    Some(if little {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    })
}

/// A UUID as the wire carries it (its first three fields in the data representation's byte order), in the
/// textual byte order.
fn uuid_at(d: &[u8], at: usize, little: bool) -> Option<[u8; 16]> {
    let u: [u8; 16] = d.get(at..at + 16)?.try_into().ok()?;
    if !little {
        return Some(u);
    }
    let mut o = u;
    o[..4].copy_from_slice(&[u[3], u[2], u[1], u[0]]);
    o[4..6].copy_from_slice(&[u[5], u[4]]);
    o[6..8].copy_from_slice(&[u[7], u[6]]);
    Some(o)
}

/// Whether `d` begins with what reads as a connection-oriented header (version 5.0/5.1, a known PDU type, a
/// plausible data representation and a fragment length of at least a header).
fn header_ok(d: &[u8]) -> Option<usize> {
    if d.len() < HEADER || d[0] != 5 || d[1] > 1 || d[2] > 19 || d[4] & 0xee != 0 {
        return None;
    }
    let len = usize::from(u16_at(d, 8, d[4] & 0x10 != 0)?);
    (len >= HEADER).then_some(len)
}

/// Whether `d` starts with a connection-oriented DCE/RPC PDU header (what a named pipe's first bytes are when it
/// carries DCE/RPC).
pub fn starts_pdu(d: &[u8]) -> bool {
    header_ok(d).is_some()
}

/// A presentation context a bind offers.
#[derive(Clone, Copy, Debug)]
struct Context {
    ctx_id: u16,
    iface: Offered,
}

/// A bind_ack's or alter_context_resp's results, one per context it answers, in order.
fn results_in(p: &[u8], little: bool) -> Vec<u16> {
    let Some(addr_len) = u16_at(p, 24, little) else {
        return Vec::new();
    };
    // The secondary address, then padding to a 4-byte boundary.
    let at = (26 + usize::from(addr_len)).next_multiple_of(4);
    let n = usize::from(p.get(at).copied().unwrap_or(0));
    (0..n)
        .map_while(|i| u16_at(p, at + 4 + 24 * i, little))
        .collect()
}

impl CoState {
    /// A parser that also keeps the flow's transactions for EVE `dcerpc` records ([`CoState::records`]).
    pub fn with_records() -> Self {
        CoState {
            records: Some(Box::default()),
            ..Default::default()
        }
    }

    /// In-order bytes of one direction (`to_server`); complete calls go to `out`.
    pub fn feed(&mut self, to_server: bool, data: &[u8], out: &mut dyn FnMut(&DcerpcCall<'_>)) {
        let si = usize::from(!to_server);
        if self.sides[si].broken {
            return;
        }
        let mut rest = data;
        // The common case, whole PDUs in one segment, is parsed in place; a PDU split over segments is buffered.
        loop {
            let side = &mut self.sides[si];
            if !side.buf.is_empty() {
                // Complete the header, then the PDU.
                let need_hdr = HEADER.saturating_sub(side.buf.len());
                let take = need_hdr.min(rest.len());
                side.buf.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if side.buf.len() < HEADER {
                    return;
                }
                let Some(len) = header_ok(&side.buf) else {
                    self.break_side(si);
                    return;
                };
                let side = &mut self.sides[si];
                let need = len.saturating_sub(side.buf.len());
                let take = need.min(rest.len());
                side.buf.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if side.buf.len() < len {
                    return;
                }
                let pdu = std::mem::take(&mut self.sides[si].buf);
                self.pdu(to_server, &pdu, out);
                // Keep the allocation for the next split PDU.
                let mut pdu = pdu;
                pdu.clear();
                self.sides[si].buf = pdu;
                continue;
            }
            if rest.is_empty() {
                return;
            }
            if rest.len() < HEADER {
                self.sides[si].buf.extend_from_slice(rest);
                return;
            }
            let Some(len) = header_ok(rest) else {
                self.break_side(si);
                return;
            };
            if rest.len() < len {
                self.sides[si].buf.extend_from_slice(rest);
                return;
            }
            let (pdu, tail) = rest.split_at(len);
            self.pdu(to_server, pdu, out);
            rest = tail;
        }
    }

    fn break_side(&mut self, si: usize) {
        self.malformed += 1;
        let side = &mut self.sides[si];
        side.broken = true;
        side.buf = Vec::new();
    }

    /// `len` bytes of one direction will never arrive: the partial PDU and the calls in progress are dropped, and
    /// the direction is read again from the next data (which must begin with a header).
    pub fn gap(&mut self, to_server: bool) {
        let si = usize::from(!to_server);
        let side = &mut self.sides[si];
        side.buf.clear();
        side.broken = false;
        for c in &mut self.calls {
            c.open[si] = false;
            c.stub[si].clear();
        }
        if let Some(r) = self.records.as_deref_mut() {
            r.gap(to_server);
        }
    }

    /// One whole PDU.
    fn pdu(&mut self, to_server: bool, p: &[u8], out: &mut dyn FnMut(&DcerpcCall<'_>)) {
        let little = p[4] & 0x10 != 0;
        let (minor, ptype, flags) = (p[1], p[2], p[3]);
        let Some(call_id) = u32_at(p, 12, little) else {
            return;
        };
        let auth_len = usize::from(u16_at(p, 10, little).unwrap_or(0));
        // The authentication trailer (an 8-byte header and the token) ends the PDU.
        let body_end = if auth_len > 0 {
            p.len().saturating_sub(auth_len + 8)
        } else {
            p.len()
        };
        let req_start = if flags & OBJECT_UUID != 0 { 40 } else { 24 };
        // The transaction record first: a call's id for the rules is its transaction's.
        let mut offered = Vec::new();
        let mut results = Vec::new();
        let mut tx = None;
        if self.records.is_some() {
            let (opnum, stub) = match ptype {
                BIND | ALTER_CONTEXT => {
                    offered = self.offered_in(p, little);
                    (0, 0)
                }
                BIND_ACK | ALTER_CONTEXT_RESP => {
                    results = results_in(p, little);
                    (0, 0)
                }
                // Suricata's stub sizes: what follows a request's 8-byte header (an object UUID included), and
                // everything after a response's common header (its own 8 bytes included); authentication too.
                REQUEST => (
                    u16_at(p, 22, little).unwrap_or(0),
                    p.len().saturating_sub(HEADER + 8),
                ),
                RESPONSE => (0, p.len().saturating_sub(HEADER)),
                _ => (0, 0),
            };
            let ifaces: Vec<(u16, Offered)> = offered.iter().map(|c| (c.ctx_id, c.iface)).collect();
            let req = (u16_at(p, 20, little).unwrap_or(0), opnum);
            if let Some(r) = self.records.as_deref_mut() {
                tx = r.pdu(ptype, call_id, minor, req, stub, &ifaces, &results);
            }
        }
        match (ptype, to_server) {
            // A bind is read from its first fragment only: one without the flag binds nothing, as Suricata (since
            // 8.0.5) reads it.
            (BIND | ALTER_CONTEXT, true) if flags & FIRST_FRAG != 0 => {
                if self.records.is_none() {
                    offered = self.offered_in(p, little);
                }
                self.offered = offered
                    .iter()
                    .map(|o| {
                        (
                            o.ctx_id,
                            Interface {
                                uuid: o.iface.uuid,
                                version: o.iface.major,
                            },
                        )
                    })
                    .collect();
            }
            (BIND_ACK | ALTER_CONTEXT_RESP, false) => {
                if self.records.is_none() {
                    results = results_in(p, little);
                }
                self.answer(&results);
            }
            (REQUEST, true) => {
                let (Some(ctx_id), Some(opnum)) = (u16_at(p, 20, little), u16_at(p, 22, little))
                else {
                    self.malformed += 1;
                    return;
                };
                let stub = p.get(req_start..body_end.max(req_start)).unwrap_or(&[]);
                self.fragment(
                    true,
                    call_id,
                    Some((ctx_id, opnum)),
                    flags,
                    little,
                    stub,
                    tx,
                    out,
                );
            }
            (RESPONSE, false) => {
                let stub = p.get(24..body_end.max(24)).unwrap_or(&[]);
                self.fragment(false, call_id, None, flags, little, stub, tx, out);
            }
            _ => {}
        }
    }

    /// A bind's or alter_context's presentation contexts, in order (as many as read whole).
    fn offered_in(&mut self, p: &[u8], little: bool) -> Vec<Context> {
        let mut v = Vec::new();
        let n = p.get(24).copied().unwrap_or(0);
        let mut at = 28;
        for _ in 0..n {
            let (Some(ctx_id), Some(&n_syn)) = (u16_at(p, at, little), p.get(at + 2)) else {
                self.malformed += 1;
                break;
            };
            let (Some(uuid), Some(major), Some(minor)) = (
                uuid_at(p, at + 4, little),
                u16_at(p, at + 20, little),
                u16_at(p, at + 22, little),
            ) else {
                self.malformed += 1;
                break;
            };
            v.push(Context {
                ctx_id,
                iface: Offered { uuid, major, minor },
            });
            at += 24 + 20 * usize::from(n_syn);
        }
        v
    }

    /// A bind_ack or alter_context_resp (its `results`, in order): the offered contexts it accepts become the
    /// flow's.
    fn answer(&mut self, results: &[u16]) {
        let offered = std::mem::take(&mut self.offered);
        for ((id, iface), result) in offered.into_iter().zip(results) {
            if *result != 0 {
                continue;
            }
            self.contexts.retain(|c| c.0 != id);
            if self.contexts.len() < MAX_CONTEXTS {
                self.contexts.push((id, iface));
            }
        }
    }

    /// One fragment of a request (`req`: its context and opnum) or a response.
    #[allow(clippy::too_many_arguments)]
    fn fragment(
        &mut self,
        to_server: bool,
        call_id: u32,
        req: Option<(u16, u16)>,
        flags: u8,
        little: bool,
        stub: &[u8],
        tx: Option<u64>,
        out: &mut dyn FnMut(&DcerpcCall<'_>),
    ) {
        let si = usize::from(!to_server);
        let pos = self.calls.iter().rposition(|c| c.call_id == call_id);
        let ci = match (pos, req) {
            // A request fragment continuing an open request of this call.
            (Some(i), Some(_)) if self.calls[i].open[0] => i,
            (Some(i), None) => i,
            (_, Some((ctx_id, opnum))) => {
                let id = tx.unwrap_or(self.next_tx);
                if self.calls.len() >= MAX_CALLS {
                    self.calls.pop_front();
                }
                self.calls.push_back(Call {
                    call_id,
                    tx_id: id,
                    ctx_id,
                    opnum,
                    first_frag: [false; 2],
                    stub: [Vec::new(), Vec::new()],
                    open: [false; 2],
                });
                self.next_tx = id + 1;
                self.calls.len() - 1
            }
            // A response to a call not seen: nothing to tie it to.
            (None, None) => return,
        };
        let call = &mut self.calls[ci];
        if !call.open[si] {
            call.open[si] = true;
            call.first_frag[si] = flags & FIRST_FRAG != 0;
            call.stub[si].clear();
        }
        let room = MAX_STUB.saturating_sub(call.stub[si].len());
        let keep = stub.len().min(room);
        call.stub[si].extend_from_slice(&stub[..keep]);
        self.cut_bytes += (stub.len() - keep) as u64;
        if flags & LAST_FRAG == 0 {
            return;
        }
        call.open[si] = false;
        let ctx_id = call.ctx_id;
        let iface = self.contexts.iter().find(|c| c.0 == ctx_id).map(|c| c.1);
        let call = &self.calls[ci];
        out(&DcerpcCall {
            tx_id: call.tx_id,
            to_server,
            iface,
            opnum: call.opnum,
            first_frag: call.first_frag[si],
            little_endian: little,
            stub: &call.stub[si],
        });
        // A response completes the call.
        if !to_server {
            self.calls.remove(ci);
        } else if let Some(c) = self.calls.get_mut(ci) {
            c.stub[0] = Vec::new();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const SVCCTL: [u8; 16] = [
        0x36, 0x7a, 0xbb, 0x81, 0x98, 0x44, 0x35, 0xf1, 0xad, 0x32, 0x98, 0xf0, 0x38, 0x00, 0x10,
        0x03,
    ];

    fn header(ptype: u8, flags: u8, len: usize, call_id: u32) -> Vec<u8> {
        let mut h = vec![5, 0, ptype, flags, 0x10, 0, 0, 0];
        h.extend_from_slice(&(len as u16).to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(&call_id.to_le_bytes());
        h
    }

    fn wire_uuid(u: [u8; 16]) -> [u8; 16] {
        let mut o = u;
        o[..4].copy_from_slice(&[u[3], u[2], u[1], u[0]]);
        o[4..6].copy_from_slice(&[u[5], u[4]]);
        o[6..8].copy_from_slice(&[u[7], u[6]]);
        o
    }

    pub(crate) fn bind(call_id: u32, ctx: u16, uuid: [u8; 16], version: u16) -> Vec<u8> {
        let mut body = vec![0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0, 1, 0, 0, 0];
        body.extend_from_slice(&ctx.to_le_bytes());
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&wire_uuid(uuid));
        body.extend_from_slice(&version.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&[0x11; 20]);
        let mut p = header(BIND, 3, HEADER + body.len(), call_id);
        p.extend_from_slice(&body);
        p
    }

    pub(crate) fn bind_ack(call_id: u32, result: u16) -> Vec<u8> {
        let mut body = vec![0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0];
        body.extend_from_slice(&4u16.to_le_bytes());
        body.extend_from_slice(b"135\0");
        body.extend_from_slice(&[0, 0]); // pad to 4
        body.extend_from_slice(&[1, 0, 0, 0]);
        body.extend_from_slice(&result.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&[0x22; 20]);
        let mut p = header(BIND_ACK, 3, HEADER + body.len(), call_id);
        p.extend_from_slice(&body);
        p
    }

    pub(crate) fn request(call_id: u32, flags: u8, ctx: u16, opnum: u16, stub: &[u8]) -> Vec<u8> {
        let mut p = header(REQUEST, flags, 24 + stub.len(), call_id);
        p.extend_from_slice(&(stub.len() as u32).to_le_bytes());
        p.extend_from_slice(&ctx.to_le_bytes());
        p.extend_from_slice(&opnum.to_le_bytes());
        p.extend_from_slice(stub);
        p
    }

    pub(crate) fn response(call_id: u32, flags: u8, stub: &[u8]) -> Vec<u8> {
        let mut p = header(RESPONSE, flags, 24 + stub.len(), call_id);
        p.extend_from_slice(&(stub.len() as u32).to_le_bytes());
        p.extend_from_slice(&[0, 0, 0, 0]);
        p.extend_from_slice(stub);
        p
    }

    type Seen = Vec<(u64, bool, Option<Interface>, u16, bool, Vec<u8>)>;

    fn run(st: &mut CoState, to_server: bool, d: &[u8], seen: &mut Seen) {
        st.feed(to_server, d, &mut |c| {
            seen.push((
                c.tx_id,
                c.to_server,
                c.iface,
                c.opnum,
                c.first_frag,
                c.stub.to_vec(),
            ))
        });
    }

    #[test]
    fn bound_interface_fragments_and_response() {
        let mut st = CoState::default();
        let mut seen = Seen::new();
        run(&mut st, true, &bind(1, 0, SVCCTL, 2), &mut seen);
        run(&mut st, false, &bind_ack(1, 0), &mut seen);
        // A request in two fragments, both in one segment, then split byte by byte.
        let mut two = request(2, FIRST_FRAG, 0, 15, b"abc");
        two.extend_from_slice(&request(2, LAST_FRAG, 0, 15, b"def"));
        for b in two.chunks(1) {
            run(&mut st, true, b, &mut seen);
        }
        run(&mut st, false, &response(2, 3, b"ok"), &mut seen);
        let svcctl = Some(Interface {
            uuid: SVCCTL,
            version: 2,
        });
        assert_eq!(
            seen,
            vec![
                (0, true, svcctl, 15, true, b"abcdef".to_vec()),
                (0, false, svcctl, 15, true, b"ok".to_vec()),
            ]
        );
    }

    #[test]
    fn a_bind_without_its_first_fragment_flag_binds_nothing() {
        let mut st = CoState::default();
        let mut seen = Seen::new();
        let mut b = bind(1, 0, SVCCTL, 2);
        b[3] = 0;
        run(&mut st, true, &b, &mut seen);
        run(&mut st, false, &bind_ack(1, 0), &mut seen);
        run(&mut st, true, &request(2, 3, 0, 1, b"x"), &mut seen);
        assert_eq!(seen, vec![(0, true, None, 1, true, b"x".to_vec())]);
    }

    #[test]
    fn refused_context_and_missed_first_fragment() {
        let mut st = CoState::default();
        let mut seen = Seen::new();
        run(&mut st, true, &bind(1, 0, SVCCTL, 2), &mut seen);
        run(&mut st, false, &bind_ack(1, 2), &mut seen);
        run(&mut st, true, &request(7, LAST_FRAG, 0, 1, b"x"), &mut seen);
        assert_eq!(seen, vec![(0, true, None, 1, false, b"x".to_vec())]);
    }

    #[test]
    fn hostile_input_is_bounded() {
        let mut st = CoState::default();
        let mut seen = Seen::new();
        run(&mut st, true, b"GET / HTTP/1.1\r\n\r\n", &mut seen);
        assert!(seen.is_empty() && st.malformed == 1);
        // A bind claiming more contexts than it carries, a bind_ack with a huge address length.
        let mut st = CoState::default();
        let mut b = bind(1, 0, SVCCTL, 2);
        b[24] = 200;
        run(&mut st, true, &b, &mut seen);
        let mut a = bind_ack(1, 0);
        a[24] = 0xff;
        a[25] = 0xff;
        run(&mut st, false, &a, &mut seen);
        run(&mut st, true, &request(2, 3, 0, 1, b""), &mut seen);
        assert_eq!(seen.len(), 1);
        // A fragment length below the header's size.
        let mut st = CoState::default();
        let mut r = request(2, 3, 0, 1, b"");
        r[8] = 4;
        r[9] = 0;
        run(&mut st, true, &r, &mut seen);
        assert_eq!(st.malformed, 1);
    }

    #[test]
    fn records_pair_calls_and_share_their_ids_with_the_rules() {
        let mut st = CoState::with_records();
        let mut seen = Seen::new();
        run(&mut st, true, &bind(1, 0, SVCCTL, 2), &mut seen);
        run(&mut st, false, &bind_ack(1, 0), &mut seen);
        run(&mut st, true, &request(2, 3, 0, 15, b"abcd"), &mut seen);
        run(&mut st, false, &response(2, 3, b"ok"), &mut seen);
        let recs: Vec<_> = st.records.as_deref_mut().unwrap().take_done().collect();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].request, recs[0].response), ("BIND", "BINDACK"));
        assert_eq!(recs[0].interfaces.len(), 1);
        assert_eq!(recs[0].interfaces[0].version, "2.0");
        assert_eq!((recs[1].request, recs[1].response), ("REQUEST", "RESPONSE"));
        let req = recs[1].req.unwrap();
        // Suricata's sizes: a request's stub after its 8-byte header, a response's with its own 8 bytes.
        assert_eq!((req.opnum, req.stub_data_size), (Some(15), 4));
        assert_eq!(recs[1].res.unwrap().stub_data_size, 10);
        // The call's buffers carry the request's transaction id, the bind's being 0.
        assert!(seen.iter().all(|s| s.0 == 1), "{seen:?}");
        assert_eq!(seen[0].2.map(|i| i.version), Some(2));
    }
}
