//! A run's capture inputs, checked and opened before anything runs.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use flowbundle_ingest::{CaptureReader, Probed};

/// Probes every input ([`CaptureReader::probe`]) before the run starts, in order: a missing file, an empty one or
/// one that is not a capture is an error, not an empty input (the parallel runs would otherwise count it and go on,
/// the serial one stop at it after inspecting the inputs before it), and no output is left behind. Reading the header
/// costs one read per input; standard input and pipes are held open by the probe's handle, which gives the bytes it
/// read back to the run.
///
/// An input that can be read only once (standard input, a pipe, a FIFO, a character device) named twice is refused
/// before any is read, whatever the names (`-` and `/dev/stdin`, a FIFO's path twice, `/dev/fd/63` and
/// `/proc/self/fd/63`): the second probe would take bytes of the capture after the first one's header as a header of
/// its own. Regular files may be named twice (each is read in full).
pub fn probe(files: &[PathBuf]) -> anyhow::Result<Vec<Probed>> {
    refuse_one_stream_twice(files)?;
    files
        .iter()
        .map(|f| CaptureReader::probe(f).with_context(|| format!("cannot open {}", f.display())))
        .collect()
}

/// Refuses an input that can be read only once when it is named twice (see [`probe`]).
pub fn refuse_one_stream_twice(files: &[PathBuf]) -> anyhow::Result<()> {
    if files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        bail!("standard input (`-`) can be read only once");
    }
    let mut seen: Vec<((u64, u64), &Path)> = Vec::new();
    for f in files {
        let Some(id) = read_once_identity(f) else {
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(i, _)| *i == id) {
            bail!(
                "{} and {} are the same pipe (or terminal), which can be read only once: name it once",
                first.display(),
                f.display()
            );
        }
        seen.push((id, f.as_path()));
    }
    Ok(())
}

/// The device and inode of an input that can be read only once (not a regular file, nor a directory), as the probe
/// decides it; `None` for the rest, and for a path that cannot be looked at (its probe says why). Looks at the file
/// without opening it: a FIFO opened would wait for a writer.
#[cfg(unix)]
fn read_once_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = if path.as_os_str() == "-" {
        use std::os::fd::AsFd as _;
        let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        std::fs::File::from(fd).metadata().ok()?
    } else {
        std::fs::metadata(path).ok()?
    };
    (!meta.is_file() && !meta.is_dir()).then(|| (meta.dev(), meta.ino()))
}

/// Elsewhere: no identity to compare (standard input named twice is still refused by name).
#[cfg(not(unix))]
fn read_once_identity(_: &Path) -> Option<(u64, u64)> {
    None
}
