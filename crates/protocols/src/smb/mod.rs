//! SMB over TCP (port 445 "direct hosting", or inside a NetBIOS session on 139): nDPI's `SMBv1` and `SMBv23`.
//!
//! Every SMB message is framed by the 4-byte NetBIOS session header (RFC 1002 §4.3.1: type `0x00` "session
//! message", 17-bit length) and starts with a 4-byte protocol id: `\xffSMB` for SMB1, `\xfeSMB` for SMB2/3 and
//! `\xfdSMB` for an SMB3 transform (encrypted) header. Eight fixed bytes make this certain from the first
//! message. A session on 139 that opens with a NetBIOS *session request* (`0x81`) is nDPI's `NetBIOS` (see
//! `netbios.rs`), not SMB.

//!
//! **Named pipes.** For SMB2/3 the parser follows the messages that carry a named pipe's bytes (WRITE requests and
//! READ responses, and the FSCTL_PIPE_TRANSCEIVE IOCTL both ways) and hands those that start a DCE/RPC PDU to the
//! DCE/RPC call parser, so the rules' `dce_iface`, `dce_opnum` and `dce_stub_data` see DCE/RPC over SMB as Suricata's
//! SMB parser hands it over. Each NBSS message is collected up to [`MAX_MESSAGE`] bytes (longer ones are skipped and
//! counted).

use crate::dcerpc::pdu::CoState;
use crate::scan::be24;
use crate::{
    AppProto, Detector, Direction, EventSink, Limits, Parser, ParserStats, Probe, ProbeCtx,
    Transport,
};

/// Longest NBSS message collected for the pipe parser (a READ of a pipe is a few KiB; file data beyond is skipped).
pub const MAX_MESSAGE: usize = 64 * 1024;

/// SMB2 commands that carry pipe bytes.
const SMB2_READ: u16 = 0x08;
const SMB2_WRITE: u16 = 0x09;
const SMB2_IOCTL: u16 = 0x0b;
/// FSCTL_PIPE_TRANSCEIVE: a write then a read of a named pipe in one IOCTL.
const FSCTL_PIPE_TRANSCEIVE: u32 = 0x0011_c017;

fn le16(d: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_le_bytes(
        d.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le32(d: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?)).ok()
}

/// The pipe bytes one SMB2 message carries (`msg` starts at its `\xfeSMB` header), if any: the WRITE request's
/// data, the READ response's, the pipe-transceive IOCTL's input (request) or output (response).
fn pipe_bytes(msg: &[u8]) -> Option<&[u8]> {
    if msg.get(..4)? != b"\xfeSMB" {
        return None;
    }
    let command = le16(msg, 12)? as u16;
    let response = le32(msg, 16)? & 1 != 0;
    const BODY: usize = 64;
    let (off, len) = match (command, response) {
        (SMB2_WRITE, false) => (le16(msg, BODY + 2)?, le32(msg, BODY + 4)?),
        (SMB2_READ, true) => (usize::from(*msg.get(BODY + 2)?), le32(msg, BODY + 4)?),
        (SMB2_IOCTL, _) if le32(msg, BODY + 4)? == FSCTL_PIPE_TRANSCEIVE as usize => {
            if response {
                (le32(msg, BODY + 32)?, le32(msg, BODY + 36)?)
            } else {
                (le32(msg, BODY + 24)?, le32(msg, BODY + 28)?)
            }
        }
        _ => return None,
    };
    msg.get(off..off.checked_add(len)?)
}

/// The SMB parser of one flow: NBSS framing per direction, SMB2 messages' pipe bytes to the DCE/RPC call parser.
#[derive(Debug, Default)]
pub struct SmbParser {
    /// Per direction: the NBSS message being collected (its 4-byte header included).
    buf: [Vec<u8>; 2],
    /// Per direction: bytes of a message over [`MAX_MESSAGE`] still to skip.
    skip: [usize; 2],
    /// Per direction: the stream no longer reads as NBSS (after a gap or a bad header); nothing more is parsed.
    dead: [bool; 2],
    dcerpc: CoState,
    stats: ParserStats,
}

impl SmbParser {
    fn message(&mut self, to_server: bool, msg: &[u8], out: &mut dyn EventSink) {
        // Compounded SMB2 messages follow each other at their NextCommand offsets.
        let mut at = 0usize;
        for _ in 0..64 {
            let Some(m) = msg.get(at..) else { break };
            if let Some(pipe) = pipe_bytes(m)
                && crate::dcerpc::pdu::starts_pdu(pipe)
            {
                self.dcerpc
                    .feed(to_server, pipe, &mut |call| out.dcerpc(call));
            }
            match le32(m, 20) {
                Some(next) if next >= 64 => at += next,
                _ => break,
            }
        }
    }
}

impl Parser for SmbParser {
    fn parse(&mut self, dir: Direction, mut data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        let d = usize::from(dir != Direction::ToServer);
        let to_server = dir == Direction::ToServer;
        while !data.is_empty() && !self.dead[d] {
            if self.skip[d] > 0 {
                let n = self.skip[d].min(data.len());
                self.skip[d] -= n;
                data = &data[n..];
                continue;
            }
            let buf = &mut self.buf[d];
            if buf.len() < 4 {
                let take = (4 - buf.len()).min(data.len());
                buf.extend_from_slice(&data[..take]);
                data = &data[take..];
                if buf.len() < 4 {
                    return;
                }
                if buf[0] != 0 {
                    // Not a session message (keepalive 0x85 carries no body; anything else ends parsing).
                    if buf[0] == 0x85 && buf[1..4] == [0, 0, 0] {
                        buf.clear();
                        continue;
                    }
                    self.dead[d] = true;
                    self.stats.gave_up += 1;
                    return;
                }
                let len = be24(buf, 1).unwrap_or(0) as usize;
                if len > MAX_MESSAGE {
                    self.skip[d] = len;
                    self.stats.bytes_cut += len as u64;
                    buf.clear();
                }
                continue;
            }
            let len = be24(buf, 1).unwrap_or(0) as usize;
            let take = (len + 4 - buf.len()).min(data.len());
            buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if buf.len() == len + 4 {
                let msg = std::mem::take(&mut self.buf[d]);
                self.message(to_server, msg.get(4..).unwrap_or(&[]), out);
                self.buf[d] = msg;
                self.buf[d].clear();
            }
        }
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        // The framing is lost; a later message start cannot be told from data with any certainty.
        let d = usize::from(dir != Direction::ToServer);
        self.dead[d] = true;
        self.buf[d].clear();
        self.dcerpc.gap(dir == Direction::ToServer);
    }

    fn stats(&self) -> ParserStats {
        let mut s = self.stats;
        s.bytes_cut += self.dcerpc.cut_bytes;
        s.malformed += self.dcerpc.malformed;
        s
    }
}

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
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        (transport == Transport::Tcp && !self.v1)
            .then(|| Box::new(SmbParser::default()) as Box<dyn Parser>)
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

    /// A DCE/RPC PDU (little-endian, one fragment): `ptype` 0 request (context 0, `opnum`) or 2 response.
    fn dce(ptype: u8, call_id: u32, opnum: u16, stub: &[u8]) -> Vec<u8> {
        let len = 24 + stub.len();
        let mut p = vec![5, 0, ptype, 0x03, 0x10, 0, 0, 0];
        p.extend_from_slice(&(len as u16).to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&call_id.to_le_bytes());
        p.extend_from_slice(&(stub.len() as u32).to_le_bytes());
        p.extend_from_slice(&0u16.to_le_bytes());
        p.extend_from_slice(&opnum.to_le_bytes());
        p.extend_from_slice(stub);
        p
    }

    /// An NBSS-framed SMB2 message: `command`, a response or not, and a body whose data starts at `data_at` of the
    /// body (offsets in the body are relative to the SMB2 header, as on the wire).
    fn smb2(command: u16, response: bool, body: &[u8]) -> Vec<u8> {
        let mut h = b"\xfeSMB".to_vec();
        h.extend_from_slice(&64u16.to_le_bytes());
        h.extend_from_slice(&[0; 6]);
        h.extend_from_slice(&command.to_le_bytes());
        h.extend_from_slice(&[1, 0]);
        h.extend_from_slice(&u32::from(response).to_le_bytes());
        h.extend_from_slice(&[0; 4]); // next command
        h.resize(64, 0);
        h.extend_from_slice(body);
        let mut m = vec![0];
        m.extend_from_slice(&(h.len() as u32).to_be_bytes()[1..]);
        m.extend_from_slice(&h);
        m
    }

    fn write_request(data: &[u8]) -> Vec<u8> {
        let mut b = 49u16.to_le_bytes().to_vec();
        b.extend_from_slice(&(64u16 + 48).to_le_bytes()); // data offset
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.resize(48, 0);
        b.extend_from_slice(data);
        smb2(SMB2_WRITE, false, &b)
    }

    fn read_response(data: &[u8]) -> Vec<u8> {
        let mut b = 17u16.to_le_bytes().to_vec();
        b.push(64 + 16); // data offset
        b.push(0);
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.resize(16, 0);
        b.extend_from_slice(data);
        smb2(SMB2_READ, true, &b)
    }

    #[derive(Default)]
    struct Calls(Vec<(bool, u16, Vec<u8>)>);

    impl EventSink for Calls {
        fn event(&mut self, _e: crate::AppEvent) {}
        fn dcerpc(&mut self, call: &crate::dcerpc::DcerpcCall<'_>) {
            self.0
                .push((call.to_server, call.opnum, call.stub.to_vec()));
        }
    }

    /// DCE/RPC written to and read from a named pipe over SMB2 reaches the call parser, whatever the segments;
    /// a write of other bytes (a file's) does not.
    #[test]
    fn pipe_reads_and_writes_carry_dcerpc_calls() {
        let to_server = [
            write_request(b"plain file data, not DCE/RPC"),
            write_request(&dce(0, 7, 1, b"job")),
        ]
        .concat();
        let to_client = read_response(&dce(2, 7, 0, b"ok"));
        for cut in [1, 3, 5, 70, to_server.len() - 1] {
            let mut p = SmbParser::default();
            let mut out = Calls::default();
            p.parse(Direction::ToServer, &to_server[..cut], 0, &mut out);
            p.parse(Direction::ToServer, &to_server[cut..], 0, &mut out);
            p.parse(Direction::ToClient, &to_client, 0, &mut out);
            assert_eq!(
                out.0,
                vec![(true, 1, b"job".to_vec()), (false, 1, b"ok".to_vec())],
                "cut {cut}"
            );
        }
        // A message whose data offset points past its end carries nothing.
        let mut bad = write_request(&dce(0, 7, 1, b"job"));
        bad[4 + 64 + 2] = 0xff;
        assert_eq!(pipe_bytes(&bad[4..]), None);
        // SMB1 flows get no parser; SMB2/3 flows do.
        assert!(
            SmbDetector { v1: true }
                .parser(Transport::Tcp, &Limits::default())
                .is_none()
        );
        assert!(
            SmbDetector { v1: false }
                .parser(Transport::Tcp, &Limits::default())
                .is_some()
        );
    }

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
