//! The classification table: `classtype` names to the alert's category text and default severity.
//!
//! Suricata's EVE `alert.category` is the classtype's description and `alert.severity` its priority (1 is the most
//! severe), unless the rule sets `priority`. The table below is Suricata's stock `classification.config` plus the
//! four classes Snort 3's community rules add, embedded so a rule file loads without a config directory. Users with
//! their own file extend it with [`Classifications::parse_config`].

use std::collections::BTreeMap;

/// Suricata's `classification.config` and Snort 3's additions: (name, description, priority).
const STANDARD: &[(&str, &str, u8)] = &[
    ("not-suspicious", "Not Suspicious Traffic", 3),
    ("unknown", "Unknown Traffic", 3),
    ("bad-unknown", "Potentially Bad Traffic", 2),
    ("attempted-recon", "Attempted Information Leak", 2),
    ("successful-recon-limited", "Information Leak", 2),
    (
        "successful-recon-largescale",
        "Large Scale Information Leak",
        2,
    ),
    ("attempted-dos", "Attempted Denial of Service", 2),
    ("successful-dos", "Denial of Service", 2),
    ("attempted-user", "Attempted User Privilege Gain", 1),
    ("unsuccessful-user", "Unsuccessful User Privilege Gain", 1),
    ("successful-user", "Successful User Privilege Gain", 1),
    (
        "attempted-admin",
        "Attempted Administrator Privilege Gain",
        1,
    ),
    (
        "successful-admin",
        "Successful Administrator Privilege Gain",
        1,
    ),
    ("rpc-portmap-decode", "Decode of an RPC Query", 2),
    ("shellcode-detect", "Executable code was detected", 1),
    ("string-detect", "A suspicious string was detected", 3),
    (
        "suspicious-filename-detect",
        "A suspicious filename was detected",
        2,
    ),
    (
        "suspicious-login",
        "An attempted login using a suspicious username was detected",
        2,
    ),
    ("system-call-detect", "A system call was detected", 2),
    ("tcp-connection", "A TCP connection was detected", 4),
    ("trojan-activity", "A Network Trojan was detected", 1),
    (
        "unusual-client-port-connection",
        "A client was using an unusual port",
        2,
    ),
    ("network-scan", "Detection of a Network Scan", 3),
    (
        "denial-of-service",
        "Detection of a Denial of Service Attack",
        2,
    ),
    (
        "non-standard-protocol",
        "Detection of a non-standard protocol or event",
        2,
    ),
    (
        "protocol-command-decode",
        "Generic Protocol Command Decode",
        3,
    ),
    (
        "web-application-activity",
        "access to a potentially vulnerable web application",
        2,
    ),
    ("web-application-attack", "Web Application Attack", 1),
    ("misc-activity", "Misc activity", 3),
    ("misc-attack", "Misc Attack", 2),
    ("icmp-event", "Generic ICMP event", 3),
    (
        "inappropriate-content",
        "Inappropriate Content was Detected",
        1,
    ),
    (
        "policy-violation",
        "Potential Corporate Privacy Violation",
        1,
    ),
    (
        "default-login-attempt",
        "Attempt to login by a default username and password",
        2,
    ),
    (
        "targeted-activity",
        "Targeted Malicious Activity was Detected",
        1,
    ),
    ("exploit-kit", "Exploit Kit Activity Detected", 1),
    (
        "external-ip-check",
        "Device Retrieving External IP Address Detected",
        2,
    ),
    ("domain-c2", "Domain Observed Used for C2 Detected", 1),
    ("pup-activity", "Possibly Unwanted Program Detected", 2),
    (
        "credential-theft",
        "Successful Credential Theft Detected",
        1,
    ),
    (
        "social-engineering",
        "Possible Social Engineering Attempted",
        2,
    ),
    ("coin-mining", "Crypto Currency Mining Activity Detected", 2),
    (
        "command-and-control",
        "Malware Command and Control Activity Detected",
        1,
    ),
    ("sdf", "Sensitive Data", 2),
    (
        "file-format",
        "Known malicious file or file based exploit",
        1,
    ),
    (
        "malware-cnc",
        "Known malware command and control traffic",
        1,
    ),
    (
        "client-side-exploit",
        "Known client side exploit attempt",
        1,
    ),
];

/// One class: what EVE prints as `alert.category` and the default `alert.severity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub description: std::sync::Arc<str>,
    pub priority: u8,
}

/// Classtype name → class. Names compare case-insensitively (stored lowercase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classifications {
    map: BTreeMap<String, Class>,
}

impl Default for Classifications {
    fn default() -> Self {
        Self::standard()
    }
}

impl Classifications {
    /// The embedded standard table.
    pub fn standard() -> Classifications {
        let map = STANDARD
            .iter()
            .map(|&(n, d, p)| {
                (
                    n.to_string(),
                    Class {
                        description: (*d).into(),
                        priority: p,
                    },
                )
            })
            .collect();
        Classifications { map }
    }

    /// No classes at all (every `classtype` then skips its rule).
    pub fn empty() -> Classifications {
        Classifications {
            map: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) the classes of a `classification.config` text: lines
    /// `config classification: name,description,priority`; `#` comments and blank lines are ignored.
    /// Returns the 1-based line numbers and reasons of lines it could not read.
    pub fn parse_config(&mut self, text: &str) -> Vec<(usize, String)> {
        self.parse_config_bytes(text.as_bytes())
    }

    /// [`Classifications::parse_config`] over the file's bytes: a line that is not UTF-8 is skipped and reported
    /// with its number, as a malformed line is (Suricata logs a bad line and reads on), the others applied.
    pub fn parse_config_bytes(&mut self, text: &[u8]) -> Vec<(usize, String)> {
        let mut errors = Vec::new();
        for (n, raw) in crate::text::physical_lines(text) {
            let i = n - 1;
            let line = match crate::text::line_text(raw) {
                Ok(l) => l.trim(),
                Err(e) => {
                    errors.push((n, e));
                    continue;
                }
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some(rest) = line.strip_prefix("config classification:") else {
                errors.push((
                    i + 1,
                    "expected `config classification: name,description,priority`".to_string(),
                ));
                continue;
            };
            let fields = rest
                .split_once(',')
                .and_then(|(n, r)| r.rsplit_once(',').map(|(d, p)| (n, d, p)));
            match fields {
                Some((name, desc, prio)) if !name.trim().is_empty() && !desc.trim().is_empty() => {
                    match prio.trim().parse::<u8>() {
                        Ok(p) if p > 0 => {
                            let class = Class {
                                description: desc.trim().into(),
                                priority: p,
                            };
                            self.map.insert(name.trim().to_ascii_lowercase(), class);
                        }
                        _ => errors.push((i + 1, format!("invalid priority `{}`", prio.trim()))),
                    }
                }
                _ => errors.push((i + 1, "expected three comma-separated fields".to_string())),
            }
        }
        errors
    }

    /// The class named `name`.
    pub fn get(&self, name: &str) -> Option<&Class> {
        self.map.get(&name.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line that is not UTF-8 is reported with its number and skipped, the others applied (CRLF endings read as
    /// LF; a NUL byte is text, kept in the description it is in).
    #[test]
    fn a_line_not_utf8_is_skipped_and_the_others_applied() {
        let mut c = Classifications::empty();
        let errs = c.parse_config_bytes(
            b"config classification: one,First,1\r\n\
              config classification: two,Sec\xffond,2\n\
              \xfe\n\
              config classification: three,Th\x00ird,3\n\
              config classification: four,Fourth",
        );
        assert_eq!(
            errs,
            [
                (2, "invalid UTF-8 (byte 0xff at column 31)".to_string()),
                (3, "invalid UTF-8 (byte 0xfe at column 1)".to_string()),
                (5, "expected three comma-separated fields".to_string()),
            ]
        );
        assert_eq!(&*c.get("one").unwrap().description, "First");
        assert!(c.get("two").is_none());
        assert_eq!(&*c.get("three").unwrap().description, "Th\0ird");
        assert_eq!(c.get("three").unwrap().priority, 3);
        assert!(c.parse_config_bytes(b"").is_empty());
    }

    #[test]
    fn standard_and_custom() {
        let mut c = Classifications::standard();
        assert_eq!(c.get("trojan-activity").unwrap().priority, 1);
        assert_eq!(
            &*c.get("Misc-Activity").unwrap().description,
            "Misc activity"
        );
        let errs = c.parse_config("# x\nconfig classification: my-class,Mine, really,4\nbogus\n");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0, 3);
        assert_eq!(
            c.get("my-class").unwrap(),
            &Class {
                description: "Mine, really".into(),
                priority: 4
            }
        );
    }
}
