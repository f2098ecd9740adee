//! Database wire protocols: MySQL/MariaDB (nDPI `MySQL`), PostgreSQL (`PostgreSQL`) and Microsoft SQL Server's TDS
//! (`MsSQL-TDS`).
//!
//! * **MySQL** greets first: a packet with a 3-byte little-endian length and sequence id 0 whose payload is the
//!   Handshake V10 (`0x0a`, a NUL-terminated printable server version, a thread id, 8 bytes of salt, a zero filler).
//!   The length must match the bytes that follow. Certain from the greeting alone.
//! * **PostgreSQL**: the client's first message has no type byte: a 32-bit length then either protocol 3.0
//!   (`0x00030000`, followed by NUL-terminated `key\0value\0` pairs and a final NUL) or one of the special codes
//!   (SSLRequest 80877103, GSSENCRequest 80877104, CancelRequest 80877102) with their fixed lengths.
//! * **TDS**: 8-byte header (type, status, big-endian length, SPID, packet id, window). The client's first packet is
//!   PRELOGIN (0x12) or LOGIN7 (0x10), with an end-of-message status and a length equal to what arrived; PRELOGIN's
//!   option table (token, offset, length; 0xFF-terminated) must point inside the packet.

use crate::scan::{be16, be32, le16, le24, le32};
use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

fn mysql_greeting(d: &[u8]) -> Probe {
    let (Some(len), Some(&seq)) = (le24(d, 0), d.get(3)) else {
        return if d.len() < 4 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let len = len as usize;
    if seq != 0 || !(40..=1024).contains(&len) {
        return Probe::NotForUs;
    }
    let Some(&proto) = d.get(4) else {
        return Probe::Unsure;
    };
    if proto != 0x0a {
        return Probe::NotForUs;
    }
    let Some(p) = d.get(4..4 + len) else {
        return if d.len() < 64 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let Some(nul) = p[1..].iter().position(|&b| b == 0) else {
        return Probe::NotForUs;
    };
    let version = &p[1..1 + nul];
    // Thread id (4), salt part 1 (8), filler (1).
    let filler = p.get(1 + nul + 1 + 4 + 8);
    let ok = !version.is_empty()
        && version[0].is_ascii_digit()
        && crate::scan::printable(version)
        && filler == Some(&0);
    if ok { Probe::Certain } else { Probe::NotForUs }
}

fn pg_startup(d: &[u8]) -> Probe {
    let (Some(len), Some(code)) = (be32(d, 0), be32(d, 4)) else {
        return if d.len() < 8 && d.first().is_none_or(|&b| b == 0) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let len = len as usize;
    match code {
        80_877_103 | 80_877_104 if len == 8 => Probe::Certain,
        80_877_102 if len == 16 => Probe::Certain,
        0x0003_0000 if (9..=10_000).contains(&len) => {
            let Some(body) = d.get(8..len) else {
                return if d.len() < len {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                };
            };
            // key\0value\0 ... \0, keys printable, starting with a known parameter name.
            let known = [
                &b"user\0"[..],
                b"database\0",
                b"application_name\0",
                b"client_encoding\0",
                b"options\0",
                b"replication\0",
                b"DateStyle\0",
            ];
            if body.last() == Some(&0) && known.iter().any(|k| body.starts_with(k)) {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        }
        _ => Probe::NotForUs,
    }
}

fn tds_client(d: &[u8]) -> Probe {
    let (Some(&ty), Some(&status), Some(len)) = (d.first(), d.get(1), be16(d, 2)) else {
        return if d
            .first()
            .is_none_or(|b| matches!(b, 0x01 | 0x03 | 0x0e | 0x10 | 0x12))
        {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let len = usize::from(len);
    if !matches!(ty, 0x01 | 0x03 | 0x0e | 0x10 | 0x12)
        || status & !0x1f != 0
        || !(9..=32768).contains(&len)
    {
        return Probe::NotForUs;
    }
    if d.len() < 8 {
        return Probe::Unsure;
    }
    // The window byte is always 0.
    if d[7] != 0 {
        return Probe::NotForUs;
    }
    match ty {
        // LOGIN7: a TDS version with a known high byte.
        0x10 => match d.get(12..16) {
            Some(v) if matches!(v[3], 0x70..=0x74) => Probe::Certain,
            Some(_) => Probe::NotForUs,
            None => Probe::Unsure,
        },
        0x12 => prelogin(d, len),
        // SQL batch, RPC, transaction manager request (TDS 7.2+): ALL_HEADERS first, little-endian lengths.
        _ => {
            let (Some(total), Some(hlen), Some(htype)) = (le32(d, 8), le32(d, 12), le16(d, 16))
            else {
                return Probe::Unsure;
            };
            let (total, hlen) = (total as usize, hlen as usize);
            let all_headers = (18..=len - 8).contains(&total)
                && (6..=total - 4).contains(&hlen)
                && (1..=3).contains(&htype);
            // Before TDS 7.2 (and from some drivers) there are no ALL_HEADERS: an RPC starts with the procedure
            // name (length, then UTF-16LE) or 0xFFFF and a well-known procedure id; a batch with UTF-16LE text.
            let body = &d[8..];
            let name_len = le16(d, 8).map_or(0, usize::from);
            let rpc_name = ty == 0x03
                && (((1..=128).contains(&name_len)
                    && utf16_ascii(body.get(2..).unwrap_or(&[]), name_len.min(8)))
                    || (name_len == 0xffff
                        && le16(d, 10).is_some_and(|id| (1..=15).contains(&id))));
            let batch_text = ty == 0x01 && utf16_ascii(body, 8);
            if all_headers || rpc_name || batch_text {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        }
    }
}

/// Whether `d` starts with `n` UTF-16LE code units that are printable ASCII (or whitespace).
fn utf16_ascii(d: &[u8], n: usize) -> bool {
    d.len() >= 2 * n
        && d.chunks_exact(2)
            .take(n)
            .all(|c| c[1] == 0 && (c[0].is_ascii_graphic() || c[0].is_ascii_whitespace()))
}

/// PRELOGIN option table: (token, offset, length) entries ending with 0xFF, pointing inside the packet.
fn prelogin(d: &[u8], len: usize) -> Probe {
    let Some(body) = d.get(8..len.min(d.len())) else {
        return Probe::Unsure;
    };
    let mut i = 0;
    let mut opts = 0;
    loop {
        let Some(&token) = body.get(i) else {
            return Probe::Unsure;
        };
        if token == 0xff {
            return if opts > 0 {
                Probe::Certain
            } else {
                Probe::NotForUs
            };
        }
        let (Some(off), Some(olen)) = (be16(body, i + 1), be16(body, i + 3)) else {
            return Probe::Unsure;
        };
        if token > 0x08 || usize::from(off) + usize::from(olen) > len - 8 {
            return Probe::NotForUs;
        }
        opts += 1;
        i += 5;
    }
}

/// Which database protocol a [`SqlDetector`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sql {
    MySql,
    Postgres,
    Tds,
}

/// Detector for one database wire protocol.
pub struct SqlDetector(pub Sql);

impl Detector for SqlDetector {
    fn proto(&self) -> AppProto {
        match self.0 {
            Sql::MySql => AppProto::Mysql,
            Sql::Postgres => AppProto::Postgres,
            Sql::Tds => AppProto::MsSqlTds,
        }
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let first_of_flow = ctx.payload_index == ctx.dir_index;
        match (self.0, ctx.dir) {
            (Sql::MySql, Direction::ToClient) => mysql_greeting(ctx.prefix),
            // The MySQL client speaks second; its packets alone do not identify it.
            (Sql::MySql, Direction::ToServer) => {
                if first_of_flow {
                    Probe::NotForUs
                } else {
                    Probe::Unsure
                }
            }
            (Sql::Postgres, Direction::ToServer) => pg_startup(ctx.prefix),
            (Sql::Tds, Direction::ToServer) => tds_client(ctx.prefix),
            (Sql::Postgres | Sql::Tds, Direction::ToClient) => {
                if first_of_flow {
                    Probe::NotForUs
                } else {
                    Probe::Unsure
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    #[test]
    fn mysql_greeting_v10() {
        let mut p = vec![0x0a];
        p.extend_from_slice(b"5.7.33-log\0");
        p.extend_from_slice(&[1, 0, 0, 0]);
        p.extend_from_slice(b"abcdefgh");
        p.push(0);
        p.extend_from_slice(&[0xff, 0xf7, 0x08, 0x02, 0x00, 0xff, 0x81, 0x15]);
        p.extend_from_slice(&[0u8; 10]);
        p.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
        let mut d = (p.len() as u32).to_le_bytes()[..3].to_vec();
        d.push(0);
        d.extend_from_slice(&p);
        let my = SqlDetector(Sql::MySql);
        assert_eq!(my.probe(&ctx_tcp(Direction::ToClient, &d)), Probe::Certain);
        assert_eq!(
            my.probe(&ctx_tcp(Direction::ToClient, &d[..20])),
            Probe::Unsure
        );
        assert_eq!(
            my.probe(&ctx_tcp(Direction::ToClient, b"SSH-2.0-OpenSSH\r\n")),
            Probe::NotForUs
        );
    }

    #[test]
    fn postgres_startup() {
        let pg = SqlDetector(Sql::Postgres);
        assert_eq!(
            pg.probe(&ctx_tcp(
                Direction::ToServer,
                &[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]
            )),
            Probe::Certain
        );
        let mut s = vec![0, 0, 0, 0, 0, 3, 0, 0];
        s.extend_from_slice(b"user\0postgres\0database\0test\0\0");
        s[3] = s.len() as u8;
        assert_eq!(pg.probe(&ctx_tcp(Direction::ToServer, &s)), Probe::Certain);
        assert_eq!(
            pg.probe(&ctx_tcp(Direction::ToServer, &s[..12])),
            Probe::Unsure
        );
        assert_eq!(
            pg.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
    }

    #[test]
    fn tds_prelogin() {
        // PRELOGIN with VERSION (offset 11, len 6) and terminator, then the version bytes.
        let mut d = vec![
            0x12, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x06, 0xff,
        ];
        d.extend_from_slice(&[0x0f, 0x00, 0x07, 0xd0, 0x00, 0x00]);
        d[3] = d.len() as u8;
        // Offset is relative to the option table start.
        d[10] = 6;
        let tds = SqlDetector(Sql::Tds);
        assert_eq!(tds.probe(&ctx_tcp(Direction::ToServer, &d)), Probe::Certain);
        assert_eq!(
            tds.probe(&ctx_tcp(Direction::ToServer, b"\x16\x03\x01\x00\x10")),
            Probe::NotForUs
        );
    }
}
