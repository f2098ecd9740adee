//! The `.pat` file format, read the way l7-filter's loaders read it.
//!
//! A pattern file is: comment lines starting with `#`, blank lines, then the first other line, which names the
//! protocol (only its first word counts, so `http I am so cool` names `http`), then the next other line, which is
//! the regular expression, byte for byte (trailing spaces included: `finger`'s pattern ends in one). The userspace
//! l7-filter added optional `userspace pattern=` and `userspace flags=` lines after it, which only `smtp` and
//! `x11` use; they are kept as metadata (see [`PatFile::userspace_pattern`]) but the engine matches the main
//! pattern, case-insensitively, as both versions of l7-filter do with it.
//!
//! Comment lines carry the metadata this crate uses for precedence: `# Pattern attributes:` (`subset`,
//! `superset`, `overmatch`, speed and quality words) and `# Protocol groups:`.
//!
//! The file is hostile input like any other: it is read as bytes (no UTF-8 requirement on the regex line), the
//! pattern is capped at l7-filter's `MAX_PATTERN_LEN` (8192 bytes) and the name at `MAX_PROTOCOL_LEN` (256).

use thiserror::Error;

/// l7-filter's `MAX_PATTERN_LEN`: the kernel's `xt_layer7_info` holds the pattern in a buffer this big (with its
/// NUL), and the iptables extension refuses longer ones.
pub const MAX_PATTERN_LEN: usize = 8192;
/// l7-filter's `MAX_PROTOCOL_LEN` (with the NUL), so names up to 255 bytes.
pub const MAX_PROTOCOL_LEN: usize = 256;

/// One parsed `.pat` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatFile {
    /// The protocol name (first word of the first non-comment line).
    pub name: String,
    /// The regular expression line, raw (before `\xHH` processing), without its line ending.
    pub pattern: Vec<u8>,
    /// The `userspace pattern=` line, if any (metadata only; see the module docs).
    pub userspace_pattern: Option<Vec<u8>>,
    /// The `userspace flags=` line, if any, e.g. `REG_NOSUB REG_EXTENDED`.
    pub userspace_flags: Option<String>,
    /// The first comment line, e.g. `HTTP - HyperText Transfer Protocol - RFC 2616`.
    pub description: String,
    /// Words of the `# Pattern attributes:` line, lower-cased (`great`, `slow`, `superset`, ...).
    pub attributes: Vec<String>,
    /// Words of the `# Protocol groups:` line.
    pub groups: Vec<String>,
}

/// Why a `.pat` file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatError {
    /// Only comments and blank lines.
    #[error("no protocol name line")]
    NoName,
    /// A name line but no pattern line after it.
    #[error("no pattern line after the name line")]
    NoPattern,
    /// The name is `MAX_PROTOCOL_LEN` bytes or more, or is not printable ASCII.
    #[error("bad protocol name ({0})")]
    BadName(String),
    /// The pattern is `MAX_PATTERN_LEN` bytes or more (l7-filter: "Pattern is too long").
    #[error("pattern is {0} bytes, l7-filter's limit is {max}", max = MAX_PATTERN_LEN - 1)]
    PatternTooLong(usize),
}

/// Parses the bytes of one `.pat` file.
pub fn parse_pat_file(bytes: &[u8]) -> Result<PatFile, PatError> {
    let mut name: Option<String> = None;
    let mut pattern: Option<Vec<u8>> = None;
    let mut userspace_pattern = None;
    let mut userspace_flags = None;
    let mut description = String::new();
    let mut attributes = Vec::new();
    let mut groups = Vec::new();

    for raw in bytes.split(|&b| b == b'\n') {
        // A file saved with CRLF line ends would otherwise put a '\r' at the end of every pattern.
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if let Some(comment) = line.strip_prefix(b"#") {
            let text = String::from_utf8_lossy(comment);
            let text = text.trim();
            if description.is_empty() && name.is_none() && !text.is_empty() {
                description = text.to_string();
            }
            if let Some(rest) = strip_prefix_ci(text, "pattern attributes:") {
                attributes = rest
                    .split_whitespace()
                    .map(str::to_ascii_lowercase)
                    .collect();
            } else if let Some(rest) = strip_prefix_ci(text, "protocol groups:") {
                groups = rest.split_whitespace().map(str::to_string).collect();
            }
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if name.is_none() {
            let word_end = line
                .iter()
                .position(|&b| b == b' ' || b == b'\t')
                .unwrap_or(line.len());
            let word = &line[..word_end];
            if word.len() >= MAX_PROTOCOL_LEN {
                return Err(PatError::BadName(format!("{} bytes long", word.len())));
            }
            if !word.iter().all(|b| b.is_ascii_graphic()) {
                return Err(PatError::BadName(
                    String::from_utf8_lossy(word).into_owned(),
                ));
            }
            name = Some(String::from_utf8_lossy(word).into_owned());
        } else if pattern.is_none() {
            if line.len() >= MAX_PATTERN_LEN {
                return Err(PatError::PatternTooLong(line.len()));
            }
            pattern = Some(line.to_vec());
        } else if let Some(rest) = line.strip_prefix(b"userspace pattern=") {
            userspace_pattern = Some(rest.to_vec());
        } else if let Some(rest) = line.strip_prefix(b"userspace flags=") {
            userspace_flags = Some(String::from_utf8_lossy(rest).trim().to_string());
        }
        // Any other line after the pattern is ignored, as l7-filter stops reading after the pattern line.
    }
    let name = name.ok_or(PatError::NoName)?;
    let pattern = pattern.ok_or(PatError::NoPattern)?;
    Ok(PatFile {
        name,
        pattern,
        userspace_pattern,
        userspace_flags,
        description,
        attributes,
        groups,
    })
}

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_pattern_and_metadata() {
        let file = b"# HTTP - HyperText Transfer Protocol - RFC 2616\n\
# Pattern attributes: great slow notsofast superset\n\
# Protocol groups: document_retrieval ietf_draft_standard\n\
#\n\
\n\
http extra words\n\
# comment between name and pattern\n\
http/(0\\.9|1\\.0|1\\.1) [1-5][0-9][0-9] \n\
#old pattern\n";
        let pat = parse_pat_file(file).unwrap();
        assert_eq!(pat.name, "http");
        assert_eq!(
            pat.pattern,
            b"http/(0\\.9|1\\.0|1\\.1) [1-5][0-9][0-9] ".to_vec(),
            "trailing space is kept"
        );
        assert_eq!(
            pat.description,
            "HTTP - HyperText Transfer Protocol - RFC 2616"
        );
        assert_eq!(pat.attributes, ["great", "slow", "notsofast", "superset"]);
        assert_eq!(pat.groups, ["document_retrieval", "ietf_draft_standard"]);
        assert_eq!(pat.userspace_pattern, None);
    }

    #[test]
    fn reads_userspace_lines_and_crlf() {
        let file = b"smtp\r\n^220[\\x09-\\x0d -~]* (e?smtp|simple mail)\r\n\
userspace pattern=^220[\\x09-\\x0d -~]* (E?SMTP|[Ss]imple [Mm]ail)\r\nuserspace flags=REG_NOSUB REG_EXTENDED\r\n";
        let pat = parse_pat_file(file).unwrap();
        assert_eq!(pat.name, "smtp");
        assert_eq!(
            pat.pattern,
            b"^220[\\x09-\\x0d -~]* (e?smtp|simple mail)".to_vec()
        );
        assert_eq!(
            pat.userspace_pattern.as_deref(),
            Some(&b"^220[\\x09-\\x0d -~]* (E?SMTP|[Ss]imple [Mm]ail)"[..])
        );
        assert_eq!(
            pat.userspace_flags.as_deref(),
            Some("REG_NOSUB REG_EXTENDED")
        );
    }

    #[test]
    fn rejects_incomplete_and_oversized_files() {
        assert_eq!(
            parse_pat_file(b"# only comments\n\n"),
            Err(PatError::NoName)
        );
        assert_eq!(
            parse_pat_file(b"name\n# no pattern\n"),
            Err(PatError::NoPattern)
        );
        let mut long = b"name\n".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_PATTERN_LEN));
        assert_eq!(
            parse_pat_file(&long),
            Err(PatError::PatternTooLong(MAX_PATTERN_LEN))
        );
        assert!(matches!(
            parse_pat_file(b"na\x01me\nx\n"),
            Err(PatError::BadName(_))
        ));
    }
}
