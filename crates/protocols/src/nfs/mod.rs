//! NFS and its ONC RPC companions: nDPI's `NFS`.
//!
//! NFS runs on ONC RPC (RFC 5531). A call is a sequence of big-endian 32-bit words: a transaction id, the message
//! type 0 (call), the RPC version 2, the program, its version and the procedure, then the credentials and the
//! verifier, each an authentication flavour and an opaque body of at most 400 bytes. Over TCP each message is
//! preceded by a record mark: the last-fragment bit and the fragment's length (RFC 5531 section 11).
//!
//! nDPI names the calls of NFS's program family `NFS`: NFS itself (100003, versions 2 to 4, RFC 1813 and RFC 7530),
//! its MOUNT protocol (100005) and the port mapper clients ask first (100000, RFC 1833). A call to one of these with
//! a known flavour (none, AUTH_SYS, AUTH_SHORT, AUTH_DH, RPCSEC_GSS) whose credentials and verifier fit the message
//! is certain; a reply (message type 1) is certain when it repeats the transaction id of the call the other side
//! sent.

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Programs named `NFS`: port mapper, NFS, MOUNT.
const PROGRAMS: [u32; 3] = [100_000, 100_003, 100_005];
/// Authentication flavours: AUTH_NONE, AUTH_SYS, AUTH_SHORT, AUTH_DH, RPCSEC_GSS.
const FLAVOURS: [u32; 5] = [0, 1, 2, 3, 6];

/// The RPC message of `d`: past the record mark on TCP (which must mark a fragment of at least a call's header).
fn rpc(d: &[u8], transport: Transport) -> Option<&[u8]> {
    match transport {
        Transport::Tcp => {
            let mark = be32(d, 0)?;
            let len = mark & 0x7fff_ffff;
            d.get(4..).filter(|_| (24..=1 << 24).contains(&len))
        }
        _ => Some(d),
    }
}

/// Whether `m` starts with a call to one of [`PROGRAMS`] whose credentials and verifier fit in `m`.
fn call(m: &[u8]) -> bool {
    let word = |i: usize| be32(m, 4 * i);
    if word(1) != Some(0) || word(2) != Some(2) {
        return false;
    }
    let (Some(prog), Some(vers)) = (word(3), word(4)) else {
        return false;
    };
    if !PROGRAMS.contains(&prog) || !(1..=4).contains(&vers) || word(5).is_none_or(|p| p > 64) {
        return false;
    }
    // Credentials, then the verifier: a flavour and an opaque body padded to 4 bytes.
    let mut at = 24;
    for _ in 0..2 {
        let (Some(flavour), Some(len)) = (be32(m, at), be32(m, at + 4)) else {
            return false;
        };
        if !FLAVOURS.contains(&flavour) || len > 400 {
            return false;
        }
        at += 8 + (len as usize).div_ceil(4) * 4;
    }
    at <= m.len()
}

/// Whether `m` is a reply (message type 1, accepted or denied) to the call `req`.
fn reply_to(m: &[u8], req: &[u8]) -> bool {
    be32(m, 4) == Some(1)
        && be32(m, 8).is_some_and(|s| s <= 1)
        && call(req)
        && be32(m, 0) == be32(req, 0)
}

/// Detector for NFS.
pub struct NfsDetector;

impl Detector for NfsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Nfs
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let Some(m) = rpc(ctx.data, ctx.transport) else {
            return if ctx.transport == Transport::Tcp && ctx.data.len() < 4 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        if call(m) {
            return Probe::Certain;
        }
        if let Some(req) = rpc(ctx.peer, ctx.transport)
            && reply_to(m, req)
        {
            return Probe::Certain;
        }
        // A reply seen before its call (a flow picked up late) waits for the call's direction.
        if ctx.peer.is_empty() && be32(m, 4) == Some(1) && be32(m, 8).is_some_and(|s| s <= 1) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::ProbeCtx;
    use crate::testkit::ctx;

    /// An NFSv3 GETATTR call (procedure 1) with AUTH_SYS credentials (stamp, machine name "nfsc", uid, gid, no
    /// groups) and an empty verifier, then a file handle: RFC 5531 and RFC 1813 field by field.
    fn getattr() -> Vec<u8> {
        let mut m = Vec::new();
        for w in [0x1234_5678u32, 0, 2, 100_003, 3, 1] {
            m.extend_from_slice(&w.to_be_bytes());
        }
        let mut cred = Vec::new();
        cred.extend_from_slice(&7u32.to_be_bytes());
        cred.extend_from_slice(&4u32.to_be_bytes());
        cred.extend_from_slice(b"nfsc");
        for w in [1000u32, 1000, 0] {
            cred.extend_from_slice(&w.to_be_bytes());
        }
        m.extend_from_slice(&1u32.to_be_bytes());
        m.extend_from_slice(&(cred.len() as u32).to_be_bytes());
        m.extend_from_slice(&cred);
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&8u32.to_be_bytes());
        m.extend_from_slice(&[0xfe; 8]);
        m
    }

    fn reply() -> Vec<u8> {
        let mut m = Vec::new();
        for w in [0x1234_5678u32, 1, 0, 0, 0, 0, 0] {
            m.extend_from_slice(&w.to_be_bytes());
        }
        m
    }

    fn marked(m: &[u8]) -> Vec<u8> {
        let mut d = (0x8000_0000u32 | m.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(m);
        d
    }

    fn probe(t: Transport, d: &[u8], peer: &[u8]) -> Probe {
        NfsDetector.probe(&ProbeCtx {
            peer,
            ..ctx(t, Direction::ToServer, d, &[])
        })
    }

    #[test]
    fn calls_over_udp_and_tcp() {
        assert_eq!(probe(Transport::Udp, &getattr(), &[]), Probe::Certain);
        assert_eq!(
            probe(Transport::Tcp, &marked(&getattr()), &[]),
            Probe::Certain
        );
        assert_eq!(
            probe(Transport::Tcp, &getattr(), &[]),
            Probe::NotForUs,
            "no record mark"
        );
        let mut other = getattr();
        other[15] = 0x99; // program 100249
        assert_eq!(probe(Transport::Udp, &other, &[]), Probe::NotForUs);
        let mut flavour = getattr();
        flavour[27] = 9;
        assert_eq!(probe(Transport::Udp, &flavour, &[]), Probe::NotForUs);
        let cut = getattr();
        assert_eq!(probe(Transport::Udp, &cut[..40], &[]), Probe::NotForUs);
    }

    #[test]
    fn a_reply_repeats_its_calls_id() {
        assert_eq!(probe(Transport::Udp, &reply(), &getattr()), Probe::Certain);
        assert_eq!(
            probe(Transport::Tcp, &marked(&reply()), &marked(&getattr())),
            Probe::Certain
        );
        let mut other = reply();
        other[3] ^= 1;
        assert_eq!(probe(Transport::Udp, &other, &getattr()), Probe::NotForUs);
        assert_eq!(
            probe(Transport::Udp, &reply(), &[]),
            Probe::Unsure,
            "the call not seen yet"
        );
        assert_eq!(
            probe(Transport::Udp, b"GET / HTTP/1.0\r\n", &[]),
            Probe::NotForUs
        );
    }
}
