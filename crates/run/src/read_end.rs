//! What the end of an input tells the user: a record cut by the end of the file, impossible original lengths, link
//! types the decoder does not follow.

use flowbundle_sinks::RunInfo;

/// At the end of one input: warn of a record cut by the end of the file and of impossible original lengths (read
/// as the captured length), and count both for the summary; name the link types of the input the decoder does not
/// follow (`linktype 147 in x.pcap`), for the summary line that counts their packets.
///
/// The link types are the ones the run's own reader saw declared ([`flowbundle_ingest::ReadStats::link_types`]):
/// the input is never opened again for them, which standard input or a pipe could not give (their bytes are gone)
/// and a FIFO would wait on for a writer.
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
    for &t in s.link_types.as_slice() {
        let name = format!("{t} in {}", path.display());
        if !flowbundle_decode::follows_link_type(t) && !info.link_types.contains(&name) {
            info.link_types.push(name);
        }
    }
    if s.link_types.more {
        let name = format!(
            "other link types in {} (more than {} declared)",
            path.display(),
            flowbundle_ingest::LinkTypes::KEPT
        );
        if !info.link_types.contains(&name) {
            info.link_types.push(name);
        }
    }
}
