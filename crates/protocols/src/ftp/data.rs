//! FTP data connections (Suricata's `ftp-data`): the file one carries, handed to the rules' `file.data` and to EVE
//! (`ftp_data` with the command and file name, `fileinfo` for the file) when the connection ends.
//!
//! **What names the file.** The control connection's `STOR` / `RETR` / `APPE` / `STOU` command, which the FTP
//! parser reports as an [`FtpTransfer`] together with the data connection it announced last; the engine keeps it
//! on the data connection's expectation and gives it here when the data connection ends. A data connection whose
//! command was never seen (a listing, `LIST`/`NLST`, or a command lost to a gap) still has its file: Suricata then
//! writes no `command`/`filename` either.
//!
//! **Direction.** A transfer sends bytes one way: the file is what the first side to send data sent. Bytes the
//! other side sends are counted ([`FtpDataFile::ignored`]), not inspected (Suricata checks the direction against
//! the command and ignores the other side too).
//!
//! **Bounds.** The first [`Limits::ftp_data_file_cap`](crate::Limits) bytes are kept for `file.data` (Suricata's
//! stream depth for files); the size counts every byte. A gap in the sending direction marks the file `gaps`.

use crate::file::{FileEnd, FileRecord};
use crate::{AppEvent, AppProto, Direction, EventSink, Limits};

/// Suricata's EVE `ftp_data` record: the command that moved the file and its name.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FtpDataEvent {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<&'static str>,
}

/// What the control connection said about the file a data connection carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// `STOR`, `RETR`, `APPE` or `STOU`.
    pub command: &'static str,
    /// The command's argument, as sent (`STOU` has none).
    pub filename: Box<[u8]>,
}

/// One data connection's file while it is transferred.
#[derive(Clone, Debug)]
pub struct FtpDataFile {
    /// The direction the file travels: the first to send data.
    dir: Option<Direction>,
    file: FileRecord,
    ignored: u64,
}

impl FtpDataFile {
    /// A file whose first [`Limits::ftp_data_file_cap`] bytes are kept, hashed as `limits` asks. Its name comes
    /// with the transfer command when it ends.
    pub fn new(limits: &Limits) -> Self {
        FtpDataFile {
            dir: None,
            file: FileRecord::new(b"", limits.ftp_data_file_cap, limits.file_options()),
            ignored: 0,
        }
    }

    /// In-order bytes of the data connection in direction `dir`.
    pub fn data(&mut self, dir: Direction, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if *self.dir.get_or_insert(dir) != dir {
            self.ignored += bytes.len() as u64;
            return;
        }
        self.file.data(bytes);
    }

    /// `len` bytes in direction `dir` were lost (a capture gap).
    pub fn gap(&mut self, dir: Direction, len: u64) {
        if self.dir.is_none_or(|d| d == dir) {
            self.dir = Some(dir);
            self.file.gap(len);
        }
    }

    /// The direction the file travels, once a side sent something.
    pub fn direction(&self) -> Option<Direction> {
        self.dir
    }

    /// Bytes the side that does not send the file sent.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// The bytes kept so far (the file's first bytes, up to the cap).
    pub fn kept(&self) -> &[u8] {
        self.file.kept()
    }

    /// The data connection ended: hands the file to `out` (EVE `ftp_data`, then the file to the rules and EVE
    /// `fileinfo`),
    /// named by `transfer` when the control connection said what it was. `closed`: the sending side ended the
    /// connection normally (a FIN), so the file is whole (`CLOSED`), else it was cut (`TRUNCATED`). A data
    /// connection that carried nothing hands over nothing.
    pub fn finish(self, transfer: Option<&Transfer>, closed: bool, out: &mut dyn EventSink) {
        let Some(dir) = self.dir else { return };
        let mut file = self.file;
        if let Some(t) = transfer {
            file.set_name(&t.filename);
        }
        out.event(AppEvent::FtpData(FtpDataEvent {
            filename: transfer.map(|_| String::from_utf8_lossy(file.name()).into_owned()),
            command: transfer.map(|t| t.command),
        }));
        file.close(
            FileEnd {
                proto: AppProto::FtpData,
                tx_id: 0,
                to_server: dir == Direction::ToServer,
                complete: closed,
            },
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileData;

    #[derive(Default)]
    struct Out {
        events: Vec<AppEvent>,
        files: Vec<(bool, Vec<u8>, Vec<u8>, u64)>,
    }

    impl EventSink for Out {
        fn event(&mut self, event: AppEvent) {
            self.events.push(event);
        }
        fn file(&mut self, f: &FileData<'_>) {
            assert_eq!(f.proto, AppProto::FtpData);
            self.files
                .push((f.to_server, f.name.to_vec(), f.data.to_vec(), f.size));
        }
    }

    fn limits(cap: usize) -> Limits {
        Limits {
            ftp_data_file_cap: cap,
            ..Limits::default()
        }
    }

    fn retr() -> Transfer {
        Transfer {
            command: "RETR",
            filename: b"report.pdf".to_vec().into_boxed_slice(),
        }
    }

    #[test]
    fn the_first_sender_carries_the_file_cut_at_the_cap() {
        let mut f = FtpDataFile::new(&limits(4));
        f.data(Direction::ToClient, b"%PD");
        f.data(Direction::ToServer, b"ack");
        f.data(Direction::ToClient, b"F-1.4");
        assert_eq!(f.kept(), b"%PDF");
        assert_eq!(f.ignored(), 3);
        let mut out = Out::default();
        f.finish(Some(&retr()), true, &mut out);
        assert_eq!(
            out.files,
            vec![(false, b"report.pdf".to_vec(), b"%PDF".to_vec(), 8)]
        );
        let v: Vec<_> = out
            .events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        assert_eq!(
            v[0],
            serde_json::json!({"ftp_data": {"filename": "report.pdf", "command": "RETR"}})
        );
        assert_eq!(v[1]["fileinfo"]["state"], "CLOSED");
        assert_eq!(v[1]["fileinfo"]["size"], 8);
        assert_eq!(v[1]["fileinfo"]["filename"], "report.pdf");
    }

    #[test]
    fn unnamed_empty_and_cut_files() {
        // Nothing sent: nothing handed over.
        let mut out = Out::default();
        FtpDataFile::new(&limits(10)).finish(Some(&retr()), true, &mut out);
        assert!(out.files.is_empty() && out.events.is_empty());
        // No command seen: the file is still inspected, the record has no command or name.
        let mut f = FtpDataFile::new(&limits(10));
        f.data(Direction::ToServer, b"MZ\x90\x00");
        f.gap(Direction::ToServer, 100);
        f.gap(Direction::ToClient, 5);
        f.finish(None, true, &mut out);
        assert_eq!(out.files[0].3, 104);
        let v = serde_json::to_value(&out.events[0]).unwrap();
        assert_eq!(v, serde_json::json!({"ftp_data": {}}));
        let v = serde_json::to_value(&out.events[1]).unwrap();
        assert_eq!(v["fileinfo"]["gaps"], true);
        assert_eq!(v["fileinfo"]["state"], "TRUNCATED");
    }
}
