//! What the end of an input tells the user: a record cut by the end of the file, impossible original lengths, link
//! types the decoder does not follow.

use std::path::PathBuf;

use flowbundle_ingest::CaptureReader;
use flowbundle_sinks::RunInfo;

/// At the end of one input: warn of a record cut by the end of the file and of impossible original lengths (read
/// as the captured length), and count both for the summary.
pub fn note_read_end(path: &std::path::Path, s: &flowbundle_ingest::ReadStats, info: &mut RunInfo) {
    if s.truncated_records > 0 {
        eprintln!(
            "warning: {}: the last record is cut by the end of the file (read up to there)",
            path.display()
        );
    }
    if s.clamped_lengths > 0 {
        eprintln!(
            "warning: {}: {} packets claim an impossible original length; counted at their captured length",
            path.display(),
            s.clamped_lengths
        );
    }
    info.truncated_records += s.truncated_records;
    info.clamped_lengths += s.clamped_lengths;
}

/// The link types of `files` the decoder does not follow, named (`linktype 147 in x.pcap`), for the summary line
/// that counts their packets. Reads each file's header and first packet (pcapng declares interfaces as it goes).
pub fn unsupported_link_types(files: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for f in files.iter().filter(|f| f.as_os_str() != "-") {
        let Ok(mut r) = CaptureReader::open(f) else {
            continue;
        };
        let _ = r.next_packet();
        for i in r.interfaces() {
            let name = format!("{} in {}", i.link_type, f.display());
            if !flowbundle_decode::follows_link_type(i.link_type) && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}
