//! Industrial protocols over ISO transport on TCP (RFC 1006, "ISO-TSAP", port 102): Siemens S7 (nDPI's
//! `S7Comm`), S7CommPlus and MMS (ISO 9506, the messaging of IEC 61850; nDPI's `ISO9506-1-MMS`).
//!
//! Each TCP segment carries TPKTs (version 3, a reserved zero, a 16-bit length including the TPKT header)
//! holding COTP TPDUs (a length indicator, then the PDU type: `E0` connection request, `D0` connection
//! confirm, `F0` data). Which application rides on it shows in the first TPDUs:
//! * S7CommPlus: a connection request or confirm whose transport selector (parameter `C1`/`C2`) is a
//!   `SIMATIC-ROOT-...` name, or data starting with its protocol id `72`;
//! * S7: data starting with protocol id `32` and a known PDU type (1 job, 2 ack, 3 ack-data, 7 user data);
//! * MMS: data carrying an ISO session CONNECT or ACCEPT SPDU (`0D`/`0E`), the start of an ACSE association.
//!
//! A connection request with other selectors waits for the data. RDP, which also uses TPKT and COTP, sends a
//! request with a cookie or negotiation block and never these data, so it is never claimed.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The application an [`IsoTsapDetector`] looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsoApp {
    S7Comm,
    S7CommPlus,
    Mms,
}

/// Detector for one application over ISO transport.
pub struct IsoTsapDetector(pub IsoApp);

/// What one COTP TPDU says.
enum Tpdu<'a> {
    /// A connection request or confirm and its variable part (parameters).
    Connect(&'a [u8]),
    /// A data TPDU's user data.
    Data(&'a [u8]),
}

/// The first TPKT of `p` and its TPDU, `Err(true)` while it may still arrive, `Err(false)` when `p` is not one.
fn first_tpdu(p: &[u8]) -> Result<Tpdu<'_>, bool> {
    if p.first().is_some_and(|&v| v != 3) || p.get(1).is_some_and(|&r| r != 0) {
        return Err(false);
    }
    let Some(len) = be16(p, 2) else {
        return Err(true);
    };
    let len = usize::from(len);
    if !(7..=65535).contains(&len) {
        return Err(false);
    }
    let Some(tpkt) = p.get(4..len) else {
        return Err(true);
    };
    let li = usize::from(*tpkt.first().ok_or(false)?);
    let header = tpkt.get(1..=li).ok_or(false)?;
    match header.first().map(|t| t & 0xf0) {
        Some(0xe0 | 0xd0) => Ok(Tpdu::Connect(header.get(6..).unwrap_or(&[]))),
        Some(0xf0) => Ok(Tpdu::Data(tpkt.get(li + 1..).unwrap_or(&[]))),
        _ => Err(false),
    }
}

/// Whether a connection's parameters name a `SIMATIC-ROOT` transport selector.
fn simatic_root(params: &[u8]) -> bool {
    let mut rest = params;
    while let [code, len, tail @ ..] = rest {
        let n = usize::from(*len);
        let Some(value) = tail.get(..n) else {
            return false;
        };
        if matches!(code, 0xc1 | 0xc2) && value.starts_with(b"SIMATIC-ROOT") {
            return true;
        }
        rest = &tail[n..];
    }
    false
}

impl Detector for IsoTsapDetector {
    fn proto(&self) -> AppProto {
        match self.0 {
            IsoApp::S7Comm => AppProto::S7Comm,
            IsoApp::S7CommPlus => AppProto::S7CommPlus,
            IsoApp::Mms => AppProto::Mms,
        }
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[3])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // The TPDU of this payload: the first one of the stream, or the one this segment starts with.
        let tpdu = match first_tpdu(ctx.data) {
            Ok(t) => Ok(t),
            Err(_) if ctx.dir_index == 0 => first_tpdu(ctx.prefix),
            Err(e) => Err(e),
        };
        match (self.0, tpdu) {
            (IsoApp::S7CommPlus, Ok(Tpdu::Connect(params))) if simatic_root(params) => {
                Probe::Certain
            }
            (IsoApp::S7CommPlus, Ok(Tpdu::Data([0x72, ..]))) => Probe::Certain,
            (IsoApp::S7Comm, Ok(Tpdu::Data([0x32, 1..=3 | 7, ..]))) => Probe::Certain,
            (IsoApp::Mms, Ok(Tpdu::Data([0x0d | 0x0e, ..]))) => Probe::Certain,
            (_, Ok(Tpdu::Connect(_))) | (_, Err(true)) => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;
    use crate::{Direction, ProbeCtx};

    fn tpkt(cotp: &[u8], data: &[u8]) -> Vec<u8> {
        let mut t = vec![3, 0, 0, 0];
        t.extend_from_slice(cotp);
        t.extend_from_slice(data);
        let n = t.len() as u16;
        t[2..4].copy_from_slice(&n.to_be_bytes());
        t
    }

    /// A connection request from source reference 1 with calling and called selectors.
    fn request(calling: &[u8], called: &[u8]) -> Vec<u8> {
        let mut c = vec![0, 0xe0, 0, 0, 0, 1, 0, 0xc1, calling.len() as u8];
        c.extend_from_slice(calling);
        c.push(0xc2);
        c.push(called.len() as u8);
        c.extend_from_slice(called);
        c[0] = (c.len() - 1) as u8;
        tpkt(&c, &[])
    }

    fn probe(app: IsoApp, d: &[u8], dir_index: u32) -> Probe {
        IsoTsapDetector(app).probe(&ProbeCtx {
            dir_index,
            ..ctx_tcp(Direction::ToServer, d)
        })
    }

    #[test]
    fn applications_show_in_the_first_tpdus() {
        let plus = request(b"\x06\x00", b"SIMATIC-ROOT-HMI");
        assert_eq!(probe(IsoApp::S7CommPlus, &plus, 0), Probe::Certain);
        assert_eq!(probe(IsoApp::S7Comm, &plus, 0), Probe::Unsure);
        let cr = request(&[1, 0], &[1, 2]);
        for app in [IsoApp::S7Comm, IsoApp::S7CommPlus, IsoApp::Mms] {
            assert_eq!(probe(app, &cr, 0), Probe::Unsure, "{app:?}");
            assert_eq!(probe(app, &cr[..5], 0), Probe::Unsure, "{app:?}");
        }
        // Data TPDUs: S7 setup-communication job, an ISO session CONNECT SPDU.
        let s7 = tpkt(
            &[2, 0xf0, 0x80],
            &[
                0x32, 1, 0, 0, 0, 0, 0, 8, 0, 0, 0xf0, 0, 0, 1, 0, 1, 1, 0xe0,
            ],
        );
        assert_eq!(probe(IsoApp::S7Comm, &s7, 1), Probe::Certain);
        assert_eq!(probe(IsoApp::Mms, &s7, 1), Probe::NotForUs);
        let session = tpkt(
            &[2, 0xf0, 0x80],
            &[0x0d, 0x9e, 0x05, 0x06, 0x13, 0x01, 0x00],
        );
        assert_eq!(probe(IsoApp::Mms, &session, 1), Probe::Certain);
        assert_eq!(probe(IsoApp::S7Comm, &session, 1), Probe::NotForUs);
        // RDP's connection request carries a cookie and no selectors; its data never look like these.
        let rdp = tpkt(&[0x0e, 0xe0, 0, 0, 0, 0, 0], b"Cookie: mstshash=x\r\n");
        assert_eq!(probe(IsoApp::S7CommPlus, &rdp, 0), Probe::Unsure);
        assert_eq!(probe(IsoApp::Mms, b"\x16\x03\x01\x00", 0), Probe::NotForUs);
    }
}
