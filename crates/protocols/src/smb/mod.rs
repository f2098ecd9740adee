//! SMB over TCP (port 445 "direct hosting", or inside a NetBIOS session on 139): nDPI's `SMBv1` and `SMBv23`.
//!
//! Every SMB message is framed by the 4-byte NetBIOS session header (RFC 1002 §4.3.1: type `0x00` "session
//! message", 17-bit length) and starts with a 4-byte protocol id: `\xffSMB` for SMB1, `\xfeSMB` for SMB2/3 and
//! `\xfdSMB` for an SMB3 transform (encrypted) header. Eight fixed bytes make this certain from the first
//! message. A session on 139 that opens with a NetBIOS *session request* (`0x81`) is nDPI's `NetBIOS` (see
//! `netbios.rs`), not SMB.

use crate::scan::be24;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// The SMB dialect family a [`SmbDetector`] recognises.
pub struct SmbDetector {
    /// `true`: SMB1 (`\xffSMB`); `false`: SMB2/3 (`\xfeSMB`, `\xfdSMB`).
    pub v1: bool,
}

/// What the start of a NetBIOS-framed stream says about SMB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmbFamily {
    /// `\xffSMB`: SMB1.
    V1,
    /// `\xfeSMB` or `\xfdSMB`: SMB2/3.
    V23,
    /// Not an SMB message.
    NotSmb,
    /// Too few bytes to tell, and what is there agrees.
    NeedMore,
}

/// Which SMB family an NBSS-framed message carries.
pub fn smb_family(d: &[u8]) -> SmbFamily {
    match d.first() {
        None => return SmbFamily::NeedMore,
        Some(0x00) => {}
        Some(_) => return SmbFamily::NotSmb,
    }
    if let Some(len) = be24(d, 1) {
        // 17-bit length (RFC 1002 plus the SMB2 extension); an SMB header is at least 32 bytes (SMB1) / 64 (SMB2).
        if !(32..=0x1ffff).contains(&len) {
            return SmbFamily::NotSmb;
        }
    }
    let Some(id) = d.get(4..8) else {
        let have = d.get(4..).unwrap_or(&[]);
        let plausible = have.is_empty() || matches!(have[0], 0xfd..=0xff);
        return if plausible && b"SMB".starts_with(have.get(1..).unwrap_or(&[])) {
            SmbFamily::NeedMore
        } else {
            SmbFamily::NotSmb
        };
    };
    match id {
        b"\xffSMB" => SmbFamily::V1,
        b"\xfeSMB" | b"\xfdSMB" => SmbFamily::V23,
        _ => SmbFamily::NotSmb,
    }
}

impl Detector for SmbDetector {
    fn proto(&self) -> AppProto {
        if self.v1 {
            AppProto::Smbv1
        } else {
            AppProto::Smb
        }
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match (smb_family(ctx.prefix), self.v1) {
            (SmbFamily::NeedMore, _) => Probe::Unsure,
            (SmbFamily::V1, true) | (SmbFamily::V23, false) => Probe::Certain,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    // First bytes of an SMB2 NEGOTIATE (smb_deletefile.pcap) and of an SMB1 NEGOTIATE (smbv1.pcap).
    const SMB2: &[u8] = b"\x00\x00\x00\x66\xfeSMB\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    const SMB1: &[u8] = b"\x00\x00\x00\x85\xffSMBr\x00\x00\x00\x00\x18\x53\xc8";

    #[test]
    fn families() {
        let v1 = SmbDetector { v1: true };
        let v2 = SmbDetector { v1: false };
        assert_eq!(
            v2.probe(&ctx_tcp(Direction::ToServer, SMB2)),
            Probe::Certain
        );
        assert_eq!(
            v1.probe(&ctx_tcp(Direction::ToServer, SMB2)),
            Probe::NotForUs
        );
        assert_eq!(
            v1.probe(&ctx_tcp(Direction::ToServer, SMB1)),
            Probe::Certain
        );
        assert_eq!(
            v2.probe(&ctx_tcp(Direction::ToServer, &SMB2[..6])),
            Probe::Unsure
        );
        assert_eq!(
            v2.probe(&ctx_tcp(Direction::ToServer, b"\x00\x00\x00\x66GET ")),
            Probe::NotForUs
        );
        assert_eq!(
            v2.probe(&ctx_tcp(
                Direction::ToServer,
                b"\x81\x00\x00\x44 CKFDENECFDEFFCFGEFFCCACACACACACA"
            )),
            Probe::NotForUs
        );
        assert_eq!(
            v2.probe(&ctx_tcp(Direction::ToServer, b"\x00\x00\x00\x01\xfeSMB")),
            Probe::NotForUs
        );
    }
}
