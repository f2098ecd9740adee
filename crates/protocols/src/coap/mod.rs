//! CoAP (RFC 7252) over UDP: nDPI's `COAP`.
//!
//! ## The message
//! A 4-byte header (version 1, type CON/NON/ACK/RST, token length 0..=8, a code `class.detail`, a 16-bit message
//! id), the token, options as `delta|length` nibbles with 1- or 2-byte extensions, and after a `0xFF` marker a
//! payload that may not be empty. [`message`] checks all of it to the datagram's last byte: the codes registered by
//! RFC 7252 and RFC 8132 and their extensions (block-wise transfer, FETCH/PATCH, Too Many Requests, Hop Limit Reached), an Empty message (0.00) with no token and nothing
//! after its header, a Reset that is Empty, an Acknowledgement that carries no request, no reserved nibble 15, no
//! option running past the end.
//!
//! ## When it is certain
//! * On the CoAP ports (5683, 5684) either end: one structurally valid message.
//! * On any other port a valid message alone is four weak header bytes plus a structure random bytes often pass,
//!   so the detector waits (`Unsure`) for the other direction to agree: an answer that is itself a valid message
//!   and either acknowledges the request (an ACK or RST with the request's message id; an ACK with a response
//!   echoes the token too) or answers it in a separate message (a response echoing the request's non-empty token).
//!   Sixteen bits of echoed message id on top of two structural checks make a chance match rare; a flow one way
//!   only stays unknown. The engine then flags the flow as a known protocol on a non-standard port, as nDPI does.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The CoAP ports (coap, coaps).
const PORTS: [u16; 2] = [5683, 5684];

/// Message types.
const CON: u8 = 0;
const NON: u8 = 1;
const ACK: u8 = 2;
const RST: u8 = 3;

/// The header and token of a CoAP message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Message type: 0 confirmable, 1 non-confirmable, 2 acknowledgement, 3 reset.
    pub ty: u8,
    /// Code class (0 request or empty, 2 success, 4 client error, 5 server error).
    pub class: u8,
    /// Code detail.
    pub detail: u8,
    pub message_id: u16,
    pub token: &'a [u8],
}

impl Header<'_> {
    /// An Empty message (code 0.00): a ping, a bare acknowledgement or a reset.
    pub fn is_empty(&self) -> bool {
        self.class == 0 && self.detail == 0
    }
    /// A request (a method code 0.01..=0.07).
    pub fn is_request(&self) -> bool {
        self.class == 0 && self.detail != 0
    }
    /// A response (class 2, 4 or 5).
    pub fn is_response(&self) -> bool {
        self.class != 0
    }
}

/// Whether `class.detail` is a code RFC 7252 / RFC 8132 registers for CoAP over UDP.
fn known_code(class: u8, detail: u8) -> bool {
    match class {
        0 => detail <= 7,
        2 => matches!(detail, 1..=5 | 31),
        4 => matches!(detail, 0..=6 | 8 | 9 | 12 | 13 | 15 | 22 | 29),
        5 => matches!(detail, 0..=5 | 8),
        _ => false,
    }
}

/// The header and token of `d` when its first bytes are a valid CoAP header (the options are not walked: `d` may
/// be a copy cut short).
pub fn header(d: &[u8]) -> Option<Header<'_>> {
    let (&b0, &code) = (d.first()?, d.get(1)?);
    let (ver, ty, tkl) = (b0 >> 6, (b0 >> 4) & 3, usize::from(b0 & 0x0f));
    let (class, detail) = (code >> 5, code & 0x1f);
    if ver != 1 || tkl > 8 || !known_code(class, detail) {
        return None;
    }
    let h = Header {
        ty,
        class,
        detail,
        message_id: be16(d, 2)?,
        token: d.get(4..4 + tkl)?,
    };
    let type_fits = match ty {
        RST => h.is_empty(),
        ACK => !h.is_request(),
        _ => true,
    };
    (type_fits && (!h.is_empty() || tkl == 0)).then_some(h)
}

/// The header of `d` when the whole datagram is one well-formed CoAP message: header, token, every option up to the
/// end or to a payload marker followed by at least one byte.
pub fn message(d: &[u8]) -> Option<Header<'_>> {
    let h = header(d)?;
    let mut at = 4 + h.token.len();
    if h.is_empty() {
        return (d.len() == at).then_some(h);
    }
    while let Some(&b) = d.get(at) {
        at += 1;
        if b == 0xff {
            return (d.len() > at).then_some(h);
        }
        let (delta, len) = (b >> 4, b & 0x0f);
        at += ext_len(delta)?;
        let len = match len {
            13 => usize::from(*d.get(at)?) + 13,
            14 => usize::from(be16(d, at)?) + 269,
            15 => return None,
            n => usize::from(n),
        };
        at += ext_len(b & 0x0f)?;
        at = at.checked_add(len).filter(|&end| end <= d.len())?;
    }
    Some(h)
}

/// Bytes of extension a delta or length nibble takes; `None` for the reserved 15.
fn ext_len(nibble: u8) -> Option<usize> {
    match nibble {
        13 => Some(1),
        14 => Some(2),
        15 => None,
        _ => Some(0),
    }
}

/// Whether `answer` answers `request`: an acknowledgement or reset of its message id (an acknowledgement carrying
/// a response echoes its token too), or a separate response with its non-empty token.
fn answers(answer: &Header<'_>, request: &Header<'_>) -> bool {
    let same_token = answer.token == request.token;
    match answer.ty {
        ACK | RST if request.ty == CON => {
            answer.message_id == request.message_id && (answer.is_empty() || same_token)
        }
        CON | NON => {
            request.is_request() && answer.is_response() && !request.token.is_empty() && same_token
        }
        _ => false,
    }
}

/// Detector for CoAP.
pub struct CoapDetector;

impl Detector for CoapDetector {
    fn proto(&self) -> AppProto {
        AppProto::Coap
    }
    fn first_bytes(&self) -> ByteSet {
        // Version 1, any type, token length 0..=8.
        ByteSet::ranges(&[(0x40, 0x48), (0x50, 0x58), (0x60, 0x68), (0x70, 0x78)])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Udp {
            return Probe::NotForUs;
        }
        let Some(this) = message(ctx.data) else {
            return Probe::NotForUs;
        };
        if PORTS.iter().any(|&p| ctx.either_port_is(p)) {
            return Probe::Certain;
        }
        // Off the CoAP ports: the other direction must agree. Its last datagram was a valid message when it was
        // probed (else the detector would be out); `peer` may be cut short, so only its header is read again.
        match header(ctx.peer) {
            Some(peer) if answers(&this, &peer) || answers(&peer, &this) => Probe::Certain,
            _ => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_ports;

    /// CON PUT, token `6f 52 4d`, message id 0x3501, Uri-Path "r" and "Bus", Content-Format 50 (JSON), a JSON
    /// body: built field by field from RFC 7252 section 3.
    fn put() -> Vec<u8> {
        let mut m = vec![0x43, 0x03, 0x35, 0x01, 0x6f, 0x52, 0x4d];
        m.extend_from_slice(&[0xb1, b'r']); // option 11 (Uri-Path), length 1
        m.extend_from_slice(&[0x03, b'B', b'u', b's']); // delta 0: Uri-Path again, length 3
        m.extend_from_slice(&[0x11, 50]); // delta 1: option 12 (Content-Format), length 1
        m.push(0xff);
        m.extend_from_slice(br#"{"a":1}"#);
        m
    }

    /// ACK 2.04 Changed for [`put`]: same message id and token, Location-Path "r".
    fn changed() -> Vec<u8> {
        vec![0x63, 0x44, 0x35, 0x01, 0x6f, 0x52, 0x4d, 0x81, b'r']
    }

    fn probe(d: &[u8], peer: &[u8], ports: (u16, u16)) -> Probe {
        let dir = if peer.is_empty() {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        CoapDetector.probe(&ProbeCtx {
            peer,
            ..ctx_ports(Transport::Udp, dir, d, ports.0, ports.1)
        })
    }

    #[test]
    fn messages_are_checked_to_the_last_byte() {
        let get = [
            0x42, 0x01, 0x12, 0x34, 0xaa, 0xbb, 0xb4, b't', b'e', b'm', b'p',
        ];
        assert!(message(&get).is_some());
        assert!(message(&put()).is_some());
        assert!(message(&changed()).is_some());
        // A ping (CON 0.00) and a reset: nothing after the header.
        assert!(message(&[0x40, 0x00, 0x00, 0x07]).is_some());
        assert!(message(&[0x70, 0x00, 0x00, 0x07]).is_some());
        assert!(message(&[0x40, 0x00, 0x00, 0x07, 0x00]).is_none());
        assert!(
            message(&[0x41, 0x00, 0x00, 0x07, 0x00]).is_none(),
            "empty with a token"
        );
        assert!(
            message(&[0x70, 0x45, 0x00, 0x07]).is_none(),
            "reset with a code"
        );
        assert!(
            message(&[0x60, 0x01, 0x00, 0x07]).is_none(),
            "ACK carrying a request"
        );
        assert!(
            message(&[0x82, 0x01, 0x12, 0x34, 0, 0]).is_none(),
            "version 2"
        );
        assert!(
            message(&[0x49, 0x01, 0x12, 0x34]).is_none(),
            "token length 9"
        );
        assert!(message(&[0x40, 0x21, 0x12, 0x34]).is_none(), "class 1");
        assert!(message(&[0x40, 0x41, 0x00, 0x01]).is_some(), "2.01 Created");
        assert!(
            message(&[0x40, 0x51, 0x00, 0x01]).is_none(),
            "2.17 is not registered"
        );
        let mut cut = get.to_vec();
        cut.pop();
        assert!(message(&cut).is_none(), "an option running past the end");
        let mut marker = get.to_vec();
        marker.push(0xff);
        assert!(
            message(&marker).is_none(),
            "a payload marker with no payload"
        );
        assert!(
            message(&[0x40, 0x01, 0, 1, 0xf1, 0]).is_none(),
            "delta nibble 15"
        );
        assert!(
            message(&[0x40, 0x01, 0, 1, 0x1f]).is_none(),
            "length nibble 15"
        );
        // Extended delta (13 + 1 = 14) and length (13 + 2 = 15).
        let mut long = vec![0x40, 0x01, 0, 1, 0xdd, 1, 2];
        long.extend_from_slice(&[b'x'; 15]);
        assert!(message(&long).is_some());
        long.pop();
        assert!(message(&long).is_none());
        assert!(message(&[]).is_none() && message(&[0x40]).is_none());
    }

    #[test]
    fn certain_on_its_ports_from_one_message() {
        assert_eq!(probe(&put(), &[], (40000, 5683)), Probe::Certain);
        assert_eq!(probe(&put(), &[], (5684, 40000)), Probe::Certain);
        assert_eq!(
            probe(&[0x82, 0x01, 0x12, 0x34], &[], (40000, 5683)),
            Probe::NotForUs
        );
    }

    #[test]
    fn elsewhere_the_answer_must_agree() {
        let ports = (50311, 17500);
        assert_eq!(probe(&put(), &[], ports), Probe::Unsure);
        assert_eq!(probe(&changed(), &put(), ports), Probe::Certain);
        // An answer with another message id, or another token, or one that is no CoAP message.
        let mut other_id = changed();
        other_id[3] ^= 1;
        assert_eq!(probe(&other_id, &put(), ports), Probe::Unsure);
        let mut other_token = changed();
        other_token[6] ^= 1;
        assert_eq!(probe(&other_token, &put(), ports), Probe::Unsure);
        assert_eq!(
            probe(&[0x17, 0xfe, 0xfd, 0], &put(), ports),
            Probe::NotForUs
        );
        // A bare ACK of the message id; a separate NON response with the token.
        assert_eq!(
            probe(&[0x60, 0x00, 0x35, 0x01], &put(), ports),
            Probe::Certain
        );
        let separate = [0x53, 0x45, 0x99, 0x99, 0x6f, 0x52, 0x4d, 0xff, b'x'];
        assert_eq!(probe(&separate, &put(), ports), Probe::Certain);
        // Two requests do not answer each other.
        assert_eq!(probe(&put(), &put(), ports), Probe::Unsure);
        // The agreement also holds when the answer came first in the flow (picked up late).
        assert_eq!(probe(&put(), &changed(), ports), Probe::Certain);
        // Not on TCP (CoAP over TCP frames messages differently).
        let m = put();
        let tcp = ctx_ports(Transport::Tcp, Direction::ToServer, &m, 40000, 5683);
        assert_eq!(CoapDetector.probe(&tcp), Probe::NotForUs);
    }
}
