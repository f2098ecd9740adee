//! The Kerberos 5 messages of RFC 4120 section 5 that a KDC exchange carries, read with [`super::der`]: AS-REQ and
//! TGS-REQ (`KDC-REQ`: the request body's client and server names, realm and requested encryption types), AS-REP and
//! TGS-REP (`KDC-REP`: the client's name and realm, the ticket's server name and encryption type, the reply's own
//! encryption type) and KRB-ERROR (the error code, the client's realm and name when present, the server's name).
//! AP-REQ and AP-REP travel inside other protocols and are only typed here; [`ap_req_ticket`] reads an AP-REQ's
//! ticket for the protocols that carry one.
//!
//! Hostile input: every field is read through bounded DER elements; name components past [`MAX_COMPONENTS`] and
//! encryption types past [`MAX_ETYPES`] are dropped (counted by the caller through [`Krb5Message::cut`]).

use super::der::{self, Elements};

/// Most components kept of one principal name (`krbtgt/REALM` has two; Kerberos names rarely have more than three).
pub const MAX_COMPONENTS: usize = 16;
/// Most requested encryption types kept (clients send a handful).
pub const MAX_ETYPES: usize = 32;

/// Message types (application tag numbers).
pub const AS_REQ: u8 = 10;
pub const AS_REP: u8 = 11;
pub const TGS_REQ: u8 = 12;
pub const TGS_REP: u8 = 13;
pub const AP_REQ: u8 = 14;
pub const AP_REP: u8 = 15;
pub const KRB_ERROR: u8 = 30;

/// A principal name: its components (`["krbtgt", "EXAMPLE.COM"]`), as sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Principal {
    pub components: Vec<Vec<u8>>,
}

impl Principal {
    /// The name as Suricata writes it: the components joined by `/` (lossy UTF-8).
    pub fn joined(&self) -> String {
        let parts: Vec<String> = self
            .components
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        parts.join("/")
    }
}

/// What a message says, as far as the rules and EVE read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Krb5Message {
    /// The application tag number (10 AS-REQ ... 30 KRB-ERROR).
    pub msg_type: u8,
    /// The client's name (a request's body, a reply, an error that names it).
    pub cname: Option<Principal>,
    /// A request body's realm, a reply's client realm, an error's client realm.
    pub realm: Option<Vec<u8>>,
    /// The server's name (a request body's, a reply's ticket's, an error's).
    pub sname: Option<Principal>,
    /// A request's encryption types, in the client's order of preference.
    pub etypes: Vec<i32>,
    /// A reply's `enc-part` encryption type.
    pub etype: Option<i32>,
    /// A reply's ticket's `enc-part` encryption type.
    pub ticket_etype: Option<i32>,
    /// A KRB-ERROR's error code.
    pub error_code: Option<i32>,
    /// Components or encryption types dropped past the caps.
    pub cut: bool,
}

/// Parses a whole message. `None` when it is not one of the KDC messages above, or its required fields are missing
/// or malformed; an AP-REQ or AP-REP is returned with its type only.
pub fn parse(d: &[u8]) -> Option<Krb5Message> {
    let (outer, _) = der::element(d)?;
    // APPLICATION class, constructed.
    if outer.tag & 0xe0 != 0x60 {
        return None;
    }
    let msg_type = outer.tag & 0x1f;
    let (seq, _) = der::expect(outer.body, der::SEQUENCE)?;
    let f = der::fields(seq)?;
    let mut m = Krb5Message {
        msg_type,
        ..Krb5Message::default()
    };
    match msg_type {
        AS_REQ | TGS_REQ => {
            // KDC-REQ: pvno [1], msg-type [2], padata [3], req-body [4].
            check_header(f[1], f[2], msg_type)?;
            let (body, _) = der::expect(f[4]?, der::SEQUENCE)?;
            let b = der::fields(body)?;
            m.cname = optional(b[1], |p| principal(p, &mut m.cut))?;
            m.realm = Some(der::string(b[2]?)?.to_vec());
            m.sname = optional(b[3], |p| principal(p, &mut m.cut))?;
            let (etypes, _) = der::expect(b[8]?, der::SEQUENCE)?;
            let mut it = Elements::new(etypes);
            for e in it.by_ref() {
                if m.etypes.len() == MAX_ETYPES {
                    m.cut = true;
                    break;
                }
                m.etypes.push(int_body(e)?);
            }
            if !it.ok() {
                return None;
            }
        }
        AS_REP | TGS_REP => {
            // KDC-REP: pvno [0], msg-type [1], padata [2], crealm [3], cname [4], ticket [5], enc-part [6].
            check_header(f[0], f[1], msg_type)?;
            m.realm = Some(der::string(f[3]?)?.to_vec());
            m.cname = Some(principal(f[4]?, &mut m.cut)?);
            // Ticket ::= [APPLICATION 1] SEQUENCE { tkt-vno [0], realm [1], sname [2], enc-part [3] }.
            let (ticket, _) = der::expect(f[5]?, der::app(1))?;
            let (ticket, _) = der::expect(ticket, der::SEQUENCE)?;
            let t = der::fields(ticket)?;
            m.sname = Some(principal(t[2]?, &mut m.cut)?);
            m.ticket_etype = Some(enc_type(t[3]?)?);
            m.etype = Some(enc_type(f[6]?)?);
        }
        KRB_ERROR => {
            // KRB-ERROR: pvno [0], msg-type [1], ..., error-code [6], crealm [7], cname [8], realm [9],
            // sname [10], ...
            check_header(f[0], f[1], msg_type)?;
            m.error_code = Some(der::int32(f[6]?)?);
            m.realm = optional(f[7], |r| der::string(r).map(<[u8]>::to_vec))?;
            m.cname = optional(f[8], |p| principal(p, &mut m.cut))?;
            m.sname = Some(principal(f[10]?, &mut m.cut)?);
        }
        AP_REQ | AP_REP => check_header(f[0], f[1], msg_type)?,
        _ => return None,
    }
    Some(m)
}

/// The realm and server name of the ticket an AP-REQ carries (RFC 4120 5.5.1: `[APPLICATION 14] SEQUENCE { pvno [0],
/// msg-type [1], ap-options [2], ticket [3], authenticator [4] }`; the ticket as in a KDC-REP). Other protocols carry
/// an AP-REQ to authenticate (SMB's session setup in its SPNEGO token); the ticket's clear part says which service it
/// is for. `None` when the message is not an AP-REQ or its ticket is malformed; the name's components past
/// [`MAX_COMPONENTS`] are dropped.
pub fn ap_req_ticket(d: &[u8]) -> Option<(Vec<u8>, Principal)> {
    let (body, _) = der::expect(d, der::app(AP_REQ))?;
    let (seq, _) = der::expect(body, der::SEQUENCE)?;
    let f = der::fields(seq)?;
    check_header(f[0], f[1], AP_REQ)?;
    let (ticket, _) = der::expect(f[3]?, der::app(1))?;
    let (ticket, _) = der::expect(ticket, der::SEQUENCE)?;
    let t = der::fields(ticket)?;
    let realm = der::string(t[1]?)?.to_vec();
    let mut cut = false;
    let sname = principal(t[2]?, &mut cut)?;
    Some((realm, sname))
}

/// An OPTIONAL field: absent is `Some(None)`; present, it must parse.
fn optional<T>(field: Option<&[u8]>, parse: impl FnOnce(&[u8]) -> Option<T>) -> Option<Option<T>> {
    match field {
        None => Some(None),
        Some(d) => parse(d).map(Some),
    }
}

/// `pvno` is 5 and `msg-type` repeats the application tag.
fn check_header(pvno: Option<&[u8]>, ty: Option<&[u8]>, msg_type: u8) -> Option<()> {
    (der::int32(pvno?)? == 5 && der::int32(ty?)? == i32::from(msg_type)).then_some(())
}

/// An INTEGER element already split off a SEQUENCE OF.
fn int_body(e: der::Element<'_>) -> Option<i32> {
    if e.tag != der::INTEGER || e.body.is_empty() || e.body.len() > 5 {
        return None;
    }
    let mut v: i64 = if e.body[0] & 0x80 != 0 { -1 } else { 0 };
    for &b in e.body {
        v = v << 8 | i64::from(b);
    }
    i32::try_from(v).ok()
}

/// PrincipalName ::= SEQUENCE { name-type [0] Int32, name-string [1] SEQUENCE OF KerberosString }.
fn principal(d: &[u8], cut: &mut bool) -> Option<Principal> {
    let (seq, _) = der::expect(d, der::SEQUENCE)?;
    let f = der::fields(seq)?;
    der::int32(f[0]?)?;
    let (names, _) = der::expect(f[1]?, der::SEQUENCE)?;
    let mut p = Principal::default();
    let mut it = Elements::new(names);
    for e in it.by_ref() {
        if e.tag != der::GENERAL_STRING {
            return None;
        }
        if p.components.len() == MAX_COMPONENTS {
            *cut = true;
            break;
        }
        p.components.push(e.body.to_vec());
    }
    it.ok().then_some(p)
}

/// EncryptedData ::= SEQUENCE { etype [0] Int32, kvno [1] UInt32 OPTIONAL, cipher [2] OCTET STRING }: the etype.
fn enc_type(d: &[u8]) -> Option<i32> {
    let (seq, _) = der::expect(d, der::SEQUENCE)?;
    let f = der::fields(seq)?;
    der::int32(f[0]?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kerberos::tests::{ERROR_PCAP_AS_REQ, ERROR_PCAP_KRB_ERROR, hex};

    #[test]
    fn real_request_and_error() {
        let req = parse(&hex(ERROR_PCAP_AS_REQ)).unwrap();
        assert_eq!(req.msg_type, AS_REQ);
        assert_eq!(req.realm.as_deref(), Some(&b"LINUX.SHELL.COM"[..]));
        assert_eq!(
            req.sname.as_ref().map(Principal::joined).as_deref(),
            Some("krbtgt/LINUX.SHELL.COM")
        );
        assert_eq!(
            (req.etype, req.ticket_etype, req.error_code),
            (None, None, None)
        );
        let err = parse(&hex(ERROR_PCAP_KRB_ERROR)).unwrap();
        assert_eq!((err.msg_type, err.error_code), (KRB_ERROR, Some(52)));
        assert_eq!((err.cname.as_ref(), err.realm.as_ref()), (None, None));
    }

    /// Every cut of a real message is refused (the outer length no longer fits), never a panic; so is every
    /// message with one byte changed, or read as its type says.
    #[test]
    fn truncated_and_mutated_messages() {
        for m in [hex(ERROR_PCAP_AS_REQ), hex(ERROR_PCAP_KRB_ERROR)] {
            for n in 0..m.len() {
                assert_eq!(parse(&m[..n]), None, "cut at {n}");
            }
            for i in 0..m.len() {
                for x in [0x00, 0x80, 0xff, m[i] ^ 0x01] {
                    let mut v = m.clone();
                    v[i] = x;
                    let _ = parse(&v);
                }
            }
        }
    }

    /// A synthetic TGS-REP (RFC 4120 5.4.2 layout, one of each field): names, realm, both encryption types.
    /// A DER element (short or two-byte long length).
    pub(crate) fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        if body.len() < 0x80 {
            v.push(body.len() as u8);
        } else {
            v.extend_from_slice(&[0x82, (body.len() >> 8) as u8, body.len() as u8]);
        }
        v.extend_from_slice(body);
        v
    }

    fn int(n: u8) -> Vec<u8> {
        tlv(0x02, &[n])
    }

    fn gs(s: &str) -> Vec<u8> {
        tlv(0x1b, s.as_bytes())
    }

    fn name(parts: &[&str]) -> Vec<u8> {
        let names: Vec<u8> = parts.iter().flat_map(|p| gs(p)).collect();
        tlv(
            0x30,
            &[tlv(0xa0, &int(1)), tlv(0xa1, &tlv(0x30, &names))].concat(),
        )
    }

    fn enc(etype: u8) -> Vec<u8> {
        tlv(
            0x30,
            &[tlv(0xa0, &int(etype)), tlv(0xa2, &tlv(0x04, &[0u8; 40]))].concat(),
        )
    }

    /// A ticket (RFC 4120 5.3) for `sname` in `realm`.
    pub(crate) fn ticket(realm: &str, sname: &[&str]) -> Vec<u8> {
        tlv(
            0x61,
            &tlv(
                0x30,
                &[
                    tlv(0xa0, &int(5)),
                    tlv(0xa1, &gs(realm)),
                    tlv(0xa2, &name(sname)),
                    tlv(0xa3, &enc(23)),
                ]
                .concat(),
            ),
        )
    }

    /// An AP-REQ (RFC 4120 5.5.1) carrying `ticket`.
    pub(crate) fn ap_req(ticket: &[u8]) -> Vec<u8> {
        tlv(
            0x6e,
            &tlv(
                0x30,
                &[
                    tlv(0xa0, &int(5)),
                    tlv(0xa1, &int(14)),
                    tlv(0xa2, &tlv(0x03, &[0, 0x20, 0, 0, 0])),
                    tlv(0xa3, ticket),
                    tlv(0xa4, &enc(18)),
                ]
                .concat(),
            ),
        )
    }

    #[test]
    fn ap_req_ticket_names_the_service() {
        let m = ap_req(&ticket("CORP.LOCAL", &["cifs", "dc1.corp.local"]));
        let (realm, sname) = ap_req_ticket(&m).unwrap();
        assert_eq!(realm, b"CORP.LOCAL");
        assert_eq!(sname.joined(), "cifs/dc1.corp.local");
        // Typed only by the KDC-message parser.
        assert_eq!(
            parse(&m).map(|p| (p.msg_type, p.realm)),
            Some((AP_REQ, None))
        );
        // A KDC reply is no AP-REQ; a message cut anywhere is refused.
        assert_eq!(ap_req_ticket(&hex(ERROR_PCAP_AS_REQ)), None);
        for n in 0..m.len() {
            assert_eq!(ap_req_ticket(&m[..n]), None, "cut at {n}");
        }
        // A msg-type that does not repeat the tag.
        let mut wrong = m.clone();
        let at = m.windows(3).position(|w| w == [0x02, 0x01, 14]).unwrap();
        wrong[at + 2] = 12;
        assert_eq!(ap_req_ticket(&wrong), None);
    }

    #[test]
    fn reply_fields() {
        let ticket = ticket("OFFENSE.LOCAL", &["HTTP", "dc-mantvydas.offense.local"]);
        let rep = tlv(
            0x6d,
            &tlv(
                0x30,
                &[
                    tlv(0xa0, &int(5)),
                    tlv(0xa1, &int(13)),
                    tlv(0xa3, &gs("OFFENSE.LOCAL")),
                    tlv(0xa4, &name(&["spotless"])),
                    tlv(0xa5, &ticket),
                    tlv(0xa6, &enc(18)),
                ]
                .concat(),
            ),
        );
        let m = parse(&rep).unwrap();
        assert_eq!(m.msg_type, TGS_REP);
        assert_eq!(m.cname.unwrap().joined(), "spotless");
        assert_eq!(m.sname.unwrap().joined(), "HTTP/dc-mantvydas.offense.local");
        assert_eq!((m.etype, m.ticket_etype), (Some(18), Some(23)));
        // The msg-type field must repeat the tag.
        let mut wrong = rep.clone();
        let at = rep.windows(3).position(|w| w == [0x02, 0x01, 13]).unwrap();
        wrong[at + 2] = 11;
        assert_eq!(parse(&wrong), None);
    }
}
