//! The EVE `smb` record: one per SMB transaction, numbered and filled as Suricata 8 numbers and fills them.
//!
//! **Transactions (SMB2/3).** Suricata's SMB parser keeps a list of open transactions per flow, numbered from 1 in
//! the order they are created, and logs each once both its sides are done (or, still open, when the flow ends). A
//! transaction is made by a request and found again by its response through a key: the session id and message id
//! (and a record type that keeps the kinds apart). [`SmbTxLog`] follows the same model:
//! - NEGOTIATE (one per SMB version per flow while open; an SMB2 answer to an SMB1 NEGOTIATE completes the SMB1
//!   one), SESSION_SETUP (the response found by session id and message id, or by message id with session 0),
//!   TREE_CONNECT (keyed without the tree id, which the response brings), CREATE, IOCTL: a transaction of their own
//!   kind, with their fields;
//! - READ, WRITE, GET_INFO and SET_INFO make no transaction of their own: a WRITE's or READ's data makes (or
//!   continues) a *file* transaction per file id and direction, closed by the file's CLOSE request; on a pipe of a
//!   DCE/RPC service (`srvsvc`, `lsarpc`, ... or a pipe whose first bytes read as DCE/RPC) it makes a DCE/RPC
//!   transaction (paired by call id, within a session) instead; a SET_INFO that renames or marks a file for deletion
//!   makes a rename or a set-info transaction;
//! - every other request makes a generic transaction (command, status) that its response completes (an interim
//!   `STATUS_PENDING` answer sets the status only).
//!
//! **Fields** (Suricata's names): `id`, `dialect` (the flow's negotiated dialect when the record is written:
//! `2.02` ... `3.11`, SMB1's dialect string, or `unknown`), `command`, `status` and `status_code` (once a response
//! set them), `session_id`, `tree_id`; then per kind: `client_dialects`, `client_guid`, `server_guid`,
//! `max_read_size`, `max_write_size` (NEGOTIATE); `ntlmssp` (`domain`, `user`, `host`, `version`) or `kerberos`
//! (`realm`, `snames`: the ticket of the AP-REQ in a SPNEGO token that offers Kerberos 5; SESSION_SETUP);
//! `share` or `named_pipe`, `share_type` (TREE_CONNECT); `filename` or `directory`, `disposition`, `access`,
//! `created`, `accessed`, `modified`, `changed`, `size`, `fuid` (CREATE); `filename`, `share`, `fuid` (file
//! transactions); `function` (IOCTL); `rename`, `set_info` (SET_INFO); `dcerpc` (DCE/RPC over a pipe). Status names:
//! the NT status codes by their MS-ERREF names ([`super::nt_status`]); any other is written as its decimal value, as
//! Suricata writes a code its table lacks.
//!
//! **SMB1** ([`SmbTxLog::smb1`]) follows the same model, keyed by user id and multiplex id, along each message's
//! AndX chain: NEGOTIATE (`client_dialects`; the response's index names the flow's dialect), SESSION_SETUP_ANDX
//! (`request` and `response` with `native_os` and `native_lm`, with or without extended security; `ntlmssp`),
//! TREE_CONNECT_ANDX (`service` `request`/`response`; `IPC` makes a pipe), NT_CREATE_ANDX, files read with READ_ANDX
//! and written with WRITE_ANDX / WRITE / WRITE_AND_CLOSE, DCE/RPC written to and read from a pipe, LOGOFF_ANDX
//! (completed by its answer as the last transaction), DOS error classes (`SRV_BADUID`, ...) for status; every other
//! command but READ_ANDX, WRITE_ANDX, TRANS and TRANS2 a generic transaction; TRANS2 SET_PATH_INFO / SET_FILE_INFO
//! deletions and renames a set-info (`subcmd`, `level_of_interest`) or rename transaction; TRANS to a DCE/RPC
//! service's named pipe (TransactNmPipe) the DCE/RPC call its data and its response's carry.
//!
//! **Costs and caps.** At most [`MAX_TXS`] transactions open per flow (the oldest is written as it stands when a new
//! one would exceed that, as Suricata prunes); each lookup table (file names, trees, read offsets, DCE/RPC fragments)
//! holds at most [`MAX_ENTRIES`] entries (more are not kept and are counted in [`SmbTxLog::cut`]); at most
//! [`MAX_FRAGS`] DCE/RPC fragments of at most [`MAX_FRAG`] bytes are kept for reassembly; names keep their first
//! [`MAX_NAME`] bytes and a NEGOTIATE its first [`MAX_DIALECTS`] dialects, so a flow's state stays within a few
//! MiB whatever it sends.

use std::collections::{HashMap, VecDeque};

/// Transactions open at once per flow.
pub const MAX_TXS: usize = 512;
/// Entries per lookup table.
pub const MAX_ENTRIES: usize = 1024;
/// Bytes of a partial DCE/RPC PDU kept between READ responses.
pub const MAX_FRAG: usize = 64 * 1024;
/// Partial DCE/RPC PDUs kept at once per flow.
pub const MAX_FRAGS: usize = 16;
/// Bytes kept of a name (file, share, pipe, host strings); longer ones are cut.
pub const MAX_NAME: usize = 1024;
/// Dialects kept of a NEGOTIATE request.
pub const MAX_DIALECTS: usize = 64;

/// The first [`MAX_NAME`] bytes of a name.
fn clip(d: &[u8]) -> &[u8] {
    &d[..d.len().min(MAX_NAME)]
}

const NEGOTIATE: u16 = 0;
const SESSION_SETUP: u16 = 1;
const TREE_CONNECT: u16 = 3;
const TREE_DISCONNECT: u16 = 4;
const CREATE: u16 = 5;
const CLOSE: u16 = 6;
const READ: u16 = 8;
const WRITE: u16 = 9;
const IOCTL: u16 = 11;
const GET_INFO: u16 = 16;
const SET_INFO: u16 = 17;

const STATUS_SUCCESS: u32 = 0;
const STATUS_PENDING: u32 = 0x0000_0103;
const STATUS_BUFFER_OVERFLOW: u32 = 0x8000_0005;
const STATUS_END_OF_FILE: u32 = 0xc000_0011;
const FSCTL_PIPE_TRANSCEIVE: u32 = 0x0011_c017;

/// The SMB2 header's length; bodies' offsets count from the header's start.
const HDR: usize = 64;

/// One SMB transaction as Suricata's EVE `smb` record writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbEvent {
    /// The transaction's number from 0 (`id` - 1), written at the top level as `tx_id`.
    #[serde(skip)]
    pub tx_id: u64,
    pub id: u64,
    pub dialect: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<String>,
    pub session_id: u64,
    pub tree_id: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ntlmssp: Option<SmbNtlmssp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kerberos: Option<SmbKerberos>,
    /// SMB1 session setup: the client's native OS and LAN manager.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<SmbHost>,
    /// SMB1 session setup: the server's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<SmbHost>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disposition: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<&'static str>,
    /// SMB1 TRANS2's subcommand of a set-info transaction (`SET_FILE_INFO`, `SET_PATH_INFO`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subcmd: Option<&'static str>,
    /// SMB1 TRANS2's information level of a set-info transaction, when Suricata names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level_of_interest: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accessed: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_dialects: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_guid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_guid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_read_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_write_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_pipe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_type: Option<&'static str>,
    /// SMB1 tree connect: the services the request and the response named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<SmbService>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_info: Option<SmbSetInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rename: Option<SmbRename>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dcerpc: Option<SmbDcerpc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuid: Option<String>,
}

/// A SESSION_SETUP's NTLMSSP AUTHENTICATE fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbNtlmssp {
    pub domain: String,
    pub user: String,
    pub host: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The fields overlap (a user before the domain's end, a host before the user's end).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warning: bool,
}

/// A SESSION_SETUP's Kerberos ticket (from the AP-REQ in its SPNEGO token): the realm and the service's name.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbKerberos {
    pub realm: String,
    pub snames: Vec<String>,
}

/// SMB1 session setup's native OS and LAN manager strings.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbHost {
    pub native_os: String,
    pub native_lm: String,
}

/// SMB1 tree connect's services.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbService {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
}

impl SmbEvent {
    /// Writes Suricata 9's `service` (and, for a request, the operation's `procedure`) beside each interface of
    /// the record's DCE/RPC call that the table knows, as [`crate::dcerpc::DcerpcEvent::name_interfaces`] does.
    pub fn name_interfaces(&mut self) {
        let Some(d) = self.dcerpc.as_mut() else {
            return;
        };
        let opnum = d.opnum.filter(|_| d.request == "REQUEST");
        for i in &mut d.interfaces {
            (i.service, i.procedure) = crate::dcerpc::interfaces::names(&i.uuid, opnum);
        }
    }
}

/// A SET_INFO's class and level (a rename).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbSetInfo {
    pub class: &'static str,
    pub info_level: &'static str,
}

/// A rename: the file's name before and after.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbRename {
    pub from: String,
    pub to: String,
}

/// The DCE/RPC call a pipe's READ, WRITE or IOCTL carried.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbDcerpc {
    pub request: &'static str,
    pub response: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opnum: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub req: Option<SmbDcerpcSide>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<SmbDcerpcInterface>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub res: Option<SmbDcerpcSide>,
    pub call_id: u32,
}

/// `req` / `res` of a call over a pipe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbDcerpcSide {
    pub frag_cnt: u32,
    pub stub_data_size: u64,
}

/// An interface a bind over a pipe offered.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmbDcerpcInterface {
    pub uuid: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_result: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_reason: Option<u16>,
    /// Suricata 9's service and (a request's) procedure names, as in `dcerpc` records
    /// ([`SmbEvent::name_interfaces`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub procedure: Option<&'static str>,
}

/// A file transaction the data of a READ or WRITE began: the file id had no file transaction yet and its data is
/// a file's as Suricata judges it ([`SmbTxLog::smb2`]'s `new_data`: a file whose CREATE was not seen, or a pipe read
/// answered late, on no known tree). The file parser ([`super::SmbParser`]) follows its bytes from there, so the
/// file Suricata extracts is extracted here too.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BegunFile {
    pub fuid: Vec<u8>,
    /// Its CREATE's name, or what Suricata names a file without one.
    pub name: Vec<u8>,
}

/// Begun files kept between two [`SmbTxLog::take_begun`] (one message begins one at most).
const MAX_BEGUN: usize = 16;

/// The name Suricata writes for an SMB2 command.
pub fn smb2_command_name(c: u16) -> String {
    let s = match c {
        0 => "SMB2_COMMAND_NEGOTIATE_PROTOCOL",
        1 => "SMB2_COMMAND_SESSION_SETUP",
        2 => "SMB2_COMMAND_SESSION_LOGOFF",
        3 => "SMB2_COMMAND_TREE_CONNECT",
        4 => "SMB2_COMMAND_TREE_DISCONNECT",
        5 => "SMB2_COMMAND_CREATE",
        6 => "SMB2_COMMAND_CLOSE",
        7 => "SMB2_COMMAND_FLUSH",
        8 => "SMB2_COMMAND_READ",
        9 => "SMB2_COMMAND_WRITE",
        10 => "SMB2_COMMAND_LOCK",
        11 => "SMB2_COMMAND_IOCTL",
        12 => "SMB2_COMMAND_CANCEL",
        13 => "SMB2_COMMAND_KEEPALIVE",
        14 => "SMB2_COMMAND_FIND",
        15 => "SMB2_COMMAND_CHANGE_NOTIFY",
        16 => "SMB2_COMMAND_GET_INFO",
        17 => "SMB2_COMMAND_SET_INFO",
        18 => "SMB2_COMMAND_OPLOCK_BREAK",
        _ => return c.to_string(),
    };
    s.to_string()
}

/// The name Suricata writes for an SMB2 dialect revision.
pub fn smb2_dialect_name(d: u16) -> String {
    let s = match d {
        0x0202 => "2.02",
        0x0210 => "2.10",
        0x0222 => "2.22",
        0x0224 => "2.24",
        0x02ff => "2.??",
        0x0300 => "3.00",
        0x0302 => "3.02",
        0x0310 => "3.10",
        0x0311 => "3.11",
        _ => return d.to_string(),
    };
    s.to_string()
}

pub use super::nt_status::nt_status_name;

/// The name of an FSCTL code (MS-FSCC §2.3), for the ones SMB clients send.
pub fn fsctl_name(f: u32) -> String {
    let s = match f {
        0x0006_0194 => "FSCTL_DFS_GET_REFERRALS",
        0x0006_01b0 => "FSCTL_DFS_GET_REFERRALS_EX",
        0x0009_0028 => "FSCTL_IS_VOLUME_MOUNTED",
        0x0009_009c => "FSCTL_GET_OBJECT_ID",
        0x0009_00a8 => "FSCTL_GET_REPARSE_POINT",
        0x0009_00c0 => "FSCTL_CREATE_OR_GET_OBJECT_ID",
        0x0009_00c4 => "FSCTL_SET_SPARSE",
        0x0009_40cf => "FSCTL_QUERY_ALLOCATED_RANGES",
        0x0009_80a4 => "FSCTL_SET_REPARSE_POINT",
        0x0009_80c8 => "FSCTL_SET_ZERO_DATA",
        0x0009_c040 => "FSCTL_SET_COMPRESSION",
        0x0011_0018 => "FSCTL_PIPE_WAIT",
        0x0011_400c => "FSCTL_PIPE_PEEK",
        0x0011_c017 => "FSCTL_PIPE_TRANSCEIVE",
        0x0014_0078 => "FSCTL_SRV_REQUEST_RESUME_KEY",
        0x0014_01d4 => "FSCTL_LMR_REQUEST_RESILIENCY",
        0x0014_01fc => "FSCTL_QUERY_NETWORK_INTERFACE_INFO",
        0x0014_0200 => "FSCTL_VALIDATE_NEGOTIATE_INFO_224",
        0x0014_0204 => "FSCTL_VALIDATE_NEGOTIATE_INFO",
        0x0014_4064 => "FSCTL_SRV_ENUMERATE_SNAPSHOTS",
        0x0014_40f2 => "FSCTL_SRV_COPYCHUNK",
        0x0014_41bb => "FSCTL_SRV_READ_HASH",
        0x0014_80f2 => "FSCTL_SRV_COPYCHUNK_WRITE",
        _ => return f.to_string(),
    };
    s.to_string()
}

/// A GUID (an SMB2 FileId, a client or server GUID) as Suricata writes it: the first three fields and the last
/// six bytes in little-endian order.
pub fn guid_string(g: &[u8]) -> String {
    use std::fmt::Write;
    // SMB1: a FID (alone or with the session mixed in), written as a 16-bit number.
    if g.len() == 2 || g.len() == 6 {
        return format!("{:02x}{:02x}", g[1], g[0]);
    }
    if g.len() != 16 {
        return String::new();
    }
    let order = [3, 2, 1, 0, 5, 4, 7, 6, 9, 8, 11, 10, 15, 14, 13, 12];
    let mut s = String::with_capacity(36);
    for (i, &at) in order.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{:02x}", g[at]);
    }
    s
}

fn le16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        d.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn le32(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn le64(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// `len` bytes at `off`, both from the message (`None` when they run past its end).
fn span(m: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    m.get(off..off.checked_add(len)?)
}

/// A FILETIME as seconds since the Unix epoch, 0 before it.
fn unix_secs(ft: u64) -> u32 {
    if ft > 116_444_736_000_000_000 {
        (ft / 10_000_000 - 11_644_473_600) as u32
    } else {
        0
    }
}

/// Bytes with their NULs taken out (how Suricata turns ASCII-range UTF-16 into text), read as lossy UTF-8.
fn no_nuls(d: &[u8]) -> String {
    let v: Vec<u8> = clip(d).iter().copied().filter(|&b| b != 0).collect();
    String::from_utf8_lossy(&v).into_owned()
}

/// What a transaction's key compares: its kind, session and message id (never the tree id).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Key {
    /// A transaction found by its kind, not its key (negotiate, file, rename, ...).
    #[default]
    None,
    /// A generic transaction (and a CREATE's).
    Generic,
    /// SESSION_SETUP, IOCTL, DCE/RPC: the message's header.
    Header,
    /// TREE_CONNECT's request (no tree id yet).
    Tree,
}

#[derive(Clone, Copy, Debug, Default)]
struct Hdr {
    key: Key,
    ssn: u64,
    tree: u32,
    msg: u64,
}

impl Hdr {
    fn same(&self, o: &Hdr) -> bool {
        self.key == o.key && self.ssn == o.ssn && self.msg == o.msg
    }
}

#[derive(Debug)]
struct DceTx {
    req: Option<u8>,
    res: Option<u8>,
    call_id: u32,
    opnum: u16,
    ctx_id: u16,
    frags: [u32; 2],
    stub: [u64; 2],
}

#[derive(Debug)]
enum TxData {
    Generic,
    Negotiate {
        version: u8,
        dialects: Vec<String>,
        client_guid: Option<[u8; 16]>,
        server_guid: Option<[u8; 16]>,
    },
    SessionSetup {
        ntlmssp: Option<SmbNtlmssp>,
        kerberos: Option<SmbKerberos>,
    },
    /// SMB1's session setup: NTLMSSP and both sides' native OS and LAN manager.
    SessionSetup1 {
        ntlmssp: Option<SmbNtlmssp>,
        kerberos: Option<SmbKerberos>,
        request: Option<SmbHost>,
        response: Option<SmbHost>,
    },
    /// SMB1's tree connect: the services both sides named.
    TreeConnect1 {
        share: Vec<u8>,
        is_pipe: bool,
        req_service: String,
        res_service: Option<String>,
    },
    TreeConnect {
        share: Vec<u8>,
        share_type: Option<u8>,
    },
    Create {
        name: Vec<u8>,
        disposition: u32,
        delete: bool,
        directory: bool,
        times: [u32; 4],
        size: u64,
        guid: Vec<u8>,
    },
    File {
        to_server: bool,
        fuid: Vec<u8>,
        name: Vec<u8>,
        share: Vec<u8>,
    },
    Ioctl(u32),
    Rename {
        fuid: Vec<u8>,
        from: Vec<u8>,
        to: Vec<u8>,
    },
    /// A deletion mark: SMB2 SET_INFO (`subcmd` the info class, `level` the info level) or SMB1 TRANS2
    /// (`subcmd` 6 SET_PATH_INFO or 8 SET_FILE_INFO, `level` the pass-through level 1013).
    SetInfo {
        fuid: Vec<u8>,
        name: Vec<u8>,
        delete: bool,
        subcmd: u16,
        level: u16,
    },
    Dcerpc(DceTx),
}

/// A response's status: an NT status code, or SMB1's DOS error class and code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Nt(u32),
    Dos { class: u8, code: u16 },
}

impl Status {
    /// SMB1: the header's status field, read as the flags say (NT status, or error class, reserved, code).
    fn smb1(raw: u32, flags2: u16) -> Status {
        if flags2 & 0x4000 != 0 {
            Status::Nt(raw)
        } else {
            Status::Dos {
                class: raw as u8,
                code: (raw >> 16) as u16,
            }
        }
    }

    /// `status` and `status_code` as Suricata writes them.
    fn names(self) -> (String, String) {
        match self {
            Status::Nt(s) => (
                nt_status_name(s).map_or_else(|| s.to_string(), str::to_string),
                format!("0x{s:x}"),
            ),
            Status::Dos { class, code } => {
                let name = match (class, code) {
                    (1, 0) => "DOS_SUCCESS".to_string(),
                    (1, 1) => "DOS_BAD_FUNC".to_string(),
                    (1, 2) => "DOS_BAD_FILE".to_string(),
                    (1, 3) => "DOS_BAD_PATH".to_string(),
                    (1, 4) => "DOS_TOO_MANY_OPEN_FILES".to_string(),
                    (1, 5) => "DOS_ACCESS_DENIED".to_string(),
                    (1, c) => c.to_string(),
                    (2, 1) => "SRV_ERROR".to_string(),
                    (2, 2) => "SRV_BADPW".to_string(),
                    (2, 3) => "SRV_BADTYPE".to_string(),
                    (2, 4) => "SRV_ACCESS".to_string(),
                    (2, 91) => "SRV_BADUID".to_string(),
                    (2, c) => c.to_string(),
                    (cl, c) => format!("UNKNOWN_{cl:02x}_{c:04x}"),
                };
                (name, format!("0x{code:04x}"))
            }
        }
    }
}

#[derive(Debug)]
struct Tx {
    id: u64,
    /// SMB version (1, 2) and command.
    version: u8,
    command: u16,
    status: Option<Status>,
    hdr: Hdr,
    req_done: bool,
    resp_done: bool,
    data: TxData,
}

impl Tx {
    fn is_generic(&self, version: u8, command: u16, key: &Hdr) -> bool {
        self.version == version && self.command == command && self.hdr.same(key)
    }
}

/// An interface a bind over a pipe offered, with the bind_ack's answer.
#[derive(Clone, Debug)]
struct Iface {
    uuid: [u8; 16],
    major: u16,
    minor: u16,
    ctx_id: u16,
    /// The bind_ack's result for it.
    ack: Option<u16>,
}

/// One SMB2 message's header fields.
#[derive(Clone, Copy, Debug)]
struct Msg {
    command: u16,
    status: u32,
    msg: u64,
    ssn: u64,
    tree: u32,
}

impl Msg {
    /// Where a READ request's file id waits for its response: by session and message id, not tree id. An
    /// asynchronous response (an interim STATUS_PENDING, then the data) carries an async id where the tree id
    /// was, so Suricata 7 and later key the read so (`from2_notree`) and find the data of a pipe read answered late;
    /// the tree it then looks the share up by is the response's (none), so that data makes a file transaction.
    fn read_key(&self) -> (u64, u32, u64) {
        (self.ssn, 0, self.msg)
    }

    fn hdr(&self, key: Key) -> Hdr {
        Hdr {
            key,
            ssn: self.ssn,
            tree: if key == Key::Tree { 0 } else { self.tree },
            msg: self.msg,
        }
    }
}

/// The SMB transactions of one flow (see the module's documentation).
#[derive(Debug, Default)]
pub struct SmbTxLog {
    txs: VecDeque<Tx>,
    next_id: u64,
    /// The negotiated SMB2 dialect (0: none yet).
    dialect: u16,
    /// The negotiated SMB1 dialect (the NEGOTIATE request's string the response chose).
    dialect1: Option<Vec<u8>>,
    max_read: u32,
    max_write: u32,
    /// CREATE requests' names by (session, message id), until the response.
    create_names: HashMap<(u64, u64), Vec<u8>>,
    /// Open files' names by FileId.
    names: HashMap<Vec<u8>, Vec<u8>>,
    /// Connected trees by (session, tree id): share name, pipe or not.
    trees: HashMap<(u64, u32), (Vec<u8>, bool)>,
    /// READ requests' FileIds by (session, tree, message id) until the response; SMB2's with tree 0 (see
    /// [`Msg::read_key`]).
    reads: HashMap<(u64, u32, u64), Vec<u8>>,
    /// SMB1 CLOSE requests' files by (session, multiplex id), until the response.
    closes: HashMap<(u64, u64), Vec<u8>>,
    /// SMB1 TRANS requests' pipe FIDs by (session, tree, multiplex id), until the response.
    trans: HashMap<(u64, u32, u64), Vec<u8>>,
    /// Partial DCE/RPC PDUs read from a pipe (STATUS_BUFFER_OVERFLOW), by (session, tree).
    frags: HashMap<(u64, u32), Vec<u8>>,
    /// The last bind's interfaces.
    ifaces: Option<Vec<Iface>>,
    /// File transactions begun by data since the last [`SmbTxLog::take_begun`], at most [`MAX_BEGUN`].
    begun: Vec<BegunFile>,
    done: Vec<SmbEvent>,
    /// Entries not kept (a table full, a fragment too long) and transactions written before their end.
    pub cut: u64,
}

/// Inserts into a bounded table; beyond [`MAX_ENTRIES`] nothing new is kept and `cut` counts it.
fn put<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, k: K, v: V, cut: &mut u64) {
    if map.len() >= MAX_ENTRIES && !map.contains_key(&k) {
        *cut += 1;
        return;
    }
    map.insert(k, v);
}

/// The DCE/RPC services Suricata follows over a pipe, by the pipe's name (a leading backslash aside).
fn dcerpc_service(name: &[u8]) -> bool {
    let n = match name {
        [b'\\', rest @ ..] if !rest.is_empty() => rest,
        n => n,
    };
    matches!(
        n,
        b"svcctl"
            | b"srvsvc"
            | b"atsvc"
            | b"lsarpc"
            | b"samr"
            | b"spoolss"
            | b"winreg"
            | b"suricata::dcerpc"
    )
}

/// Whether `d` reads as a connection-oriented DCE/RPC header (version 5, minor below 3, a known type).
fn dcerpc_probe(d: &[u8]) -> bool {
    d.len() >= 16 && d[0] == 5 && d[1] < 3 && d[2] <= 20 && le16(d, 8).is_some_and(|l| l > 0)
}

/// A DCE/RPC PDU header: type, flags, little-endian, fragment length, call id; its body after the 16 bytes.
struct Pdu<'a> {
    ptype: u8,
    first: bool,
    last: bool,
    little: bool,
    frag_len: usize,
    call_id: u32,
    /// The bytes after the header, within the fragment length.
    body: &'a [u8],
}

fn pdu(d: &[u8]) -> Option<Pdu<'_>> {
    if d.len() < 16 || d[0] != 5 {
        return None;
    }
    let little = d[4] & 0x10 != 0;
    let u16_at = |at: usize| -> Option<u16> {
        let b: [u8; 2] = d.get(at..at + 2)?.try_into().ok()?;
        Some(if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let frag_len = usize::from(u16_at(8)?);
    if frag_len < 16 {
        return None;
    }
    let b: [u8; 4] = d.get(12..16)?.try_into().ok()?;
    let call_id = if little {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    };
    Some(Pdu {
        ptype: d[2],
        first: d[3] & 1 != 0,
        last: d[3] & 2 != 0,
        little,
        frag_len,
        call_id,
        body: &d[16..frag_len.min(d.len())],
    })
}

impl Pdu<'_> {
    fn u16_at(&self, at: usize) -> Option<u16> {
        let b: [u8; 2] = self.body.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }

    /// A request's or response's stub length: what follows its 8-byte body header within the fragment.
    fn stub_len(&self) -> u64 {
        self.body.len().saturating_sub(8) as u64
    }

    /// A bind's offered interfaces (as many as read whole).
    fn offered(&self) -> Vec<Iface> {
        let mut v = Vec::new();
        let n = self.body.get(8).copied().unwrap_or(0);
        let mut at = 12usize;
        for _ in 0..n {
            let (Some(ctx_id), Some(&n_syn), Some(u)) = (
                self.u16_at(at),
                self.body.get(at + 2),
                self.body.get(at + 4..at + 20),
            ) else {
                break;
            };
            let (Some(major), Some(minor)) = (self.u16_at(at + 20), self.u16_at(at + 22)) else {
                break;
            };
            let mut uuid: [u8; 16] = u.try_into().unwrap_or_default();
            if self.little {
                uuid[..4].reverse();
                uuid[4..6].reverse();
                uuid[6..8].reverse();
            }
            v.push(Iface {
                uuid,
                major,
                minor,
                ctx_id,
                ack: None,
            });
            at += 24 + 20 * usize::from(n_syn);
        }
        v
    }

    /// A bind_ack's results and reasons, in order.
    fn results(&self) -> Vec<(u16, u16)> {
        let Some(addr_len) = self.u16_at(8) else {
            return Vec::new();
        };
        // After the secondary address, padding to a 4-byte boundary of the PDU (its 16-byte header included).
        let at = (16 + 10 + usize::from(addr_len)).next_multiple_of(4) - 16;
        let n = usize::from(self.body.get(at).copied().unwrap_or(0));
        (0..n)
            .map_while(|i| {
                let r = at + 4 + 24 * i;
                Some((self.u16_at(r)?, self.u16_at(r + 2)?))
            })
            .collect()
    }
}

impl SmbTxLog {
    fn new_tx(&mut self, version: u8, command: u16, hdr: Hdr, data: TxData) -> &mut Tx {
        if self.txs.len() >= MAX_TXS
            && let Some(old) = self.txs.pop_front()
        {
            self.cut += 1;
            let e = self.record(old);
            self.done.push(e);
        }
        self.next_id += 1;
        self.txs.push_back(Tx {
            id: self.next_id,
            version,
            command,
            status: None,
            hdr,
            req_done: true,
            resp_done: false,
            data,
        });
        let last = self.txs.len() - 1;
        &mut self.txs[last]
    }

    fn generic(&mut self, version: u8, command: u16, key: &Hdr) -> Option<&mut Tx> {
        self.txs
            .iter_mut()
            .find(|t| t.is_generic(version, command, key))
    }

    fn file_tx(&mut self, fuid: &[u8], to_server: bool) -> Option<&mut Tx> {
        self.txs.iter_mut().find(|t| {
            matches!(&t.data, TxData::File { to_server: d, fuid: f, .. } if *d == to_server && f == fuid)
        })
    }

    /// The DCE/RPC transaction of `call_id` in `hdr`'s session (and, for IOCTL, its message).
    fn dce_tx(&mut self, hdr: &Hdr, version: u8, command: u16, call_id: u32) -> Option<&mut Tx> {
        // SMB1 and SMB2 READ/WRITE: a call's request and response are different messages.
        let by_msg = version == 2 && !matches!(command, READ | WRITE);
        self.txs.iter_mut().find(|t| {
            t.hdr.ssn == hdr.ssn
                && (!by_msg || t.hdr.msg == hdr.msg)
                && matches!(&t.data, TxData::Dcerpc(d) if d.call_id == call_id)
        })
    }

    /// Whether a file id names a pipe of a DCE/RPC service.
    fn is_dcerpc(&self, fuid: &[u8]) -> bool {
        self.names.get(fuid).is_some_and(|n| dcerpc_service(n))
    }

    /// One SMB2 message (`m` starts at its `\xfeSMB` header and ends where the next compounded one starts).
    pub fn smb2(&mut self, to_server: bool, m: &[u8]) {
        if m.get(..4) != Some(b"\xfeSMB") {
            return;
        }
        let (Some(command), Some(status), Some(flags), Some(msg), Some(ssn)) = (
            le16(m, 12),
            le32(m, 8),
            le32(m, 16),
            le64(m, 24),
            le64(m, 40),
        ) else {
            return;
        };
        let response = flags & 1 != 0;
        // An async message carries an async id where the tree id would be.
        let tree = if flags & 2 != 0 {
            0
        } else {
            le32(m, 36).unwrap_or(0)
        };
        let r = Msg {
            command,
            status,
            msg,
            ssn,
            tree,
        };
        if to_server && !response {
            self.smb2_request(&r, m);
        } else if !to_server && response {
            self.smb2_response(&r, m);
        }
        self.sweep();
    }

    fn smb2_request(&mut self, r: &Msg, m: &[u8]) {
        let have_tx = match r.command {
            SET_INFO => self.set_info(r, m),
            IOCTL => {
                self.ioctl_request(r, m);
                true
            }
            TREE_DISCONNECT => {
                self.trees.remove(&(r.ssn, r.tree));
                false
            }
            NEGOTIATE => {
                let Some(count) = le16(m, HDR + 2) else {
                    return self.generic_request(r);
                };
                let Some(guid) = span(m, HDR + 12, 16) else {
                    return self.generic_request(r);
                };
                let Some(list) = span(m, HDR + 36, 2 * usize::from(count)) else {
                    return self.generic_request(r);
                };
                let dialects = list
                    .chunks_exact(2)
                    .take(MAX_DIALECTS)
                    .map(|c| smb2_dialect_name(u16::from_le_bytes([c[0], c[1]])))
                    .collect();
                if !self
                    .txs
                    .iter()
                    .any(|t| matches!(&t.data, TxData::Negotiate { version: 2, .. }))
                {
                    let client_guid = guid.try_into().ok();
                    // Suricata's NEGOTIATE transaction carries no session or tree.
                    self.new_tx(
                        2,
                        NEGOTIATE,
                        Hdr::default(),
                        TxData::Negotiate {
                            version: 2,
                            dialects,
                            client_guid,
                            server_guid: None,
                        },
                    );
                }
                true
            }
            SESSION_SETUP => {
                let blob = (|| {
                    span(
                        m,
                        usize::from(le16(m, HDR + 12)?),
                        usize::from(le16(m, HDR + 14)?),
                    )
                })();
                if let Some(blob) = blob {
                    let (ntlmssp, kerberos) = security_blob(blob);
                    self.new_tx(
                        2,
                        SESSION_SETUP,
                        r.hdr(Key::Header),
                        TxData::SessionSetup { ntlmssp, kerberos },
                    );
                }
                true
            }
            TREE_CONNECT => {
                if m.len() < HDR + 8 {
                    return self.generic_request(r);
                }
                // Suricata reads the share name from the path length field on, NULs taken out, its first byte
                // dropped (the length's low byte, or the path's first backslash when that byte is 0).
                let mut name: Vec<u8> = clip(&m[HDR + 6..])
                    .iter()
                    .copied()
                    .filter(|&b| b != 0)
                    .collect();
                if name.len() > 1 {
                    name.remove(0);
                }
                self.new_tx(
                    2,
                    TREE_CONNECT,
                    r.hdr(Key::Tree),
                    TxData::TreeConnect {
                        share: name,
                        share_type: None,
                    },
                );
                true
            }
            READ => {
                if let (Some(len), Some(guid)) = (le32(m, HDR + 4), span(m, HDR + 16, 16))
                    && (self.max_read == 0 || len <= self.max_read)
                {
                    put(&mut self.reads, r.read_key(), guid.to_vec(), &mut self.cut);
                }
                false
            }
            CREATE => {
                let (Some(disp), Some(opts), Some(off), Some(len)) = (
                    le32(m, HDR + 36),
                    le32(m, HDR + 40),
                    le16(m, HDR + 44),
                    le16(m, HDR + 46),
                ) else {
                    return self.generic_request(r);
                };
                let Some(name) = span(m, usize::from(off), usize::from(len)) else {
                    return self.generic_request(r);
                };
                let name = clip(name).to_vec();
                put(
                    &mut self.create_names,
                    (r.ssn, r.msg),
                    name.clone(),
                    &mut self.cut,
                );
                self.new_tx(
                    2,
                    CREATE,
                    r.hdr(Key::Generic),
                    TxData::Create {
                        name,
                        disposition: disp,
                        delete: opts & 0x1000 != 0,
                        directory: opts & 1 != 0,
                        times: [0; 4],
                        size: 0,
                        guid: Vec::new(),
                    },
                );
                true
            }
            WRITE => {
                self.write_request(r, m);
                true
            }
            CLOSE => {
                if let Some(guid) = span(m, HDR + 8, 16) {
                    for to_server in [true, false] {
                        if let Some(tx) = self.file_tx(guid, to_server) {
                            tx.req_done = true;
                            tx.resp_done = true;
                            tx.status = Some(Status::Nt(STATUS_SUCCESS));
                        }
                    }
                }
                false
            }
            _ => false,
        };
        if !have_tx {
            self.generic_request(r);
        }
    }

    /// A generic transaction for a request whose command makes one (not READ, WRITE, GET_INFO, SET_INFO).
    fn generic_request(&mut self, r: &Msg) {
        if !matches!(r.command, READ | WRITE | GET_INFO | SET_INFO) {
            self.new_tx(2, r.command, r.hdr(Key::Generic), TxData::Generic);
        }
    }

    /// SET_INFO: a rename (FILE_INFO, FileRenameInformation) or a deletion mark (FileDispositionInformation)
    /// makes a transaction.
    fn set_info(&mut self, r: &Msg, m: &[u8]) -> bool {
        let (Some(&class), Some(&level), Some(len), Some(off), Some(guid)) = (
            m.get(HDR + 2),
            m.get(HDR + 3),
            le32(m, HDR + 4),
            le16(m, HDR + 8),
            span(m, HDR + 16, 16),
        ) else {
            return false;
        };
        let Some(buf) = span(m, usize::from(off), len as usize) else {
            return false;
        };
        let fuid = guid.to_vec();
        match (class, level) {
            (1, 10) => {
                // FILE_RENAME_INFORMATION_TYPE_2: flags (8), root directory (8), name length (4), name.
                let Some(name) = le32(buf, 16).and_then(|n| span(buf, 20, n as usize)) else {
                    return false;
                };
                let to: Vec<u8> = clip(name).iter().copied().filter(|&b| b != 0).collect();
                let from = self
                    .names
                    .get(&fuid)
                    .cloned()
                    .unwrap_or_else(|| b"<unknown>".to_vec());
                let tx = self.new_tx(
                    2,
                    SET_INFO,
                    r.hdr(Key::Generic),
                    TxData::Rename { fuid, from, to },
                );
                tx.req_done = true;
                true
            }
            (1, 13) => {
                let Some(&delete) = buf.first() else {
                    return false;
                };
                let name = match self.names.get(&fuid) {
                    Some(n) => n.clone(),
                    // A compounded CREATE just before: its name.
                    None => r
                        .msg
                        .checked_sub(1)
                        .and_then(|p| self.create_names.get(&(r.ssn, p)))
                        .cloned()
                        .unwrap_or_else(|| b"<unknown>".to_vec()),
                };
                self.new_tx(
                    2,
                    SET_INFO,
                    r.hdr(Key::Generic),
                    TxData::SetInfo {
                        fuid,
                        name,
                        // FILE_DISPOSITION_INFORMATION's DeletePending: its low bit, as Suricata reads it.
                        delete: delete & 1 == 1,
                        subcmd: u16::from(class),
                        level: u16::from(level),
                    },
                );
                true
            }
            _ => false,
        }
    }

    fn ioctl_request(&mut self, r: &Msg, m: &[u8]) {
        let hdr = r.hdr(Key::Header);
        let (Some(func), Some(guid), Some(off), Some(len)) = (
            le32(m, HDR + 4),
            span(m, HDR + 8, 16),
            le32(m, HDR + 24),
            le32(m, HDR + 28),
        ) else {
            self.new_tx(2, IOCTL, hdr, TxData::Generic);
            return;
        };
        let data = span(m, off as usize, len as usize).unwrap_or(&[]);
        if func == FSCTL_PIPE_TRANSCEIVE && self.is_dcerpc(guid) {
            self.dcerpc_write(2, IOCTL, hdr, data);
        } else {
            self.new_tx(2, IOCTL, hdr, TxData::Ioctl(func));
        }
    }

    fn write_request(&mut self, r: &Msg, m: &[u8]) {
        let (Some(doff), Some(len), Some(guid)) =
            (le16(m, HDR + 2), le32(m, HDR + 4), span(m, HDR + 16, 16))
        else {
            return;
        };
        if self.max_write != 0 && len > self.max_write {
            return;
        }
        let data = m.get(usize::from(doff)..).unwrap_or(&[]);
        let data = &data[..data.len().min(len as usize)];
        let fuid = guid.to_vec();
        if self.file_tx(&fuid, true).is_some() {
            return;
        }
        self.new_data(r, &fuid, data, true);
    }

    /// Data of a file id no file transaction follows yet: DCE/RPC on a pipe of a DCE/RPC service, nothing on
    /// another pipe, a new file transaction otherwise.
    fn new_data(&mut self, r: &Msg, fuid: &[u8], data: &[u8], to_server: bool) {
        let (share, mut is_pipe) = self
            .trees
            .get(&(r.ssn, r.tree))
            .cloned()
            .unwrap_or_default();
        let mut is_dcerpc = (is_pipe || share.is_empty()) && self.is_dcerpc(fuid);
        if share.is_empty() && !is_pipe && dcerpc_probe(data) {
            // No TREE_CONNECT seen: bytes that read as DCE/RPC make the tree a pipe.
            put(
                &mut self.trees,
                (r.ssn, r.tree),
                (b"suricata::dcerpc".to_vec(), true),
                &mut self.cut,
            );
            if !is_dcerpc {
                put(
                    &mut self.names,
                    fuid.to_vec(),
                    b"suricata::dcerpc".to_vec(),
                    &mut self.cut,
                );
            }
            is_pipe = true;
            is_dcerpc = true;
        }
        if is_pipe && is_dcerpc {
            let hdr = r.hdr(Key::Header);
            if to_server {
                self.dcerpc_write(2, WRITE, hdr, data);
            } else {
                self.dcerpc_read(2, READ, r.status, hdr, data);
            }
        } else if !is_pipe {
            let name = match self.names.get(fuid) {
                Some(n) => n.clone(),
                None if to_server => Vec::new(),
                None => b"<unknown>".to_vec(),
            };
            let command = if to_server { WRITE } else { READ };
            let hdr = Hdr {
                key: Key::Header,
                ssn: r.ssn,
                tree: r.tree,
                msg: 0,
            };
            if self.begun.len() < MAX_BEGUN {
                self.begun.push(BegunFile {
                    fuid: fuid.to_vec(),
                    name: name.clone(),
                });
            }
            let tx = self.new_tx(
                2,
                command,
                hdr,
                TxData::File {
                    to_server,
                    fuid: fuid.to_vec(),
                    name,
                    share: if to_server { Vec::new() } else { share },
                },
            );
            tx.req_done = false;
        }
    }

    /// A DCE/RPC PDU a pipe's WRITE or IOCTL request carried.
    fn dcerpc_write(&mut self, version: u8, command: u16, hdr: Hdr, data: &[u8]) {
        let Some(p) = pdu(data) else {
            return;
        };
        if p.ptype == crate::dcerpc::log::REQUEST && !p.first {
            if let Some(tx) = self.dce_tx(&hdr, version, command, p.call_id)
                && let TxData::Dcerpc(d) = &mut tx.data
            {
                d.stub[0] += p.stub_len();
                d.frags[0] += 1;
                if p.last {
                    tx.req_done = true;
                }
            }
            return;
        }
        let mut d = DceTx {
            req: Some(p.ptype),
            res: None,
            call_id: p.call_id,
            opnum: 0,
            ctx_id: 0,
            frags: [0; 2],
            stub: [0; 2],
        };
        let mut req_done = true;
        if p.ptype == crate::dcerpc::log::REQUEST {
            if let (Some(ctx), Some(op)) = (p.u16_at(4), p.u16_at(6)) {
                d.ctx_id = ctx;
                d.opnum = op;
                d.stub[0] = p.stub_len();
                d.frags[0] = 1;
                req_done = p.last;
            }
        } else if p.ptype == crate::dcerpc::log::BIND {
            let offered = p.offered();
            self.ifaces = (!offered.is_empty()).then_some(offered);
        }
        let tx = self.new_tx(version, command, hdr, TxData::Dcerpc(d));
        tx.req_done = req_done;
    }

    /// A DCE/RPC PDU (or part of one) a pipe's READ or IOCTL response carried.
    fn dcerpc_read(&mut self, version: u8, command: u16, status: u32, hdr: Hdr, data: &[u8]) {
        if status != STATUS_SUCCESS && status != STATUS_BUFFER_OVERFLOW {
            if let Some(tx) = self.generic(version, command, &hdr) {
                tx.status = Some(Status::Nt(status));
                tx.resp_done = true;
            }
            return;
        }
        let key = (hdr.ssn, hdr.tree);
        let mut buf = self.frags.remove(&key).unwrap_or_default();
        buf.extend_from_slice(&data[..data.len().min(MAX_FRAG.saturating_sub(buf.len()))]);
        let Some(p) = pdu(&buf) else {
            return;
        };
        if status == STATUS_BUFFER_OVERFLOW && buf.len() < p.frag_len {
            if buf.len() < MAX_FRAG
                && (self.frags.len() < MAX_FRAGS || self.frags.contains_key(&key))
            {
                self.frags.insert(key, buf);
            } else {
                self.cut += 1;
            }
            return;
        }
        if p.ptype == crate::dcerpc::log::BIND_ACK {
            let results = p.results();
            let call_id = p.call_id;
            if let Some(tx) = self.dce_tx(&hdr, version, command, call_id) {
                if let TxData::Dcerpc(d) = &mut tx.data {
                    d.res = Some(crate::dcerpc::log::BIND_ACK);
                }
                tx.status = Some(Status::Nt(status));
                tx.resp_done = true;
                if let Some(ifaces) = &mut self.ifaces {
                    for (i, r) in ifaces.iter_mut().zip(results) {
                        i.ack = Some(r.0);
                    }
                }
            }
            return;
        }
        let (ptype, last, stub, call_id) = (p.ptype, p.last, p.stub_len(), p.call_id);
        let found = self.dce_tx(&hdr, version, command, call_id).is_some();
        if !found {
            self.new_tx(
                version,
                command,
                hdr,
                TxData::Dcerpc(DceTx {
                    req: None,
                    res: None,
                    call_id,
                    opnum: 0,
                    ctx_id: 0,
                    frags: [0; 2],
                    stub: [0; 2],
                }),
            )
            .req_done = false;
        }
        let Some(tx) = self.dce_tx(&hdr, version, command, call_id) else {
            return;
        };
        let TxData::Dcerpc(d) = &mut tx.data else {
            return;
        };
        d.res = Some(ptype);
        tx.status = Some(Status::Nt(status));
        if ptype == crate::dcerpc::log::RESPONSE {
            d.stub[1] += stub;
            d.frags[1] += 1;
            tx.resp_done = last;
        } else {
            tx.resp_done = true;
        }
    }

    fn smb2_response(&mut self, r: &Msg, m: &[u8]) {
        let have_tx = match r.command {
            IOCTL => {
                self.ioctl_response(r, m);
                true
            }
            SESSION_SETUP => {
                let exact = r.hdr(Key::Header);
                let zero = Hdr { ssn: 0, ..exact };
                let tx = if r.ssn != 0
                    && self.txs.iter().any(|t| {
                        matches!(t.data, TxData::SessionSetup { .. }) && t.hdr.same(&exact)
                    }) {
                    self.txs.iter_mut().find(|t| {
                        matches!(t.data, TxData::SessionSetup { .. }) && t.hdr.same(&exact)
                    })
                } else {
                    self.txs.iter_mut().find(|t| {
                        matches!(t.data, TxData::SessionSetup { .. }) && t.hdr.same(&zero)
                    })
                };
                if let Some(tx) = tx {
                    tx.hdr = exact;
                    tx.status = Some(Status::Nt(r.status));
                    tx.resp_done = true;
                }
                true
            }
            WRITE => false,
            READ => {
                if r.status == STATUS_SUCCESS || r.status == STATUS_BUFFER_OVERFLOW {
                    self.read_response(r, m);
                } else if r.status == STATUS_END_OF_FILE
                    && let Some(guid) = self.reads.remove(&r.read_key())
                    && let Some(tx) = self.file_tx(&guid, false)
                {
                    tx.status = Some(Status::Nt(r.status));
                    tx.req_done = true;
                }
                false
            }
            CREATE if r.status == STATUS_SUCCESS => {
                if let Some(mut name) = self.create_names.remove(&(r.ssn, r.msg)) {
                    name.retain(|&b| b != 0);
                    if let Some(guid) = span(m, HDR + 64, 16) {
                        put(&mut self.names, guid.to_vec(), name, &mut self.cut);
                    }
                }
                let key = r.hdr(Key::Generic);
                let fields = (
                    le64(m, HDR + 8),
                    le64(m, HDR + 16),
                    le64(m, HDR + 24),
                    le64(m, HDR + 32),
                    le64(m, HDR + 48),
                    span(m, HDR + 64, 16),
                );
                if let Some(tx) = self.generic(2, CREATE, &key) {
                    tx.status = Some(Status::Nt(r.status));
                    tx.resp_done = true;
                    if let (Some(c), Some(a), Some(w), Some(ch), Some(size), Some(guid)) = fields
                        && let TxData::Create {
                            times,
                            size: s,
                            guid: g,
                            ..
                        } = &mut tx.data
                    {
                        *times = [unix_secs(c), unix_secs(a), unix_secs(w), unix_secs(ch)];
                        *s = size;
                        *g = guid.to_vec();
                    }
                }
                true
            }
            TREE_DISCONNECT => {
                self.trees.remove(&(r.ssn, r.tree));
                false
            }
            TREE_CONNECT => {
                let key = r.hdr(Key::Tree);
                let success = r.status == STATUS_SUCCESS;
                let share_type = m.get(HDR + 2).copied();
                if success && share_type.is_none() {
                    false
                } else {
                    let tx = self
                        .txs
                        .iter_mut()
                        .find(|t| matches!(t.data, TxData::TreeConnect { .. }) && t.hdr.same(&key));
                    let found = tx.is_some();
                    let mut tree = None;
                    if let Some(tx) = tx {
                        if success
                            && let TxData::TreeConnect {
                                share,
                                share_type: st,
                            } = &mut tx.data
                        {
                            *st = share_type;
                            tree = Some((share.clone(), share_type == Some(2)));
                        }
                        if success {
                            tx.hdr = r.hdr(Key::Header);
                        }
                        tx.resp_done = true;
                        tx.status = Some(Status::Nt(r.status));
                    }
                    if let Some(t) = tree {
                        put(&mut self.trees, (r.ssn, r.tree), t, &mut self.cut);
                    }
                    success || found
                }
            }
            NEGOTIATE => {
                let mut server_guid = None;
                if r.status == STATUS_SUCCESS {
                    let (Some(dialect), Some(guid), Some(rd), Some(wr)) = (
                        le16(m, HDR + 4),
                        span(m, HDR + 8, 16),
                        le32(m, HDR + 32),
                        le32(m, HDR + 36),
                    ) else {
                        return;
                    };
                    self.dialect = dialect;
                    self.max_read = rd;
                    self.max_write = wr;
                    server_guid = guid.try_into().ok();
                }
                let tx = match self
                    .txs
                    .iter()
                    .position(|t| matches!(t.data, TxData::Negotiate { version: 2, .. }))
                {
                    Some(i) => Some(i),
                    None => self
                        .txs
                        .iter()
                        .position(|t| matches!(t.data, TxData::Negotiate { version: 1, .. })),
                };
                match tx {
                    Some(i) => {
                        let tx = &mut self.txs[i];
                        if let TxData::Negotiate { server_guid: g, .. } = &mut tx.data {
                            *g = server_guid;
                        }
                        tx.status = Some(Status::Nt(r.status));
                        tx.resp_done = true;
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        };
        if !have_tx {
            let key = r.hdr(Key::Generic);
            if let Some(tx) = self.generic(2, r.command, &key) {
                if r.status != STATUS_PENDING {
                    tx.resp_done = true;
                }
                tx.status = Some(Status::Nt(r.status));
            }
        }
    }

    fn ioctl_response(&mut self, r: &Msg, m: &[u8]) {
        let hdr = r.hdr(Key::Header);
        let parsed = (|| {
            if le16(m, HDR)? != 49 {
                return None;
            }
            let func = le32(m, HDR + 4)?;
            let guid = span(m, HDR + 8, 16)?;
            let data = span(m, le32(m, HDR + 32)? as usize, le32(m, HDR + 36)? as usize)?;
            Some((func, guid, data))
        })();
        if let Some((func, guid, data)) = parsed
            && func == FSCTL_PIPE_TRANSCEIVE
            && self.is_dcerpc(guid)
        {
            self.dcerpc_read(2, IOCTL, r.status, hdr, data);
            return;
        }
        if let Some(tx) = self.generic(2, IOCTL, &hdr) {
            tx.status = Some(Status::Nt(r.status));
            if r.status != STATUS_PENDING {
                tx.resp_done = true;
            }
        }
    }

    fn read_response(&mut self, r: &Msg, m: &[u8]) {
        let (Some(&doff), Some(len)) = (m.get(HDR + 2), le32(m, HDR + 4)) else {
            return;
        };
        if self.max_read != 0 && len > self.max_read {
            return;
        }
        let Some(guid) = self.reads.remove(&r.read_key()) else {
            return;
        };
        if self.file_tx(&guid, false).is_some() {
            return;
        }
        let data = m.get(usize::from(doff)..).unwrap_or(&[]);
        let data = &data[..data.len().min(len as usize)];
        self.new_data(r, &guid, data, false);
    }

    /// The transactions both of whose sides are done: written, in order, and forgotten.
    fn sweep(&mut self) {
        if !self.txs.iter().any(|t| t.req_done && t.resp_done) {
            return;
        }
        let txs = std::mem::take(&mut self.txs);
        for t in txs {
            if t.req_done && t.resp_done {
                let e = self.record(t);
                self.done.push(e);
            } else {
                self.txs.push_back(t);
            }
        }
    }

    /// The file transactions begun by data since the last call (see [`BegunFile`]).
    pub(crate) fn take_begun(&mut self) -> std::vec::Drain<'_, BegunFile> {
        self.begun.drain(..)
    }

    /// The records finished since the last call, in the order they finished.
    pub fn take_done(&mut self) -> std::vec::Drain<'_, SmbEvent> {
        self.done.drain(..)
    }

    /// The flow ended: every transaction still open is written as it stands.
    pub fn finish(&mut self) -> std::vec::Drain<'_, SmbEvent> {
        while let Some(t) = self.txs.pop_front() {
            let e = self.record(t);
            self.done.push(e);
        }
        self.done.drain(..)
    }

    fn record(&self, t: Tx) -> SmbEvent {
        let mut e = SmbEvent {
            tx_id: t.id - 1,
            id: t.id,
            dialect: if self.dialect != 0 {
                smb2_dialect_name(self.dialect)
            } else if let Some(d) = &self.dialect1 {
                String::from_utf8(d.clone()).unwrap_or_else(|_| "invalid".into())
            } else {
                "unknown".to_string()
            },
            command: Some(match t.version {
                1 => smb1_command_name(t.command as u8),
                _ => smb2_command_name(t.command),
            }),
            status: t.status.map(|s| s.names().0),
            status_code: t.status.map(|s| s.names().1),
            session_id: t.hdr.ssn,
            tree_id: t.hdr.tree,
            ..SmbEvent::default()
        };
        match t.data {
            TxData::Generic => {}
            TxData::Negotiate {
                dialects,
                client_guid,
                server_guid,
                ..
            } => {
                e.client_dialects = Some(dialects).filter(|d| !d.is_empty());
                e.client_guid = client_guid.map(|g| guid_string(&g));
                e.server_guid = Some(server_guid.map_or_else(String::new, |g| guid_string(&g)));
                e.max_read_size = (self.max_read > 0).then_some(self.max_read);
                e.max_write_size = (self.max_write > 0).then_some(self.max_write);
            }
            TxData::SessionSetup { ntlmssp, kerberos } => {
                e.ntlmssp = ntlmssp;
                e.kerberos = kerberos;
            }
            TxData::SessionSetup1 {
                ntlmssp,
                kerberos,
                request,
                response,
            } => {
                e.ntlmssp = ntlmssp;
                e.kerberos = kerberos;
                e.request = request;
                e.response = response;
            }
            TxData::TreeConnect1 {
                share,
                is_pipe,
                req_service,
                res_service,
            } => {
                let name = String::from_utf8_lossy(&share).into_owned();
                if is_pipe {
                    e.named_pipe = Some(name);
                } else {
                    e.share = Some(name);
                }
                e.service = Some(SmbService {
                    request: Some(req_service),
                    response: res_service,
                });
            }
            TxData::TreeConnect { share, share_type } => {
                let name = String::from_utf8_lossy(&share).into_owned();
                if share_type == Some(2) {
                    e.named_pipe = Some(name);
                } else {
                    e.share = Some(name);
                }
                e.share_type = Some(match share_type {
                    Some(1) => "FILE",
                    Some(2) => "PIPE",
                    Some(3) => "PRINT",
                    _ => "UNKNOWN",
                });
            }
            TxData::Create {
                name,
                disposition,
                delete,
                directory,
                times,
                size,
                guid,
            } => {
                let name = no_nuls(&name);
                if name.is_empty() {
                    e.filename = Some("<share_root>".into());
                } else if directory {
                    e.directory = Some(name);
                } else {
                    e.filename = Some(name);
                }
                e.disposition = Some(match disposition {
                    0 => "FILE_SUPERSEDE",
                    1 => "FILE_OPEN",
                    2 => "FILE_CREATE",
                    3 => "FILE_OPEN_IF",
                    4 => "FILE_OVERWRITE",
                    5 => "FILE_OVERWRITE_IF",
                    _ => "UNKNOWN",
                });
                e.access = Some(if delete { "delete on close" } else { "normal" });
                [e.created, e.accessed, e.modified, e.changed] = times.map(Some);
                e.size = Some(size);
                e.fuid = Some(guid_string(&guid));
            }
            TxData::File {
                fuid, name, share, ..
            } => {
                e.filename = Some(String::from_utf8_lossy(&name).into_owned());
                e.share = Some(String::from_utf8_lossy(&share).into_owned());
                e.fuid = Some(guid_string(&fuid));
            }
            TxData::Ioctl(func) => e.function = Some(fsctl_name(func)),
            TxData::Rename { fuid, from, to } => {
                if t.version == 2 {
                    e.set_info = Some(SmbSetInfo {
                        class: "FILE_INFO",
                        info_level: "SMB2_FILE_RENAME_INFO",
                    });
                }
                e.rename = Some(SmbRename {
                    from: String::from_utf8_lossy(&from).into_owned(),
                    to: String::from_utf8_lossy(&to).into_owned(),
                });
                e.fuid = Some(guid_string(&fuid));
            }
            TxData::SetInfo {
                fuid,
                name,
                delete,
                subcmd,
                level,
            } => {
                let name = no_nuls(&name);
                e.filename = Some(if name.is_empty() {
                    "<share_root>".into()
                } else {
                    name
                });
                e.access = Some(if delete { "delete on close" } else { "normal" });
                // Suricata names these whatever the version; SMB2's class and level never take these values.
                e.subcmd = match subcmd {
                    TRANS2_SET_FILE_INFO => Some("SET_FILE_INFO"),
                    TRANS2_SET_PATH_INFO => Some("SET_PATH_INFO"),
                    _ => None,
                };
                e.level_of_interest =
                    (level == LEVEL_DISPOSITION).then_some("Set Disposition Information");
                e.fuid = Some(guid_string(&fuid));
            }
            TxData::Dcerpc(d) => e.dcerpc = Some(self.dcerpc_record(&d)),
        }
        e
    }

    fn dcerpc_record(&self, d: &DceTx) -> SmbDcerpc {
        use crate::dcerpc::log::{BIND, REQUEST, RESPONSE, pdu_type_name, uuid_string};
        let mut o = SmbDcerpc {
            request: d.req.map_or("REQUEST_LOST", pdu_type_name),
            response: d.res.map_or("UNREPLIED", pdu_type_name),
            call_id: d.call_id,
            ..SmbDcerpc::default()
        };
        let iface = |i: &Iface, acks: bool| SmbDcerpcInterface {
            uuid: uuid_string(&i.uuid),
            version: format!("{}.{}", i.major, i.minor),
            ack_result: i.ack.filter(|_| acks),
            // Suricata's SMB logger writes `ack_reason` for an acknowledged interface but its bind_ack handling
            // over SMB keeps the result only, so the reason it writes is always 0 (its DCE/RPC-over-TCP logger
            // writes no reason, as `crate::dcerpc::log` does not).
            ack_reason: i.ack.filter(|_| acks).map(|_| 0),
            ..Default::default()
        };
        match d.req {
            Some(REQUEST) => {
                o.opnum = Some(d.opnum);
                o.req = Some(SmbDcerpcSide {
                    frag_cnt: d.frags[0],
                    stub_data_size: d.stub[0],
                });
                o.interfaces = self
                    .ifaces
                    .iter()
                    .flatten()
                    .filter(|i| i.ctx_id == d.ctx_id)
                    .map(|i| iface(i, false))
                    .collect();
            }
            Some(BIND) => {
                o.interfaces = self
                    .ifaces
                    .iter()
                    .flatten()
                    .map(|i| iface(i, true))
                    .collect();
            }
            _ => {}
        }
        if d.res == Some(RESPONSE) {
            o.res = Some(SmbDcerpcSide {
                frag_cnt: d.frags[1],
                stub_data_size: d.stub[1],
            });
        }
        o
    }
}

/// The name Suricata writes for an SMB1 command.
pub fn smb1_command_name(c: u8) -> String {
    let s = match c {
        0x00 => "SMB1_COMMAND_CREATE_DIRECTORY",
        0x01 => "SMB1_COMMAND_DELETE_DIRECTORY",
        0x02 => "SMB1_COMMAND_OPEN",
        0x03 => "SMB1_COMMAND_CREATE",
        0x04 => "SMB1_COMMAND_CLOSE",
        0x05 => "SMB1_COMMAND_FLUSH",
        0x06 => "SMB1_COMMAND_DELETE",
        0x07 => "SMB1_COMMAND_RENAME",
        0x08 => "SMB1_COMMAND_QUERY_INFORMATION",
        0x09 => "SMB1_COMMAND_SET_INFORMATION",
        0x0a => "SMB1_COMMAND_READ",
        0x0b => "SMB1_COMMAND_WRITE",
        0x0c => "SMB1_COMMAND_LOCK_BYTE_RANGE",
        0x0d => "SMB1_COMMAND_UNLOCK_BYTE_RANGE",
        0x0e => "SMB1_COMMAND_CREATE_TEMPORARY",
        0x0f => "SMB1_COMMAND_CREATE_NEW",
        0x10 => "SMB1_COMMAND_CHECK_DIRECTORY",
        0x11 => "SMB1_COMMAND_PROCESS_EXIT",
        0x12 => "SMB1_COMMAND_SEEK",
        0x13 => "SMB1_COMMAND_LOCK_AND_READ",
        0x14 => "SMB1_COMMAND_WRITE_AND_UNLOCK",
        0x24 => "SMB1_COMMAND_LOCKING_ANDX",
        0x25 => "SMB1_COMMAND_TRANS",
        0x2b => "SMB1_COMMAND_ECHO",
        0x2c => "SMB1_COMMAND_WRITE_AND_CLOSE",
        0x2d => "SMB1_COMMAND_OPEN_ANDX",
        0x2e => "SMB1_COMMAND_READ_ANDX",
        0x2f => "SMB1_COMMAND_WRITE_ANDX",
        0x32 => "SMB1_COMMAND_TRANS2",
        0x33 => "SMB1_COMMAND_TRANS2_SECONDARY",
        0x34 => "SMB1_COMMAND_FIND_CLOSE2",
        0x71 => "SMB1_COMMAND_TREE_DISCONNECT",
        0x72 => "SMB1_COMMAND_NEGOTIATE_PROTOCOL",
        0x73 => "SMB1_COMMAND_SESSION_SETUP_ANDX",
        0x74 => "SMB1_COMMAND_LOGOFF_ANDX",
        0x75 => "SMB1_COMMAND_TREE_CONNECT_ANDX",
        0x80 => "SMB1_COMMAND_QUERY_INFO_DISK",
        0xa0 => "SMB1_COMMAND_NT_TRANS",
        0xa1 => "SMB1_COMMAND_NT_TRANS_SECONDARY",
        0xa2 => "SMB1_COMMAND_NT_CREATE_ANDX",
        0xa4 => "SMB1_COMMAND_NT_CANCEL",
        _ => return c.to_string(),
    };
    s.to_string()
}

const SMB1_CLOSE: u8 = 0x04;
const SMB1_WRITE: u8 = 0x0b;
const SMB1_LOCKING_ANDX: u8 = 0x24;
const SMB1_TRANS: u8 = 0x25;
const SMB1_WRITE_AND_CLOSE: u8 = 0x2c;
const SMB1_OPEN_ANDX: u8 = 0x2d;
const SMB1_READ_ANDX: u8 = 0x2e;
const SMB1_WRITE_ANDX: u8 = 0x2f;
const SMB1_TRANS2: u8 = 0x32;
const SMB1_TRANS2_SECONDARY: u8 = 0x33;
/// TRANS2 subcommands and pass-through information levels (MS-CIFS 2.2.6, MS-SMB 2.2.2.3.5).
const TRANS2_SET_PATH_INFO: u16 = 6;
const TRANS2_SET_FILE_INFO: u16 = 8;
const LEVEL_RENAME: u16 = 1010;
const LEVEL_DISPOSITION: u16 = 1013;
const SMB1_TREE_DISCONNECT: u8 = 0x71;
const SMB1_NEGOTIATE: u8 = 0x72;
const SMB1_SESSION_SETUP_ANDX: u8 = 0x73;
const SMB1_LOGOFF_ANDX: u8 = 0x74;
const SMB1_TREE_CONNECT_ANDX: u8 = 0x75;
const SMB1_NT_CREATE_ANDX: u8 = 0xa2;
const SMB1_NT_CANCEL: u8 = 0xa4;

/// One SMB1 message's header fields.
#[derive(Clone, Copy, Debug)]
struct Msg1 {
    status: Status,
    nt_status: u32,
    unicode: bool,
    tree: u16,
    uid: u16,
    mid: u16,
}

impl Msg1 {
    fn hdr(&self, key: Key) -> Hdr {
        Hdr {
            key,
            ssn: u64::from(self.uid),
            tree: if key == Key::Tree {
                0
            } else {
                u32::from(self.tree)
            },
            msg: u64::from(self.mid),
        }
    }

    /// A FID with the session (user id) mixed in, as Suricata keys SMB1 files.
    fn fid(&self, fid: &[u8]) -> Vec<u8> {
        let mut v = fid.to_vec();
        v.extend_from_slice(&u32::from(self.uid).to_be_bytes());
        v
    }
}

/// A NUL-terminated UTF-16LE string's low bytes (how Suricata reads a TRANS2 path: ASCII-range names as bytes), at
/// most [`MAX_NAME`] kept; `None` when no NUL ends it.
fn utf16_low_bytes(d: &[u8]) -> Option<Vec<u8>> {
    let end = d.chunks_exact(2).position(|c| c == [0, 0])?;
    Some(
        d[..2 * end]
            .iter()
            .step_by(2)
            .take(MAX_NAME)
            .copied()
            .collect(),
    )
}

/// A NUL-terminated string at the start of `d`: UTF-16LE when `unicode`, bytes otherwise; and what follows it.
fn smb1_string(d: &[u8], unicode: bool) -> (String, &[u8]) {
    if unicode {
        let end = d
            .chunks_exact(2)
            .position(|c| c == [0, 0])
            .map_or(d.len() & !1, |i| i * 2);
        let units: Vec<u16> = d[..end.min(MAX_NAME)]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        (
            String::from_utf16_lossy(&units),
            d.get(end + 2..).unwrap_or(&[]),
        )
    } else {
        let end = memchr::memchr(0, d).unwrap_or(d.len());
        (
            String::from_utf8_lossy(clip(&d[..end])).into_owned(),
            d.get(end + 1..).unwrap_or(&[]),
        )
    }
}

/// SMB1 native OS and LAN manager strings after a session setup's blob or passwords (`rest`, at offset `at` of the
/// message), `skip` strings in: Unicode (aligned to an even offset) when the flags say so and there is more than a
/// byte.
fn smb1_host(r: &Msg1, at: usize, rest: &[u8], skip: usize) -> Option<SmbHost> {
    let unicode = r.unicode && rest.len() > 1;
    let mut d = if unicode && at % 2 == 1 {
        &rest[1..]
    } else {
        rest
    };
    // Strings before the host's (a request without extended security: the account and its domain).
    for _ in 0..skip {
        d = smb1_string(d, unicode).1;
    }
    let (os, d) = smb1_string(d, unicode);
    let (lm, _) = smb1_string(d, unicode);
    Some(SmbHost {
        native_os: os,
        native_lm: lm,
    })
}

/// SMB1 commands whose block starts with an AndX header (next command, its offset).
fn smb1_andx(c: u8) -> bool {
    matches!(
        c,
        SMB1_LOCKING_ANDX
            | SMB1_OPEN_ANDX
            | SMB1_READ_ANDX
            | SMB1_SESSION_SETUP_ANDX
            | SMB1_LOGOFF_ANDX
            | SMB1_TREE_CONNECT_ANDX
            | SMB1_NT_CREATE_ANDX
            | SMB1_WRITE_ANDX
    )
}

/// One SMB1 command block: its words and bytes, and where it starts in the message.
struct Block<'a> {
    at: usize,
    words: &'a [u8],
    bytes: &'a [u8],
}

fn block(m: &[u8], at: usize) -> Option<Block<'_>> {
    let wc = usize::from(*m.get(at)?);
    let words = span(m, at + 1, 2 * wc)?;
    let bc = usize::from(le16(m, at + 1 + 2 * wc)?);
    let start = at + 3 + 2 * wc;
    let bytes = m.get(start..start + bc.min(m.len().saturating_sub(start)))?;
    Some(Block { at, words, bytes })
}

impl SmbTxLog {
    /// One SMB1 message (`m` starts at its `\xffSMB` header). Its AndX chain is followed as Suricata follows it.
    pub fn smb1(&mut self, to_server: bool, m: &[u8]) {
        if m.get(..4) != Some(b"\xffSMB") {
            return;
        }
        let (Some(&first), Some(raw), Some(flags2), Some(tree), Some(uid), Some(mid)) = (
            m.get(4),
            le32(m, 5),
            le16(m, 10),
            le16(m, 24),
            le16(m, 28),
            le16(m, 30),
        ) else {
            return;
        };
        let r = Msg1 {
            status: Status::smb1(raw, flags2),
            nt_status: raw,
            unicode: flags2 & 0x8000 != 0,
            tree,
            uid,
            mid,
        };
        let mut at = 32usize;
        let mut command = first;
        for _ in 0..8 {
            let Some(b) = block(m, at) else {
                // Too short for its block: the generic transaction alone, as Suricata makes it.
                if at == 32 {
                    if to_server {
                        self.smb1_generic_request(&r, first, false);
                    } else {
                        self.smb1_generic_response(&r, first);
                    }
                }
                break;
            };
            if to_server {
                self.smb1_request(&r, first, command, m, &b);
            } else {
                self.smb1_response(&r, first, command, m, &b);
            }
            if !smb1_andx(command) {
                break;
            }
            let (Some(&next), Some(off)) = (b.words.first(), le16(b.words, 2)) else {
                break;
            };
            let off = usize::from(off);
            if off <= at || next == 0xff || off >= m.len() {
                break;
            }
            at = off;
            command = next;
        }
        self.sweep();
    }

    fn smb1_generic_request(&mut self, r: &Msg1, command: u8, no_response: bool) {
        if !matches!(
            command,
            SMB1_READ_ANDX | SMB1_WRITE_ANDX | SMB1_TRANS | SMB1_TRANS2
        ) {
            let tx = self.new_tx(1, u16::from(command), r.hdr(Key::Generic), TxData::Generic);
            tx.resp_done = no_response;
        }
    }

    fn smb1_generic_response(&mut self, r: &Msg1, command: u8) {
        let key = r.hdr(Key::Generic);
        if let Some(tx) = self.generic(1, u16::from(command), &key) {
            tx.req_done = true;
            tx.resp_done = true;
            tx.status = Some(r.status);
        }
    }

    fn smb1_request(&mut self, r: &Msg1, first: u8, command: u8, m: &[u8], b: &Block<'_>) {
        let have_tx = match command {
            SMB1_READ_ANDX => {
                if let Some(fid) = span(b.words, 4, 2) {
                    let fid = r.fid(fid);
                    put(
                        &mut self.reads,
                        (u64::from(r.uid), u32::from(r.tree), u64::from(r.mid)),
                        fid,
                        &mut self.cut,
                    );
                }
                false
            }
            SMB1_WRITE_ANDX | SMB1_WRITE | SMB1_WRITE_AND_CLOSE => {
                self.smb1_write(r, command, m, b);
                self.smb1_generic_request(r, first, false);
                true
            }
            SMB1_TRANS => {
                self.smb1_trans(r, m, b);
                true
            }
            SMB1_TRANS2 => self.smb1_trans2(r, m, b),
            SMB1_NEGOTIATE => {
                let dialects: Vec<String> = b
                    .bytes
                    .split(|&c| c == 0)
                    .filter(|d| !d.is_empty())
                    .take(MAX_DIALECTS)
                    .map(|d| String::from_utf8_lossy(clip(&d[1..])).into_owned())
                    .collect();
                if !self
                    .txs
                    .iter()
                    .any(|t| matches!(&t.data, TxData::Negotiate { version: 1, .. }))
                {
                    self.new_tx(
                        1,
                        u16::from(SMB1_NEGOTIATE),
                        Hdr::default(),
                        TxData::Negotiate {
                            version: 1,
                            dialects,
                            client_guid: None,
                            server_guid: None,
                        },
                    );
                }
                true
            }
            SMB1_NT_CREATE_ANDX if b.words.len() >= 48 => {
                let (Some(name_len), Some(disp), Some(opts)) =
                    (le16(b.words, 5), le32(b.words, 35), le32(b.words, 39))
                else {
                    return self.smb1_generic_request(r, command, false);
                };
                // The name follows the byte count, after a pad byte to an even offset when Unicode.
                let mut at = b.at + 3 + b.words.len();
                if r.unicode && at % 2 == 1 {
                    at += 1;
                }
                let name = clip(
                    m.get(at..(at + usize::from(name_len)).min(m.len()))
                        .unwrap_or(&[]),
                )
                .to_vec();
                put(
                    &mut self.create_names,
                    (u64::from(r.uid), u64::from(r.mid)),
                    name.clone(),
                    &mut self.cut,
                );
                self.new_tx(
                    1,
                    u16::from(command),
                    r.hdr(Key::Generic),
                    TxData::Create {
                        name,
                        disposition: disp,
                        delete: opts & 0x1000 != 0,
                        directory: opts & 1 != 0,
                        times: [0; 4],
                        size: 0,
                        guid: Vec::new(),
                    },
                );
                true
            }
            SMB1_SESSION_SETUP_ANDX => {
                let hdr = Hdr {
                    key: Key::Header,
                    ssn: u64::from(r.uid),
                    tree: 0,
                    msg: u64::from(r.mid),
                };
                let bytes_at = b.at + 3 + b.words.len();
                // Extended security (12 words): the security blob, then the host's strings; without (13 words):
                // the two passwords, then the account, its domain and the host's strings.
                let (len, skip) = match b.words.len() {
                    24 => (usize::from(le16(b.words, 14).unwrap_or(0)), 0),
                    26 => (
                        usize::from(le16(b.words, 14).unwrap_or(0))
                            + usize::from(le16(b.words, 16).unwrap_or(0)),
                        2,
                    ),
                    _ => (0, 0),
                };
                let len = len.min(b.bytes.len());
                let host = smb1_host(r, bytes_at + len, &b.bytes[len..], skip);
                let blob = if skip == 0 { &b.bytes[..len] } else { &[][..] };
                let (ntlmssp, kerberos) = security_blob(blob);
                self.new_tx(
                    1,
                    u16::from(command),
                    hdr,
                    TxData::SessionSetup1 {
                        ntlmssp,
                        kerberos,
                        request: host,
                        response: None,
                    },
                );
                true
            }
            SMB1_TREE_CONNECT_ANDX if b.words.len() >= 8 => {
                let pw = usize::from(le16(b.words, 6).unwrap_or(0)).min(b.bytes.len());
                let mut at = b.at + 3 + b.words.len() + pw;
                if r.unicode && at % 2 == 1 {
                    at += 1;
                }
                let (path, rest) = smb1_string(m.get(at..).unwrap_or(&[]), r.unicode);
                let (service, _) = smb1_string(rest, false);
                let mut share = path.into_bytes();
                if share.len() > 1 {
                    share.remove(0);
                }
                self.new_tx(
                    1,
                    u16::from(command),
                    r.hdr(Key::Tree),
                    TxData::TreeConnect1 {
                        share,
                        is_pipe: false,
                        req_service: service,
                        res_service: None,
                    },
                );
                true
            }
            SMB1_TREE_DISCONNECT => {
                self.trees.remove(&(u64::from(r.uid), u32::from(r.tree)));
                false
            }
            SMB1_CLOSE => {
                if let Some(fid) = span(b.words, 0, 2) {
                    let fid = r.fid(fid);
                    self.smb1_close(&fid, true);
                    put(
                        &mut self.closes,
                        (u64::from(r.uid), u64::from(r.mid)),
                        fid,
                        &mut self.cut,
                    );
                }
                false
            }
            SMB1_NT_CANCEL | SMB1_TRANS2_SECONDARY | SMB1_LOCKING_ANDX => {
                self.smb1_generic_request(r, command, true);
                true
            }
            _ => false,
        };
        if !have_tx {
            self.smb1_generic_request(r, command, false);
        }
    }

    /// A TRANS request to a named pipe (two setup words: the pipe function, TransactNmPipe and the like, and the
    /// FID; some data): the FID waits for the response, and on a pipe of a DCE/RPC service the data is a DCE/RPC
    /// PDU written, as Suricata reads it. No transaction of its own either way (nor for any other TRANS).
    fn smb1_trans(&mut self, r: &Msg1, m: &[u8], b: &Block<'_>) {
        // 16 words: data count and offset at 22 and 24, the setup word count at 26, the FID in the second setup
        // word at 30.
        if b.words.len() != 32 || b.words[26] != 2 {
            return;
        }
        let (Some(dcnt), Some(doff), Some(fid)) =
            (le16(b.words, 22), le16(b.words, 24), span(b.words, 30, 2))
        else {
            return;
        };
        if dcnt == 0 {
            return;
        }
        let fid = r.fid(fid);
        let key = (u64::from(r.uid), u32::from(r.tree), u64::from(r.mid));
        put(&mut self.trans, key, fid.clone(), &mut self.cut);
        if self.is_dcerpc(&fid) {
            let data = m.get(usize::from(doff)..).unwrap_or(&[]);
            let data = &data[..data.len().min(usize::from(dcnt))];
            self.dcerpc_write(1, u16::from(SMB1_TRANS), r.hdr(Key::Header), data);
        }
    }

    /// A TRANS response on a DCE/RPC service's pipe: its data (10 words: data count and offset at 12 and 14) is
    /// the call's answer; an error answer completes the call with its status.
    fn smb1_trans_response(&mut self, r: &Msg1, m: &[u8], b: &Block<'_>) {
        let key = (u64::from(r.uid), u32::from(r.tree), u64::from(r.mid));
        let Some(fid) = self.trans.remove(&key) else {
            return;
        };
        if !self.is_dcerpc(&fid) {
            return;
        }
        let data = match (le16(b.words, 12), le16(b.words, 14)) {
            (Some(dcnt), Some(doff)) if b.words.len() >= 20 => {
                let data = m.get(usize::from(doff)..).unwrap_or(&[]);
                &data[..data.len().min(usize::from(dcnt))]
            }
            _ => &[][..],
        };
        self.dcerpc_read(
            1,
            u16::from(SMB1_TRANS),
            r.nt_status,
            r.hdr(Key::Header),
            data,
        );
    }

    /// TRANS2 SET_PATH_INFO and SET_FILE_INFO that mark a file for deletion (level 1013) or rename it (1010) make
    /// a set-info or a rename transaction, as Suricata makes them (its response completes it as a generic one);
    /// any other TRANS2 makes none. The parameters and data are read where the request's offsets (from the
    /// header's start) put them. SET_PATH_INFO names the file by its path; SET_FILE_INFO by its FID, whose name an
    /// NT_CREATE_ANDX told (`<unknown>` otherwise).
    fn smb1_trans2(&mut self, r: &Msg1, m: &[u8], b: &Block<'_>) -> bool {
        let parsed = (|| {
            // 15 words: parameter count and offset at 18 and 20, data count and offset at 22 and 24, the setup
            // word count at 26, the subcommand (first setup word) at 28.
            let (pcnt, poff) = (le16(b.words, 18)?, le16(b.words, 20)?);
            let (dcnt, doff) = (le16(b.words, 22)?, le16(b.words, 24)?);
            let sub = le16(b.words, 28)?;
            let params = span(m, usize::from(poff), usize::from(pcnt))?;
            let data = span(m, usize::from(doff), usize::from(dcnt))?;
            Some((sub, params, data))
        })();
        let Some((sub, params, data)) = parsed else {
            return false;
        };
        let (fuid, name, level) = match sub {
            // Information level, 4 reserved bytes, the path (UTF-16, NUL-terminated).
            TRANS2_SET_PATH_INFO => {
                let (Some(level), Some(path)) = (le16(params, 0), params.get(6..)) else {
                    return false;
                };
                let Some(path) = utf16_low_bytes(path) else {
                    return false;
                };
                (Vec::new(), path, level)
            }
            // FID, information level.
            TRANS2_SET_FILE_INFO => {
                let (Some(fid), Some(level)) = (span(params, 0, 2), le16(params, 2)) else {
                    return false;
                };
                let name = self
                    .names
                    .get(&r.fid(fid))
                    .cloned()
                    .unwrap_or_else(|| b"<unknown>".to_vec());
                (fid.to_vec(), name, level)
            }
            _ => return false,
        };
        let hdr = r.hdr(Key::Generic);
        let command = u16::from(SMB1_TRANS2);
        match level {
            LEVEL_DISPOSITION => {
                let Some(&flag) = data.first() else {
                    return false;
                };
                let data = TxData::SetInfo {
                    fuid,
                    name,
                    delete: flag & 1 == 1,
                    subcmd: sub,
                    level,
                };
                self.new_tx(1, command, hdr, data);
                true
            }
            // Replace flag, 3 reserved bytes, root directory (4), name length (4), the new name.
            LEVEL_RENAME => {
                let Some(to) = le32(data, 8).and_then(|n| span(data, 12, n as usize)) else {
                    return false;
                };
                let to: Vec<u8> = clip(to).iter().copied().filter(|&c| c != 0).collect();
                let data = TxData::Rename {
                    fuid,
                    from: name,
                    to,
                };
                self.new_tx(1, command, hdr, data);
                true
            }
            _ => false,
        }
    }

    fn smb1_close(&mut self, fid: &[u8], to_server: bool) {
        if let Some(tx) = self.file_tx(fid, to_server)
            && !tx.req_done
        {
            tx.req_done = true;
            tx.resp_done = true;
        }
    }

    fn smb1_write(&mut self, r: &Msg1, command: u8, m: &[u8], b: &Block<'_>) {
        let parsed = match command {
            SMB1_WRITE_ANDX if b.words.len() >= 24 => (|| {
                let len = usize::from(le16(b.words, 20)?) | (usize::from(le16(b.words, 18)?) << 16);
                let off = usize::from(le16(b.words, 22)?);
                let data = m.get(off..).unwrap_or(&[]);
                Some((span(b.words, 4, 2)?, &data[..data.len().min(len)]))
            })(),
            SMB1_WRITE | SMB1_WRITE_AND_CLOSE => {
                span(b.words, 0, 2).map(|f| (f, b.bytes.get(3..).unwrap_or(&[])))
            }
            _ => None,
        };
        let Some((fid, data)) = parsed else {
            return;
        };
        let fuid = r.fid(fid);
        if self.file_tx(&fuid, true).is_none() {
            let (share, is_pipe) = self
                .trees
                .get(&(u64::from(r.uid), u32::from(r.tree)))
                .cloned()
                .unwrap_or_default();
            if is_pipe {
                self.dcerpc_write(1, u16::from(command), r.hdr(Key::Header), data);
            } else {
                let name = self
                    .names
                    .get(&fuid)
                    .cloned()
                    .unwrap_or_else(|| b"<unknown>".to_vec());
                let hdr = Hdr::default();
                let tx = self.new_tx(
                    1,
                    u16::from(SMB1_WRITE_ANDX),
                    hdr,
                    TxData::File {
                        to_server: true,
                        fuid: fuid.clone(),
                        name,
                        share,
                    },
                );
                tx.req_done = false;
            }
        }
        if command == SMB1_WRITE_AND_CLOSE {
            self.smb1_close(&fuid, true);
        }
    }

    fn smb1_response(&mut self, r: &Msg1, first: u8, command: u8, m: &[u8], b: &Block<'_>) {
        let mut sync = false;
        let have_tx = match command {
            SMB1_READ_ANDX => {
                self.smb1_read(r, m, b);
                self.smb1_generic_response(r, first);
                true
            }
            SMB1_NEGOTIATE => {
                let idx = le16(b.words, 0).map(usize::from);
                let guid: Option<[u8; 16]> = (b.words.len() == 34)
                    .then(|| b.bytes.get(..16).and_then(|g| g.try_into().ok()))
                    .flatten();
                let mut chosen = None;
                let found = match self
                    .txs
                    .iter_mut()
                    .find(|t| matches!(&t.data, TxData::Negotiate { version: 1, .. }))
                {
                    Some(tx) => {
                        tx.status = Some(r.status);
                        tx.resp_done = true;
                        if let TxData::Negotiate {
                            dialects,
                            server_guid,
                            ..
                        } = &mut tx.data
                        {
                            *server_guid = guid;
                            chosen = idx.and_then(|i| dialects.get(i)).cloned();
                        }
                        true
                    }
                    None => false,
                };
                if let Some(d) = chosen {
                    self.dialect1 = Some(d.into_bytes());
                }
                found
            }
            SMB1_TREE_CONNECT_ANDX => {
                let key = r.hdr(Key::Tree);
                let success = r.nt_status == STATUS_SUCCESS;
                let service = smb1_string(b.bytes, false).0;
                let is_pipe = service == "IPC";
                let mut tree = None;
                let found = match self
                    .txs
                    .iter_mut()
                    .find(|t| matches!(t.data, TxData::TreeConnect1 { .. }) && t.hdr.same(&key))
                {
                    Some(tx) => {
                        if success {
                            if let TxData::TreeConnect1 {
                                share,
                                is_pipe: p,
                                res_service,
                                ..
                            } = &mut tx.data
                            {
                                *p = is_pipe;
                                *res_service = Some(service);
                                tree = Some((share.clone(), is_pipe));
                            }
                            tx.hdr = r.hdr(Key::Header);
                        } else {
                            tx.hdr.tree = u32::from(r.tree);
                        }
                        tx.status = Some(r.status);
                        tx.resp_done = true;
                        true
                    }
                    None => false,
                };
                if let Some(t) = tree {
                    put(
                        &mut self.trees,
                        (u64::from(r.uid), u32::from(r.tree)),
                        t,
                        &mut self.cut,
                    );
                }
                // A failed TREE_CONNECT is done with here, found or not.
                found || !success
            }
            SMB1_TREE_DISCONNECT => {
                self.trees.remove(&(u64::from(r.uid), u32::from(r.tree)));
                false
            }
            SMB1_NT_CREATE_ANDX if r.nt_status == STATUS_SUCCESS && b.words.len() >= 68 => {
                let fid = span(b.words, 5, 2).unwrap_or(&[0, 0]).to_vec();
                if let Some(mut name) = self
                    .create_names
                    .remove(&(u64::from(r.uid), u64::from(r.mid)))
                {
                    name.retain(|&c| c != 0);
                    put(&mut self.names, r.fid(&fid), name, &mut self.cut);
                }
                let t = |at: usize| le64(b.words, at).map_or(0, unix_secs);
                let times = [t(11), t(19), t(27), t(35)];
                let size = le64(b.words, 55).unwrap_or(0);
                let key = r.hdr(Key::Generic);
                if let Some(tx) = self.generic(1, u16::from(command), &key) {
                    tx.status = Some(Status::Nt(r.nt_status));
                    tx.resp_done = true;
                    if let TxData::Create {
                        times: ts,
                        size: s,
                        guid,
                        ..
                    } = &mut tx.data
                    {
                        *ts = times;
                        *s = size;
                        *guid = fid;
                    }
                }
                true
            }
            SMB1_CLOSE => {
                if let Some(fid) = self.closes.remove(&(u64::from(r.uid), u64::from(r.mid))) {
                    self.smb1_close(&fid, false);
                }
                false
            }
            SMB1_TRANS => {
                self.smb1_trans_response(r, m, b);
                self.smb1_generic_response(r, first);
                true
            }
            SMB1_SESSION_SETUP_ANDX => {
                let exact = Hdr {
                    key: Key::Header,
                    ssn: u64::from(r.uid),
                    tree: 0,
                    msg: u64::from(r.mid),
                };
                let zero = Hdr { ssn: 0, ..exact };
                let len = if b.words.len() == 8 {
                    usize::from(le16(b.words, 6).unwrap_or(0)).min(b.bytes.len())
                } else {
                    0
                };
                let host = smb1_host(r, b.at + 3 + b.words.len() + len, &b.bytes[len..], 0);
                let is = |t: &Tx, h: &Hdr| {
                    matches!(t.data, TxData::SessionSetup1 { .. }) && t.hdr.same(h)
                };
                let i = if r.uid != 0 && self.txs.iter().any(|t| is(t, &exact)) {
                    self.txs.iter().position(|t| is(t, &exact))
                } else {
                    self.txs.iter().position(|t| is(t, &zero))
                };
                if let Some(i) = i {
                    let tx = &mut self.txs[i];
                    if let TxData::SessionSetup1 { response, .. } = &mut tx.data {
                        *response = host;
                    }
                    tx.hdr = r.hdr(Key::Header);
                    tx.status = Some(r.status);
                    tx.resp_done = true;
                }
                true
            }
            SMB1_LOGOFF_ANDX => {
                sync = true;
                false
            }
            _ => false,
        };
        if have_tx {
            return;
        }
        if sync {
            // LOGOFF: the last transaction, when it is one.
            if let Some(tx) = self.txs.back_mut()
                && tx.version == 1
                && tx.command == u16::from(command)
            {
                tx.resp_done = true;
                tx.status = Some(r.status);
            }
        } else if !matches!(command, SMB1_READ_ANDX | SMB1_WRITE_ANDX | SMB1_TRANS) {
            self.smb1_generic_response(r, command);
        }
    }

    fn smb1_read(&mut self, r: &Msg1, m: &[u8], b: &Block<'_>) {
        if r.nt_status != STATUS_SUCCESS || b.words.len() < 24 {
            return;
        }
        let (Some(len), Some(off)) = (le16(b.words, 10), le16(b.words, 12)) else {
            return;
        };
        let data = m.get(usize::from(off)..).unwrap_or(&[]);
        let data = &data[..data.len().min(usize::from(len))];
        let key = (u64::from(r.uid), u32::from(r.tree), u64::from(r.mid));
        let Some(fuid) = self.reads.remove(&key) else {
            return;
        };
        let (share, is_pipe) = self
            .trees
            .get(&(u64::from(r.uid), u32::from(r.tree)))
            .cloned()
            .unwrap_or_default();
        if is_pipe {
            self.dcerpc_read(1, u16::from(SMB1_READ_ANDX), 0, r.hdr(Key::Header), data);
        } else if self.file_tx(&fuid, false).is_none() {
            let name = self.names.get(&fuid).cloned().unwrap_or_default();
            let tx = self.new_tx(
                1,
                u16::from(SMB1_READ_ANDX),
                Hdr::default(),
                TxData::File {
                    to_server: false,
                    fuid,
                    name,
                    share,
                },
            );
            tx.req_done = false;
        }
    }
}

/// What a session setup's security blob says, as Suricata reads it: the Kerberos ticket of a SPNEGO token that
/// offers Kerberos, else the NTLMSSP AUTHENTICATE message's fields.
fn security_blob(blob: &[u8]) -> (Option<SmbNtlmssp>, Option<SmbKerberos>) {
    match spnego_kerberos(blob) {
        Some(k) => (None, Some(k)),
        None => (ntlmssp_auth(blob), None),
    }
}

/// SPNEGO's object identifier (1.3.6.1.5.5.2) and Kerberos 5's (1.2.840.113554.1.2.2), DER-encoded bodies.
const OID_SPNEGO: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
const OID_KRB5: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];
const DER_OID: u8 = 0x06;

/// The Kerberos ticket of a SPNEGO NegTokenInit (RFC 4178: `[APPLICATION 0] { OID spnego, [0] SEQUENCE { [0]
/// mechTypes, [1] reqFlags, [2] mechToken, ... } }`) whose mechanism list names Kerberos 5 (RFC 1964's OID; the
/// Microsoft variant alone is not enough, as for Suricata): its mechToken is a GSS-API token (`[APPLICATION 0] {
/// OID, 2-byte token id, AP-REQ }`) whose AP-REQ's ticket names the realm and the service. `None` for anything else.
/// Read with the Kerberos module's bounded DER reader: no recursion on the input.
pub fn spnego_kerberos(blob: &[u8]) -> Option<SmbKerberos> {
    use crate::kerberos::der;
    let (outer, _) = der::element(blob)?;
    let (oid, rest) = der::expect(outer.body, DER_OID)?;
    if oid != OID_SPNEGO {
        return None;
    }
    let (init, _) = der::element(rest)?;
    let (seq, _) = der::expect(init.body, der::SEQUENCE)?;
    let mut krb5 = false;
    for field in der::Elements::new(seq) {
        let Some((inner, _)) = der::element(field.body) else {
            continue;
        };
        match inner.tag {
            der::SEQUENCE => {
                krb5 |=
                    der::Elements::new(inner.body).any(|m| m.tag == DER_OID && m.body == OID_KRB5);
            }
            der::OCTET_STRING if krb5 => {
                let (token, _) = der::element(inner.body)?;
                let (_, rest) = der::expect(token.body, DER_OID)?;
                let ap_req = rest.get(2..)?;
                let (realm, sname) = crate::kerberos::message::ap_req_ticket(ap_req)?;
                return Some(SmbKerberos {
                    realm: String::from_utf8_lossy(clip(&realm)).into_owned(),
                    snames: sname
                        .components
                        .iter()
                        .map(|c| String::from_utf8_lossy(clip(c)).into_owned())
                        .collect(),
                });
            }
            _ => {}
        }
    }
    None
}

/// The NTLMSSP AUTHENTICATE message in a security blob, as Suricata reads it for the `ntlmssp` object: the
/// domain, user and host fields (their NULs taken out), the version when the flags say one follows, and whether
/// the fields overlap. `None` when there is none or a field runs past the end.
pub fn ntlmssp_auth(blob: &[u8]) -> Option<SmbNtlmssp> {
    let at = memchr::memmem::find(blob, b"NTLMSSP\0")?;
    let m = &blob[at..];
    if le32(m, 8)? != 3 {
        return None;
    }
    let field = |at: usize| -> Option<(usize, usize)> {
        Some((usize::from(le16(m, at)?), le32(m, at + 4)? as usize))
    };
    let (dl, doff) = field(28)?;
    let (ul, uoff) = field(36)?;
    let (hl, hoff) = field(44)?;
    let flags = le32(m, 60)?;
    let version = if flags & 0x0200_0000 != 0 {
        let v = span(m, 64, 8)?;
        Some(format!(
            "{}.{} build {} rev {}",
            v[0],
            v[1],
            u16::from_le_bytes([v[2], v[3]]),
            v[7]
        ))
    } else {
        None
    };
    let text = |len: usize, off: usize| -> Option<String> {
        if off < 12 {
            return None;
        }
        Some(no_nuls(span(m, off, len)?))
    };
    let warning = (uoff > 0 && uoff < doff + dl) || (hoff > 0 && hoff < uoff + ul);
    Some(SmbNtlmssp {
        domain: text(dl, doff)?,
        user: text(ul, uoff)?,
        host: text(hl, hoff)?,
        version,
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SMB2 message: header (command, status, response flag, message id, session, tree) and body.
    fn msg(command: u16, response: bool, status: u32, id: u64, tree: u32, body: &[u8]) -> Vec<u8> {
        let mut h = b"\xfeSMB".to_vec();
        h.extend_from_slice(&64u16.to_le_bytes());
        h.extend_from_slice(&[0; 2]);
        h.extend_from_slice(&status.to_le_bytes());
        h.extend_from_slice(&command.to_le_bytes());
        h.extend_from_slice(&[1, 0]);
        h.extend_from_slice(&u32::from(response).to_le_bytes());
        h.extend_from_slice(&[0; 4]);
        h.extend_from_slice(&id.to_le_bytes());
        h.extend_from_slice(&[0; 4]);
        h.extend_from_slice(&tree.to_le_bytes());
        h.extend_from_slice(&0x4000_0000_0005u64.to_le_bytes());
        h.resize(64, 0);
        h.extend_from_slice(body);
        h
    }

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    /// A body with `fields` written at their offsets (relative to the body), padded to `len`.
    /// An SMB2 TREE_CONNECT request body for the share `path` (as `\\srv\share`).
    fn tree_connect_request(path: &str) -> Vec<u8> {
        let path = utf16(path);
        body(
            8,
            &[
                (4, &72u16.to_le_bytes()),
                (6, &(path.len() as u16).to_le_bytes()),
                (8, &path),
            ],
        )
    }

    /// An SMB2 CREATE request body for the file `name` with the create `disposition`.
    fn create_request(name: &str, disposition: u32) -> Vec<u8> {
        let name = utf16(name);
        body(
            56,
            &[
                (36, &disposition.to_le_bytes()),
                (44, &120u16.to_le_bytes()),
                (46, &(name.len() as u16).to_le_bytes()),
                (56, &name),
            ],
        )
    }

    fn body(len: usize, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut b = vec![0u8; len];
        for (at, f) in fields {
            if b.len() < at + f.len() {
                b.resize(at + f.len(), 0);
            }
            b[*at..at + f.len()].copy_from_slice(f);
        }
        b
    }

    fn json(e: &SmbEvent) -> serde_json::Value {
        serde_json::to_value(e).expect("serialises")
    }

    /// A session as Suricata logs it: NEGOTIATE (dialects, GUIDs, sizes), TREE_CONNECT (share by the
    /// response's type), CREATE (name, disposition, times, size, file id), the file's WRITEs as one file
    /// transaction closed by CLOSE (itself a generic transaction), an interim STATUS_PENDING answer that only
    /// sets the status; numbered from 1 in the order the requests came; every record validates against
    /// Suricata's schema.
    #[test]
    fn smb2_session_as_suricata_logs_it() {
        let mut l = SmbTxLog::default();
        let neg = body(
            36,
            &[
                (2, &2u16.to_le_bytes()),
                (12, &[0x11; 16]),
                (36, &[0x02, 0x02, 0x10, 0x02]),
            ],
        );
        l.smb2(true, &msg(NEGOTIATE, false, 0, 0, 0, &neg));
        let neg_r = body(
            65,
            &[
                (4, &0x0202u16.to_le_bytes()),
                (8, &[0x22; 16]),
                (32, &65536u32.to_le_bytes()),
                (36, &65536u32.to_le_bytes()),
            ],
        );
        l.smb2(false, &msg(NEGOTIATE, true, 0, 0, 0, &neg_r));
        let tc = tree_connect_request("\\\\srv\\data");
        l.smb2(true, &msg(TREE_CONNECT, false, 0, 2, 0, &tc));
        l.smb2(
            false,
            &msg(TREE_CONNECT, true, 0, 2, 7, &body(16, &[(2, &[1])])),
        );
        let cr = create_request("a.pdf", 2);
        l.smb2(true, &msg(CREATE, false, 0, 3, 7, &cr));
        let fid = [
            0x4d, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ];
        // 2017-12-06 (a FILETIME) and an end of file of 100.
        let t = 131_571_000_000_000_000u64.to_le_bytes();
        let cr_r = body(
            88,
            &[
                (8, &t),
                (16, &t),
                (24, &t),
                (32, &t),
                (48, &100u64.to_le_bytes()),
                (64, &fid),
            ],
        );
        l.smb2(false, &msg(CREATE, true, 0, 3, 7, &cr_r));
        for (id, off) in [(4u64, 0u64), (5, 50)] {
            let w = body(
                48,
                &[
                    (2, &112u16.to_le_bytes()),
                    (4, &50u32.to_le_bytes()),
                    (8, &off.to_le_bytes()),
                    (16, &fid),
                    (48, &[b'x'; 50]),
                ],
            );
            l.smb2(true, &msg(WRITE, false, 0, id, 7, &w));
            l.smb2(false, &msg(WRITE, true, 0, id, 7, &body(16, &[])));
        }
        l.smb2(true, &msg(CLOSE, false, 0, 6, 7, &body(24, &[(8, &fid)])));
        l.smb2(true, &msg(15, false, 0, 7, 7, &body(32, &[])));
        l.smb2(false, &msg(15, true, STATUS_PENDING, 7, 7, &body(8, &[])));
        l.smb2(false, &msg(CLOSE, true, 0, 6, 7, &body(60, &[])));
        let mut got: Vec<SmbEvent> = l.take_done().collect();
        got.extend(l.finish());
        let v: Vec<serde_json::Value> = got.iter().map(json).collect();
        let brief: Vec<(u64, &str, Option<&str>)> = v
            .iter()
            .map(|r| {
                (
                    r["id"].as_u64().unwrap_or(0),
                    r["command"].as_str().unwrap_or(""),
                    r["status"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            brief,
            vec![
                (1, "SMB2_COMMAND_NEGOTIATE_PROTOCOL", Some("STATUS_SUCCESS")),
                (2, "SMB2_COMMAND_TREE_CONNECT", Some("STATUS_SUCCESS")),
                (3, "SMB2_COMMAND_CREATE", Some("STATUS_SUCCESS")),
                (4, "SMB2_COMMAND_WRITE", Some("STATUS_SUCCESS")),
                (5, "SMB2_COMMAND_CLOSE", Some("STATUS_SUCCESS")),
                (6, "SMB2_COMMAND_CHANGE_NOTIFY", Some("STATUS_PENDING")),
            ]
        );
        assert_eq!(v[0]["client_dialects"], serde_json::json!(["2.02", "2.10"]));
        assert_eq!(v[0]["server_guid"], "22222222-2222-2222-2222-222222222222");
        assert_eq!(
            (v[0]["session_id"].as_u64(), v[0]["max_read_size"].as_u64()),
            (Some(0), Some(65536))
        );
        assert_eq!(v[1]["share"], "\\\\srv\\data");
        assert_eq!(
            (v[1]["share_type"].as_str(), v[1]["tree_id"].as_u64()),
            (Some("FILE"), Some(7))
        );
        assert_eq!(v[2]["filename"], "a.pdf");
        assert_eq!(v[2]["disposition"], "FILE_CREATE");
        assert_eq!(v[2]["fuid"], "0000004d-0000-0000-0009-0000ffffffff");
        assert_eq!(
            (v[2]["size"].as_u64(), v[2]["created"].as_u64()),
            (Some(100), Some(1_512_626_400))
        );
        assert_eq!(
            (v[3]["filename"].as_str(), v[3]["share"].as_str()),
            (Some("a.pdf"), Some(""))
        );
        assert!(v.iter().all(|r| r["dialect"] == "2.02"));
        assert_eq!(
            got.iter().map(|e| e.tx_id).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4, 5]
        );
        if let Some(path) = flowbundle_testsupport::data("suricata-eve/schema.json") {
            let schema = flowbundle_testsupport::json_schema::Schema::load(&path).expect("schema");
            for r in &v {
                let rec = serde_json::json!({"timestamp": "2017-12-06T00:00:00.000000+0000", "event_type": "smb", "smb": r});
                assert_eq!(schema.errors(&rec), Vec::<String>::new(), "{rec}");
            }
        }
    }

    /// A pipe that is no DCE/RPC service: read synchronously, its data makes no transaction; read asynchronously
    /// (an interim STATUS_PENDING, then the data in a response that carries an async id, no tree id), the read is
    /// found by session and message id and its data, on no known tree, makes a file transaction (closed by the
    /// file's CLOSE), as Suricata 7 and later make one; an async error answer makes none.
    #[test]
    fn async_pipe_read_makes_a_file_transaction() {
        let mut l = SmbTxLog::default();
        let tc = tree_connect_request("\\\\srv\\IPC$");
        l.smb2(true, &msg(TREE_CONNECT, false, 0, 1, 0, &tc));
        l.smb2(
            false,
            &msg(TREE_CONNECT, true, 0, 1, 3, &body(16, &[(2, &[2])])),
        );
        let cr = create_request("tool-stdout", 1);
        l.smb2(true, &msg(CREATE, false, 0, 2, 3, &cr));
        let fid = [7u8; 16];
        l.smb2(false, &msg(CREATE, true, 0, 2, 3, &body(88, &[(64, &fid)])));
        let read_req = |id: u64| {
            msg(
                READ,
                false,
                0,
                id,
                3,
                &body(48, &[(4, &4u32.to_le_bytes()), (16, &fid)]),
            )
        };
        let read_resp = |id: u64, status: u32, asynch: bool| {
            let data = b"out!";
            let mut m = msg(
                READ,
                true,
                status,
                id,
                3,
                &body(16, &[(2, &[80]), (4, &4u32.to_le_bytes()), (16, data)]),
            );
            if asynch {
                m[16] |= 2;
                m[32..40].copy_from_slice(&0x55u64.to_le_bytes());
            }
            m
        };
        // Synchronous: the pipe's data makes nothing.
        l.smb2(true, &read_req(3));
        l.smb2(false, &read_resp(3, 0, false));
        // Asynchronous: pending, then the data; another read pending, then answered with an error.
        l.smb2(true, &read_req(4));
        l.smb2(true, &read_req(5));
        l.smb2(false, &read_resp(4, STATUS_PENDING, true));
        l.smb2(false, &read_resp(5, STATUS_PENDING, true));
        l.smb2(false, &read_resp(4, 0, true));
        l.smb2(false, &read_resp(5, 0xc000_00b0, true));
        l.smb2(true, &msg(CLOSE, false, 0, 6, 3, &body(24, &[(8, &fid)])));
        l.smb2(false, &msg(CLOSE, true, 0, 6, 3, &body(60, &[])));
        let v: Vec<serde_json::Value> = l.finish().map(|e| json(&e)).collect();
        let commands: Vec<&str> = v.iter().map(|r| r["command"].as_str().unwrap()).collect();
        assert_eq!(
            commands,
            [
                "SMB2_COMMAND_TREE_CONNECT",
                "SMB2_COMMAND_CREATE",
                "SMB2_COMMAND_READ",
                "SMB2_COMMAND_CLOSE"
            ]
        );
        assert_eq!(v[2]["filename"], "tool-stdout");
        assert_eq!(v[2]["share"], "");
        assert_eq!(v[2]["tree_id"], 0);
        assert_eq!(v[2]["id"], 3);
    }

    /// A SPNEGO NegTokenInit listing `mechs` whose mechToken is a Kerberos AP-REQ for `cifs/dc1` in `CORP.LOCAL`.
    fn spnego_krb5(mechs: &[&[u8]]) -> Vec<u8> {
        use crate::kerberos::message::tests::{ap_req, ticket, tlv};
        let mut token = tlv(DER_OID, OID_KRB5);
        token.extend_from_slice(&[0x01, 0x00]);
        token.extend_from_slice(&ap_req(&ticket("CORP.LOCAL", &["cifs", "dc1"])));
        let list: Vec<u8> = mechs.iter().flat_map(|m| tlv(DER_OID, m)).collect();
        let init = tlv(
            0x30,
            &[
                tlv(0xa0, &tlv(0x30, &list)),
                tlv(0xa2, &tlv(0x04, &tlv(0x60, &token))),
            ]
            .concat(),
        );
        tlv(0x60, &[tlv(DER_OID, OID_SPNEGO), tlv(0xa0, &init)].concat())
    }

    /// A SESSION_SETUP whose SPNEGO token offers Kerberos 5 writes the ticket's realm and service names (Suricata's
    /// `kerberos` object) and no `ntlmssp`; the Microsoft Kerberos OID alone does not make Suricata read the token,
    /// nor does it here; a cut or altered token is refused without a panic.
    #[test]
    fn kerberos_from_the_spnego_token() {
        const MS_KRB5: &[u8] = &[0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12, 0x01, 0x02, 0x02];
        let blob = spnego_krb5(&[MS_KRB5, OID_KRB5]);
        let k = spnego_kerberos(&blob).expect("kerberos");
        assert_eq!(k.realm, "CORP.LOCAL");
        assert_eq!(k.snames, ["cifs", "dc1"]);
        assert_eq!(spnego_kerberos(&spnego_krb5(&[MS_KRB5])), None);
        for n in 0..blob.len() {
            assert_eq!(spnego_kerberos(&blob[..n]), None, "cut at {n}");
        }
        for i in 0..blob.len() {
            let mut v = blob.clone();
            v[i] ^= 0xff;
            let _ = spnego_kerberos(&v);
        }

        let mut l = SmbTxLog::default();
        let ss = body(
            24,
            &[
                (12, &88u16.to_le_bytes()),
                (14, &(blob.len() as u16).to_le_bytes()),
                (24, &blob),
            ],
        );
        l.smb2(true, &msg(SESSION_SETUP, false, 0, 1, 0, &ss));
        l.smb2(false, &msg(SESSION_SETUP, true, 0, 1, 0, &body(8, &[])));
        let got: Vec<SmbEvent> = l.take_done().collect();
        assert_eq!(got.len(), 1);
        let v = json(&got[0]);
        assert_eq!(
            v["kerberos"],
            serde_json::json!({"realm": "CORP.LOCAL", "snames": ["cifs", "dc1"]})
        );
        assert!(v.get("ntlmssp").is_none());
        if let Some(path) = flowbundle_testsupport::data("suricata-eve/schema.json") {
            let schema = flowbundle_testsupport::json_schema::Schema::load(&path).expect("schema");
            let rec = serde_json::json!({"timestamp": "2017-12-06T00:00:00.000000+0000", "event_type": "smb", "smb": v});
            assert_eq!(schema.errors(&rec), Vec::<String>::new(), "{rec}");
        }
    }

    /// DCE/RPC over a service's pipe: the bind and its bind_ack, a request and its response (paired by call id
    /// across WRITE and READ) make `dcerpc` transactions with the interfaces, opnum and stub sizes; an
    /// NTLMSSP AUTHENTICATE gives the session setup's `ntlmssp`.
    #[test]
    fn pipe_calls_and_ntlmssp() {
        let mut l = SmbTxLog::default();
        let tc = tree_connect_request("\\\\srv\\IPC$");
        l.smb2(true, &msg(TREE_CONNECT, false, 0, 1, 0, &tc));
        l.smb2(
            false,
            &msg(TREE_CONNECT, true, 0, 1, 3, &body(16, &[(2, &[2])])),
        );
        let cr = create_request("srvsvc", 1);
        l.smb2(true, &msg(CREATE, false, 0, 2, 3, &cr));
        let fid = [7u8; 16];
        l.smb2(false, &msg(CREATE, true, 0, 2, 3, &body(88, &[(64, &fid)])));
        let pdu = |ptype: u8, call: u32, body_: &[u8]| {
            let mut p = vec![5, 0, ptype, 3, 0x10, 0, 0, 0];
            p.extend_from_slice(&((16 + body_.len()) as u16).to_le_bytes());
            p.extend_from_slice(&[0, 0]);
            p.extend_from_slice(&call.to_le_bytes());
            p.extend_from_slice(body_);
            p
        };
        // A bind offering one interface (context 0), its bind_ack accepting it.
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&[1, 0, 0, 0, 0, 0, 1, 0]);
        b.extend_from_slice(&[
            0xc8, 0x4f, 0x32, 0x4b, 0x70, 0x16, 0xd3, 0x01, 0x12, 0x78, 0x5a, 0x47, 0xbf, 0x6e,
            0xe1, 0x88,
        ]);
        b.extend_from_slice(&[3, 0, 0, 0]);
        b.extend_from_slice(&[0; 20]);
        let bind = pdu(11, 1, &b);
        let write = |data: &[u8]| {
            body(
                48,
                &[
                    (2, &112u16.to_le_bytes()),
                    (4, &(data.len() as u32).to_le_bytes()),
                    (16, &fid),
                    (48, data),
                ],
            )
        };
        l.smb2(true, &msg(WRITE, false, 0, 3, 3, &write(&bind)));
        l.smb2(
            true,
            &msg(
                READ,
                false,
                0,
                4,
                3,
                &body(48, &[(4, &1024u32.to_le_bytes()), (16, &fid)]),
            ),
        );
        let mut ack = vec![0u8; 8];
        ack.extend_from_slice(&[4, 0, b'1', b'3', b'5', 0, 0, 0]);
        // One result: acceptance, with a reason Suricata does not keep over SMB (written as 0).
        ack.extend_from_slice(&[1, 0, 0, 0, 0, 0, 2, 0]);
        ack.extend_from_slice(&[0; 20]);
        let read = |data: &[u8]| {
            body(
                16,
                &[
                    (2, &[80]),
                    (4, &(data.len() as u32).to_le_bytes()),
                    (16, data),
                ],
            )
        };
        l.smb2(false, &msg(READ, true, 0, 4, 3, &read(&pdu(12, 1, &ack))));
        let mut req = vec![0u8; 4];
        req.extend_from_slice(&[0, 0, 15, 0]);
        req.extend_from_slice(&[0xaa; 40]);
        l.smb2(true, &msg(WRITE, false, 0, 5, 3, &write(&pdu(0, 2, &req))));
        l.smb2(
            true,
            &msg(
                READ,
                false,
                0,
                6,
                3,
                &body(48, &[(4, &1024u32.to_le_bytes()), (16, &fid)]),
            ),
        );
        let mut resp = vec![0u8; 8];
        resp.extend_from_slice(&[0xbb; 12]);
        l.smb2(false, &msg(READ, true, 0, 6, 3, &read(&pdu(2, 2, &resp))));
        let mut got: Vec<SmbEvent> = l.take_done().collect();
        got.extend(l.finish());
        let v: Vec<serde_json::Value> = got.iter().map(json).collect();
        assert_eq!(v.len(), 4, "{v:?}");
        assert_eq!(v[0]["named_pipe"], "\\\\srv\\IPC$");
        assert_eq!(v[0]["share_type"], "PIPE");
        assert_eq!(v[2]["command"], "SMB2_COMMAND_WRITE");
        assert_eq!(
            v[2]["dcerpc"],
            serde_json::json!({"request": "BIND", "response": "BINDACK", "call_id": 1, "interfaces": [
                {"uuid": "4b324fc8-1670-01d3-1278-5a47bf6ee188", "version": "3.0", "ack_result": 0, "ack_reason": 0}]})
        );
        assert_eq!(
            v[3]["dcerpc"],
            serde_json::json!({"request": "REQUEST", "response": "RESPONSE", "call_id": 2, "opnum": 15,
                "req": {"frag_cnt": 1, "stub_data_size": 40}, "res": {"frag_cnt": 1, "stub_data_size": 12},
                "interfaces": [{"uuid": "4b324fc8-1670-01d3-1278-5a47bf6ee188", "version": "3.0"}]})
        );
        // Named as Suricata 9 names them when asked: the bind's interface by service, the request's also by its
        // operation (srvsvc 15: NetrShareEnum); records without a call keep their layout.
        for e in &mut got {
            e.name_interfaces();
        }
        let named: Vec<serde_json::Value> = got.iter().map(json).collect();
        assert_eq!(named[0], v[0]);
        assert_eq!(
            named[2]["dcerpc"]["interfaces"],
            serde_json::json!([{"uuid": "4b324fc8-1670-01d3-1278-5a47bf6ee188", "version": "3.0", "ack_result": 0,
                "ack_reason": 0, "service": "srvsvc"}])
        );
        assert_eq!(
            named[3]["dcerpc"]["interfaces"],
            serde_json::json!([{"uuid": "4b324fc8-1670-01d3-1278-5a47bf6ee188", "version": "3.0",
                "service": "srvsvc", "procedure": "NetrShareEnum"}])
        );
        // NTLMSSP: domain, user, host as they are (NULs out), the version when flagged.
        let mut auth = b"NTLMSSP\0".to_vec();
        auth.extend_from_slice(&3u32.to_le_bytes());
        let fields = [(0u16, 72u32), (0, 72), (4, 72), (4, 76), (4, 80), (0, 84)];
        for (len, off) in fields {
            auth.extend_from_slice(&len.to_le_bytes());
            auth.extend_from_slice(&len.to_le_bytes());
            auth.extend_from_slice(&off.to_le_bytes());
        }
        auth.extend_from_slice(&0x0200_0001u32.to_le_bytes());
        auth.extend_from_slice(&[6, 1, 0xb1, 0x1d, 0, 0, 0, 15]);
        auth.extend_from_slice(&utf16("DOUS"));
        auth.extend_from_slice(&utf16("HO"));
        let n = ntlmssp_auth(&[&[0xa1, 0x30][..], &auth].concat()).expect("auth");
        assert_eq!(
            (n.domain.as_str(), n.user.as_str(), n.host.as_str()),
            ("DO", "US", "HO")
        );
        assert_eq!(n.version.as_deref(), Some("6.1 build 7601 rev 15"));
        assert!(!n.warning);
        let mut past = auth.clone();
        past[44] = 0x40;
        assert_eq!(ntlmssp_auth(&past), None);
    }

    /// An SMB1 message: command, status, response, NT status or DOS error, user and multiplex ids, words, bytes.
    #[allow(clippy::too_many_arguments)]
    fn smb1(
        command: u8,
        status: u32,
        response: bool,
        nt: bool,
        uid: u16,
        mid: u16,
        words: &[u8],
        bytes: &[u8],
    ) -> Vec<u8> {
        let mut h = b"\xffSMB".to_vec();
        h.push(command);
        h.extend_from_slice(&status.to_le_bytes());
        h.push(if response { 0x98 } else { 0x18 });
        h.extend_from_slice(&(if nt { 0x4001u16 } else { 0x0001 }).to_le_bytes());
        h.resize(28, 0);
        h.extend_from_slice(&uid.to_le_bytes());
        h.extend_from_slice(&mid.to_le_bytes());
        h.push((words.len() / 2) as u8);
        h.extend_from_slice(words);
        h.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        h.extend_from_slice(bytes);
        h
    }

    /// SMB2 SET_INFO FileDispositionInformation: the DeletePending byte's low bit marks the file for deletion (2
    /// does not, as Suricata reads it); the file is named by its CREATE; SMB1's `subcmd` and `level_of_interest` are
    /// not written for SMB2.
    #[test]
    fn smb2_set_info_disposition() {
        let mut l = SmbTxLog::default();
        let cr = create_request("x.exe", 1);
        l.smb2(true, &msg(CREATE, false, 0, 1, 3, &cr));
        let fid = [9u8; 16];
        l.smb2(false, &msg(CREATE, true, 0, 1, 3, &body(88, &[(64, &fid)])));
        let set = |id: u64, flag: u8| {
            let b = body(
                33,
                &[
                    (2, &[1, 13]),
                    (4, &1u32.to_le_bytes()),
                    (8, &96u16.to_le_bytes()),
                    (16, &fid),
                    (32, &[flag]),
                ],
            );
            msg(SET_INFO, false, 0, id, 3, &b)
        };
        for (id, flag) in [(2, 1), (3, 2)] {
            l.smb2(true, &set(id, flag));
            l.smb2(false, &msg(SET_INFO, true, 0, id, 3, &body(2, &[])));
        }
        let v: Vec<serde_json::Value> = l.take_done().map(|e| json(&e)).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(v[1]["command"], "SMB2_COMMAND_SET_INFO");
        assert_eq!(v[1]["filename"], "x.exe");
        assert_eq!(v[1]["access"], "delete on close");
        assert_eq!(v[2]["access"], "normal");
        assert!(v[1].get("subcmd").is_none() && v[1].get("level_of_interest").is_none());
    }

    /// A TRANS2 request: `sub`command, its parameters and data placed at the offsets its words give.
    fn trans2(mid: u16, sub: u16, params: &[u8], data: &[u8]) -> Vec<u8> {
        // Header (32), word count, 15 words, byte count: 65; the name's NUL and padding to 68.
        let poff = 68usize;
        let doff = (poff + params.len()).next_multiple_of(4);
        let mut w = vec![0u8; 30];
        w[0..2].copy_from_slice(&(params.len() as u16).to_le_bytes());
        w[2..4].copy_from_slice(&(data.len() as u16).to_le_bytes());
        w[18..20].copy_from_slice(&(params.len() as u16).to_le_bytes());
        w[20..22].copy_from_slice(&(poff as u16).to_le_bytes());
        w[22..24].copy_from_slice(&(data.len() as u16).to_le_bytes());
        w[24..26].copy_from_slice(&(doff as u16).to_le_bytes());
        w[26] = 1;
        w[28..30].copy_from_slice(&sub.to_le_bytes());
        let mut bytes = vec![0u8; 3];
        bytes.extend_from_slice(params);
        bytes.resize(doff - 65, 0);
        bytes.extend_from_slice(data);
        smb1(0x32, 0, false, true, 100, mid, &w, &bytes)
    }

    /// SMB1 TRANS2: SET_FILE_INFO marking a FID for deletion (level 1013) and SET_PATH_INFO renaming a path (level
    /// 1010) make a set-info and a rename transaction (`subcmd`, `level_of_interest`, no SMB2 `set_info` object),
    /// completed by their responses; another subcommand or level makes none; truncated parameters or data make
    /// none and never panic.
    #[test]
    fn smb1_trans2_delete_and_rename() {
        let mut l = SmbTxLog::default();
        let mut params = vec![0x40, 0x07];
        params.extend_from_slice(&LEVEL_DISPOSITION.to_le_bytes());
        l.smb1(true, &trans2(1, TRANS2_SET_FILE_INFO, &params, &[1]));
        let mut params = LEVEL_RENAME.to_le_bytes().to_vec();
        params.extend_from_slice(&[0; 4]);
        params.extend_from_slice(&utf16("\\dir\\a.txt\0"));
        let new = utf16("b.txt");
        let mut data = vec![0u8; 8];
        data.extend_from_slice(&(new.len() as u32).to_le_bytes());
        data.extend_from_slice(&new);
        l.smb1(true, &trans2(2, TRANS2_SET_PATH_INFO, &params, &data));
        // A query (subcommand 5) and an unknown level: nothing.
        l.smb1(true, &trans2(3, 5, &params, &data));
        let mut params = vec![0x40, 0x07];
        params.extend_from_slice(&1004u16.to_le_bytes());
        l.smb1(true, &trans2(4, TRANS2_SET_FILE_INFO, &params, &[1]));
        assert_eq!(l.txs.len(), 2);
        for mid in [1, 2] {
            l.smb1(false, &smb1(0x32, 0, true, true, 100, mid, &[0; 20], &[]));
        }
        let v: Vec<serde_json::Value> = l.take_done().map(|e| json(&e)).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0]["command"], "SMB1_COMMAND_TRANS2");
        assert_eq!(v[0]["status"], "STATUS_SUCCESS");
        assert_eq!(v[0]["filename"], "<unknown>");
        assert_eq!(v[0]["access"], "delete on close");
        assert_eq!(v[0]["subcmd"], "SET_FILE_INFO");
        assert_eq!(v[0]["level_of_interest"], "Set Disposition Information");
        assert_eq!(v[0]["fuid"], "0740");
        assert_eq!(
            v[1]["rename"],
            serde_json::json!({"from": "\\dir\\a.txt", "to": "b.txt"})
        );
        assert!(v[1].get("set_info").is_none());
        assert_eq!(v[1]["fuid"], "");
        // Every cut of the requests: no panic.
        let m = trans2(5, TRANS2_SET_PATH_INFO, &params, &data);
        for n in 0..m.len() {
            l.smb1(true, &m[..n]);
        }
    }

    /// SMB1 TRANS to a DCE/RPC service's named pipe (TransactNmPipe, the FID in the second setup word): the request
    /// PDU in the TRANS request's data and the response PDU in its answer's make one DCE/RPC transaction (call id,
    /// opnum, fragment counts, stub sizes); a TRANS to another pipe makes none.
    #[test]
    fn smb1_trans_carries_dcerpc() {
        let mut l = SmbTxLog::default();
        let create = |mid: u16, name: &[u8]| {
            let mut w = vec![0u8; 48];
            w[0] = 0xff;
            w[5..7].copy_from_slice(&(name.len() as u16).to_le_bytes());
            w[35..39].copy_from_slice(&1u32.to_le_bytes());
            smb1(0xa2, 0, false, true, 100, mid, &w, name)
        };
        let created = |mid: u16, fid: u16| {
            let mut w = vec![0u8; 68];
            w[0] = 0xff;
            w[5..7].copy_from_slice(&fid.to_le_bytes());
            smb1(0xa2, 0, true, true, 100, mid, &w, &[])
        };
        l.smb1(true, &create(1, b"\\srvsvc\0"));
        l.smb1(false, &created(1, 0x4000));
        l.smb1(true, &create(2, b"\\other\0"));
        l.smb1(false, &created(2, 0x4001));
        let pdu = |ptype: u8, body: &[u8]| {
            let mut p = vec![5, 0, ptype, 3, 0x10, 0, 0, 0];
            p.extend_from_slice(&((16 + body.len()) as u16).to_le_bytes());
            p.extend_from_slice(&[0, 0]);
            p.extend_from_slice(&9u32.to_le_bytes());
            p.extend_from_slice(body);
            p
        };
        let mut req = vec![0u8; 8];
        req[6] = 15; // opnum
        req.extend_from_slice(&[0xaa; 20]);
        let req = pdu(0, &req);
        let mut res = vec![0u8; 8];
        res.extend_from_slice(&[0xbb; 40]);
        let res = pdu(2, &res);
        let trans = |mid: u16, fid: u16, data: &[u8]| {
            // Header (32), word count, 16 words, byte count: 67; "\PIPE\" and its NUL, padding to 76.
            let mut w = vec![0u8; 32];
            w[2..4].copy_from_slice(&(data.len() as u16).to_le_bytes());
            w[22..24].copy_from_slice(&(data.len() as u16).to_le_bytes());
            w[24..26].copy_from_slice(&76u16.to_le_bytes());
            w[26] = 2;
            w[28..30].copy_from_slice(&0x26u16.to_le_bytes());
            w[30..32].copy_from_slice(&fid.to_le_bytes());
            let mut bytes = b"\\PIPE\\\0\0\0".to_vec();
            bytes.extend_from_slice(data);
            smb1(0x25, 0, false, true, 100, mid, &w, &bytes)
        };
        let answer = |mid: u16, data: &[u8]| {
            // Header (32), word count, 10 words, byte count: 55; a pad byte.
            let mut w = vec![0u8; 20];
            w[12..14].copy_from_slice(&(data.len() as u16).to_le_bytes());
            w[14..16].copy_from_slice(&56u16.to_le_bytes());
            let mut bytes = vec![0u8];
            bytes.extend_from_slice(data);
            smb1(0x25, 0, true, true, 100, mid, &w, &bytes)
        };
        l.smb1(true, &trans(3, 0x4000, &req));
        l.smb1(false, &answer(3, &res));
        l.smb1(true, &trans(4, 0x4001, &req));
        l.smb1(false, &answer(4, &res));
        let v: Vec<serde_json::Value> = l.finish().map(|e| json(&e)).collect();
        let commands: Vec<&str> = v.iter().map(|r| r["command"].as_str().unwrap()).collect();
        assert_eq!(
            commands,
            [
                "SMB1_COMMAND_NT_CREATE_ANDX",
                "SMB1_COMMAND_NT_CREATE_ANDX",
                "SMB1_COMMAND_TRANS"
            ]
        );
        assert_eq!(
            v[2]["dcerpc"],
            serde_json::json!({
                "request": "REQUEST", "response": "RESPONSE", "opnum": 15, "call_id": 9,
                "req": {"frag_cnt": 1, "stub_data_size": 20}, "res": {"frag_cnt": 1, "stub_data_size": 40}
            })
        );
    }

    /// SMB1: NEGOTIATE (the dialects offered, the one chosen is the flow's), a SESSION_SETUP_ANDX without extended
    /// security (the host strings after the passwords, the account and the domain) answered with the server's, a
    /// LOGOFF_ANDX answered with a DOS error (`SRV_BADUID`, `0x005b`): three records, numbered from 1.
    #[test]
    fn smb1_negotiate_session_logoff() {
        let mut l = SmbTxLog::default();
        l.smb1(
            true,
            &smb1(
                0x72,
                0,
                false,
                true,
                0,
                1,
                &[],
                b"\x02NT LM 0.12\0\x02SMB 2.002\0",
            ),
        );
        let neg = body(34, &[]);
        l.smb1(false, &smb1(0x72, 0, true, true, 0, 1, &neg, &[0x31; 16]));
        let mut w = vec![0xff, 0, 0, 0];
        w.resize(14, 0);
        w.extend_from_slice(&1u16.to_le_bytes());
        w.extend_from_slice(&0u16.to_le_bytes());
        w.resize(26, 0);
        l.smb1(
            true,
            &smb1(0x73, 0, false, true, 0, 2, &w, b"pu\0d\0nt\0pysmb\0"),
        );
        l.smb1(
            false,
            &smb1(
                0x73,
                0,
                true,
                true,
                100,
                2,
                &[0xff, 0, 0, 0, 0, 0],
                b"Unix\0Samba\0",
            ),
        );
        l.smb1(
            true,
            &smb1(0x74, 0, false, true, 100, 3, &[0xff, 0, 0, 0], &[]),
        );
        l.smb1(
            false,
            &smb1(
                0x74,
                0x005b_0002,
                true,
                false,
                100,
                3,
                &[0xff, 0, 0, 0],
                &[],
            ),
        );
        let v: Vec<serde_json::Value> = l.finish().map(|e| json(&e)).collect();
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(v[0]["command"], "SMB1_COMMAND_NEGOTIATE_PROTOCOL");
        assert_eq!(
            v[0]["client_dialects"],
            serde_json::json!(["NT LM 0.12", "SMB 2.002"])
        );
        assert_eq!(v[0]["server_guid"], "31313131-3131-3131-3131-313131313131");
        assert!(v.iter().all(|r| r["dialect"] == "NT LM 0.12"), "{v:?}");
        assert_eq!(v[1]["command"], "SMB1_COMMAND_SESSION_SETUP_ANDX");
        assert_eq!(
            v[1]["request"],
            serde_json::json!({"native_os": "nt", "native_lm": "pysmb"})
        );
        assert_eq!(
            v[1]["response"],
            serde_json::json!({"native_os": "Unix", "native_lm": "Samba"})
        );
        assert_eq!(
            (v[1]["session_id"].as_u64(), v[1]["id"].as_u64()),
            (Some(100), Some(2))
        );
        assert_eq!(v[2]["command"], "SMB1_COMMAND_LOGOFF_ANDX");
        assert_eq!(
            (v[2]["status"].as_str(), v[2]["status_code"].as_str()),
            (Some("SRV_BADUID"), Some("0x005b"))
        );
    }

    /// Hostile input: transactions, tables and fragments stay within their caps, and nothing panics on cut
    /// messages.
    #[test]
    fn bounded_and_never_panics() {
        let mut l = SmbTxLog::default();
        for id in 0..(MAX_TXS as u64 + 10) {
            l.smb2(true, &msg(15, false, 0, id, 1, &body(32, &[])));
        }
        assert_eq!(l.txs.len(), MAX_TXS);
        assert_eq!(l.take_done().count(), 10);
        assert_eq!(l.cut, 10);
        for id in 0..(MAX_ENTRIES as u64 + 5) {
            let r = body(48, &[(4, &1u32.to_le_bytes()), (16, &id.to_le_bytes())]);
            l.smb2(true, &msg(READ, false, 0, id, 1, &r));
        }
        assert_eq!(l.reads.len(), MAX_ENTRIES);
        // A name longer than the cap is cut.
        let long = [&[9u8, 0, 0, 0, 72, 0, 0, 0][..], &vec![b'a'; 4 * MAX_NAME]].concat();
        l.smb2(true, &msg(TREE_CONNECT, false, 0, 99_999, 0, &long));
        assert!(
            matches!(l.txs.back().map(|t| &t.data), Some(TxData::TreeConnect { share, .. }) if share.len() <= MAX_NAME)
        );
        let full = msg(
            CREATE,
            false,
            0,
            1,
            1,
            &body(120, &[(44, &120u16.to_le_bytes()), (46, &[0xff, 0xff])]),
        );
        for cmd in 0..20u16 {
            for cut in 0..full.len() {
                let mut m = full[..cut].to_vec();
                if m.len() > 13 {
                    m[12..14].copy_from_slice(&cmd.to_le_bytes());
                }
                l.smb2(true, &m);
                l.smb2(false, &m);
            }
        }
        assert!(l.txs.len() <= MAX_TXS);
        assert!(l.finish().count() > 0);
    }

    /// Hostile input, as a property: real-shaped messages (a Kerberos session setup, an async pipe read, TRANS2
    /// set-info requests, a DCE/RPC bind over a pipe) with random bytes overwritten and random cuts, and random
    /// bytes behind an SMB1 or SMB2 signature, in either direction: nothing panics, every table stays within its
    /// cap, and every record is written once (the numbers the log hands out are unique).
    mod hostile {
        use super::*;
        use proptest::prelude::*;

        fn templates() -> Vec<Vec<u8>> {
            let blob = spnego_krb5(&[OID_KRB5]);
            let ss = body(
                24,
                &[
                    (12, &88u16.to_le_bytes()),
                    (14, &(blob.len() as u16).to_le_bytes()),
                    (24, &blob),
                ],
            );
            let fid = [7u8; 16];
            let mut read = msg(
                READ,
                true,
                0,
                4,
                3,
                &body(16, &[(2, &[80]), (4, &4u32.to_le_bytes()), (16, b"out!")]),
            );
            read[16] |= 2;
            let mut del = vec![0x40, 0x07];
            del.extend_from_slice(&LEVEL_DISPOSITION.to_le_bytes());
            let mut ren = LEVEL_RENAME.to_le_bytes().to_vec();
            ren.extend_from_slice(&[0; 4]);
            ren.extend_from_slice(&utf16("\\a\0"));
            let mut ren_data = vec![0u8; 8];
            ren_data.extend_from_slice(&2u32.to_le_bytes());
            ren_data.extend_from_slice(b"b\0");
            let bind = {
                let mut p = vec![5, 0, 11, 3, 0x10, 0, 0, 0, 72, 0, 0, 0, 1, 0, 0, 0];
                p.extend_from_slice(&[0u8; 8]);
                p.extend_from_slice(&[1, 0, 0, 0, 0, 0, 1, 0]);
                p.extend_from_slice(&[0x11; 16]);
                p.extend_from_slice(&[3, 0, 0, 0]);
                p.extend_from_slice(&[0; 20]);
                p
            };
            vec![
                msg(SESSION_SETUP, false, 0, 1, 0, &ss),
                msg(
                    READ,
                    false,
                    0,
                    4,
                    3,
                    &body(48, &[(4, &4u32.to_le_bytes()), (16, &fid)]),
                ),
                read,
                trans2(1, TRANS2_SET_FILE_INFO, &del, &[1]),
                trans2(2, TRANS2_SET_PATH_INFO, &ren, &ren_data),
                msg(
                    WRITE,
                    false,
                    0,
                    5,
                    3,
                    &body(
                        48,
                        &[
                            (2, &112u16.to_le_bytes()),
                            (4, &(bind.len() as u32).to_le_bytes()),
                            (16, &fid),
                            (48, &bind),
                        ],
                    ),
                ),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            #[test]
            fn mutated_messages(
                steps in prop::collection::vec(
                    (0usize..8, any::<bool>(), prop::collection::vec((any::<u16>(), any::<u8>()), 0..12),
                     any::<u16>(), prop::collection::vec(any::<u8>(), 0..200)),
                    1..48,
                )
            ) {
                let t = templates();
                let mut l = SmbTxLog::default();
                let mut ids = std::collections::HashSet::new();
                for (pick, to_server, writes, cut, random) in steps {
                    let mut m = match pick {
                        6 => [&b"\xfeSMB"[..], &random].concat(),
                        7 => [&b"\xffSMB"[..], &random].concat(),
                        i => t[i].clone(),
                    };
                    for (at, b) in writes {
                        if !m.is_empty() {
                            let n = m.len();
                            m[usize::from(at) % n] = b;
                        }
                    }
                    m.truncate(usize::from(cut) % (m.len() + 1));
                    if pick == 3 || pick == 4 || pick == 7 {
                        l.smb1(to_server, &m);
                    } else {
                        l.smb2(to_server, &m);
                    }
                    for e in l.take_done() {
                        prop_assert!(ids.insert(e.id));
                    }
                    prop_assert!(l.txs.len() <= MAX_TXS);
                    prop_assert!(l.reads.len() <= MAX_ENTRIES && l.names.len() <= MAX_ENTRIES);
                    prop_assert!(l.frags.len() <= MAX_FRAGS);
                }
                for e in l.finish() {
                    prop_assert!(ids.insert(e.id));
                }
            }
        }
    }
}
