//! `rpc:PROGRAM,VERSION,PROCEDURE`: the packet's payload is an ONC RPC call (RFC 5531) to that program, version
//! and procedure, as Suricata's `rpc` keyword tests it.
//!
//! The test reads the call header at the start of the packet's payload: over TCP after the 4-byte record mark
//! (RFC 5531 section 11), over UDP at once. It holds when the message type is CALL (0), the RPC version is 2 and the
//! program matches, then the version and the procedure unless the rule writes `*` for them. A payload too short for
//! the header (28 bytes over TCP, 24 over UDP) does not match. The keyword makes its rule a packet rule (on TCP each
//! packet's payload is read, not the reassembled stream), as Suricata's `rpc` inspects packets; the rule's protocol
//! says which layout the payload has, so a rule for both transports (`alert ip`) is skipped with its reason.
//!
//! Costs: six big-endian words read per packet the rule meets.

/// One `rpc` test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcTest {
    pub program: u32,
    /// `None` for `*`.
    pub version: Option<u32>,
    /// `None` for `*`.
    pub procedure: Option<u32>,
    /// The payload starts with TCP's record mark (set from the rule's protocol).
    pub record_mark: bool,
}

impl RpcTest {
    /// Parses `PROGRAM[,VERSION|*[,PROCEDURE|*]]` (numbers in decimal, as Suricata reads them).
    pub fn parse(v: &str) -> Result<RpcTest, String> {
        let mut parts = v.split(',').map(str::trim);
        let num = |s: &str, what: &str| {
            s.parse::<u32>().map_err(|_| {
                format!(
                    "rpc: invalid {what} `{}`",
                    s.chars().take(32).collect::<String>()
                )
            })
        };
        let program = num(parts.next().unwrap_or(""), "program")?;
        let opt = |p: Option<&str>, what: &str| match p {
            None | Some("*") => Ok(None),
            Some(s) => num(s, what).map(Some),
        };
        let version = opt(parts.next(), "version")?;
        let procedure = opt(parts.next(), "procedure")?;
        if parts.next().is_some() {
            return Err("rpc: more than program, version and procedure".into());
        }
        Ok(RpcTest {
            program,
            version,
            procedure,
            record_mark: false,
        })
    }

    /// Whether `payload` (a packet's whole payload) is a call this test names.
    pub fn matches(&self, payload: &[u8]) -> bool {
        let start = if self.record_mark { 4 } else { 0 };
        let word = |i: usize| {
            payload
                .get(start + 4 * i..start + 4 * i + 4)
                .and_then(|w| <[u8; 4]>::try_from(w).ok())
                .map(u32::from_be_bytes)
        };
        // xid (0), message type (1), RPC version (2), program (3), version (4), procedure (5).
        let Some(proc_) = word(5) else {
            return false;
        };
        word(1) == Some(0)
            && word(2) == Some(2)
            && word(3) == Some(self.program)
            && self.version.is_none_or(|v| word(4) == Some(v))
            && self.procedure.is_none_or(|p| proc_ == p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(prog: u32, vers: u32, proc_: u32) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [0x1234_5678u32, 0, 2, prog, vers, proc_, 1, 0] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        b
    }

    #[test]
    fn parses_numbers_and_wildcards() {
        let t = RpcTest::parse("100000, 2, *").unwrap();
        assert_eq!((t.program, t.version, t.procedure), (100000, Some(2), None));
        let t = RpcTest::parse("100003").unwrap();
        assert_eq!((t.version, t.procedure), (None, None));
        for bad in ["", "x", "1,2,3,4", "1,-2", "1,2,y"] {
            assert!(RpcTest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matches_calls_over_udp_and_tcp() {
        let udp = call(100000, 2, 4);
        let mut t = RpcTest::parse("100000,2,4").unwrap();
        assert!(t.matches(&udp));
        assert!(!RpcTest::parse("100000,3,*").unwrap().matches(&udp));
        assert!(!RpcTest::parse("100000,*,3").unwrap().matches(&udp));
        assert!(RpcTest::parse("100000,*,*").unwrap().matches(&udp));
        assert!(!RpcTest::parse("100003,*,*").unwrap().matches(&udp));
        // A reply (type 1) and an RPC version other than 2 are not calls.
        let mut reply = udp.clone();
        reply[7] = 1;
        assert!(!t.matches(&reply));
        let mut v3 = udp.clone();
        v3[11] = 3;
        assert!(!t.matches(&v3));
        // Too short for the procedure.
        assert!(!t.matches(&udp[..20]));
        // Over TCP the record mark comes first.
        let mut tcp = 0x8000_0020u32.to_be_bytes().to_vec();
        tcp.extend_from_slice(&udp);
        assert!(!t.matches(&tcp));
        t.record_mark = true;
        assert!(t.matches(&tcp));
        assert!(!t.matches(&udp));
    }
}
