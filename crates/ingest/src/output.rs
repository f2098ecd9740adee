//! Writing output files without losing input: every command that writes a file goes through here.
//!
//! Two rules, kept in this one place:
//! - an output must not be one of the inputs ([`refuse_input_as_output`]): the same file is recognised by device and
//!   inode (Unix) or by canonical path (elsewhere), so `./a.pcap`, `a.pcap` and a hard link all count;
//! - an output appears only when complete ([`OutputFile`]): it is written to a temporary file in the target's
//!   directory and renamed over the target by [`OutputFile::commit`]. A run that fails half-way leaves the old file
//!   (or none) in place, never a truncated one.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// Refuse an `output` that is the same file as one of `inputs`.
///
/// `-` (standard output) is never a file here. An output that does not exist yet cannot be an input; an input that
/// cannot be examined is left for its reader to report.
pub fn refuse_input_as_output<I, P>(output: &Path, inputs: I) -> Result<(), Error>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    if output.as_os_str() == "-" {
        return Ok(());
    }
    let Some(out_id) = FileId::of(output) else {
        return Ok(());
    };
    for input in inputs {
        let input = input.as_ref();
        if input.as_os_str() != "-" && FileId::of(input).is_some_and(|id| id == out_id) {
            return Err(Error::OutputIsInput {
                output: output.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// What makes two paths the same file.
#[derive(PartialEq, Eq)]
enum FileId {
    #[cfg(unix)]
    Inode { dev: u64, ino: u64 },
    #[cfg(not(unix))]
    Canonical(PathBuf),
}

impl FileId {
    fn of(path: &Path) -> Option<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(path).ok()?;
            Some(FileId::Inode {
                dev: m.dev(),
                ino: m.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            std::fs::canonicalize(path).ok().map(FileId::Canonical)
        }
    }
}

/// An output file under construction: a buffered temporary file beside `path`, renamed to `path` by
/// [`commit`](OutputFile::commit). Dropped without a commit, the temporary file is removed and `path` is untouched.
///
/// A `path` that exists and is not a regular file (a device such as `/dev/null`, a named pipe) is written directly:
/// it cannot be replaced, and nothing of it can be lost.
#[derive(Debug)]
pub struct OutputFile {
    sink: Target,
    path: PathBuf,
}

#[derive(Debug)]
enum Target {
    Temporary(BufWriter<tempfile::NamedTempFile>),
    Direct(BufWriter<File>),
}

impl OutputFile {
    /// Start writing `path` (its directory must exist and be writable). Errors name the path.
    pub fn create(path: impl AsRef<Path>) -> Result<OutputFile, Error> {
        let path = path.as_ref();
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| Error::file(path, e))?;
            return Ok(OutputFile {
                sink: Target::Direct(BufWriter::with_capacity(256 * 1024, file)),
                path: path.to_path_buf(),
            });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path.file_name().ok_or_else(|| {
            Error::file(
                path,
                io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
            )
        })?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            .tempfile_in(dir)
            .map_err(|e| Error::file(path, e))?;
        Ok(OutputFile {
            sink: Target::Temporary(BufWriter::with_capacity(256 * 1024, tmp)),
            path: path.to_path_buf(),
        })
    }

    /// The path the file will have once committed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush, sync and rename the temporary file to the target path (replacing what was there).
    pub fn commit(self) -> Result<(), Error> {
        let path = self.path;
        let tmp = match self.sink {
            Target::Temporary(w) => w,
            Target::Direct(mut w) => return w.flush().map_err(|e| Error::file(&path, e)),
        };
        let tmp = tmp
            .into_inner()
            .map_err(|e| Error::file(&path, e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::file(&path, e))?;
        let file: File = tmp
            .persist(&path)
            .map_err(|e| Error::file(&path, e.error))?;
        drop(file);
        Ok(())
    }
}

/// Bytes from which a vectored write to an [`OutputFile`] goes to the file directly instead of through its buffer
/// (256 KiB): a system call costs about what copying a few KiB does, so from 16 KiB on the copy costs more than the
/// call it saves. (A buffered writer passes a write through itself only from its capacity on, and a vectored one
/// only to a writer it knows takes vectored writes, which the temporary file cannot say on stable Rust.) What it is
/// for: `inspect --threads N` hands the workers' rendered EVE to the output in batches of many packets' lines
/// (measured with the 10k content set on five times the merged nDPI trace: 188 MB of EVE, of which the collector
/// copied 153 MB into the buffer with a pass-through from 256 KiB on, its calls releasing less than that).
pub const PASS_THROUGH: usize = 16 << 10;

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Target::Temporary(w) => w.write(buf),
            Target::Direct(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Target::Temporary(w) => w.write_all(buf),
            Target::Direct(w) => w.write_all(buf),
        }
    }

    /// Parts of [`PASS_THROUGH`] bytes or more in all go to the file in one vectored write, without being copied
    /// into the buffer first (after what the buffer holds); fewer are buffered.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        fn through<W: Write>(w: &mut BufWriter<W>, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            let total = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
            if total >= PASS_THROUGH {
                w.flush()?;
                w.get_mut().write_vectored(bufs)
            } else {
                w.write_vectored(bufs)
            }
        }
        match &mut self.sink {
            Target::Temporary(w) => through(w, bufs),
            Target::Direct(w) => through(w, bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Target::Temporary(w) => w.flush(),
            Target::Direct(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectored writes of [`PASS_THROUGH`] bytes or more go to the file past the buffer, after what the buffer
    /// holds; smaller ones are buffered: either way the file holds every byte in the order written.
    #[test]
    fn vectored_writes_keep_the_order_whether_buffered_or_passed_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.json");
        let mut f = OutputFile::create(&target).unwrap();
        let big = vec![b'b'; PASS_THROUGH];
        let mut want = Vec::new();
        f.write_all(b"first\n").unwrap();
        want.extend_from_slice(b"first\n");
        for parts in [
            vec![&b"s1\n"[..], &b"s2\n"[..]],
            vec![&b"p1\n"[..], &big[..], &b"p2\n"[..]],
        ] {
            let mut slices: Vec<io::IoSlice<'_>> =
                parts.iter().map(|p| io::IoSlice::new(p)).collect();
            let mut bufs = &mut slices[..];
            while !bufs.is_empty() {
                let n = f.write_vectored(bufs).unwrap();
                assert!(n > 0);
                io::IoSlice::advance_slices(&mut bufs, n);
            }
            parts.iter().for_each(|p| want.extend_from_slice(p));
        }
        f.write_all(b"last\n").unwrap();
        want.extend_from_slice(b"last\n");
        f.commit().unwrap();
        assert!(std::fs::read(&target).unwrap() == want);
    }

    #[test]
    fn the_same_file_under_another_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.pcap");
        std::fs::write(&a, b"x").unwrap();
        let linked = dir.path().join("b.pcap");
        std::fs::hard_link(&a, &linked).unwrap();
        let dotted = dir.path().join(".").join("a.pcap");
        for out in [&a, &linked, &dotted] {
            let e = refuse_input_as_output(out, [&a]).unwrap_err();
            assert!(matches!(e, Error::OutputIsInput { .. }), "{e}");
        }
        let other = dir.path().join("c.pcap");
        refuse_input_as_output(&other, [&a]).unwrap();
        std::fs::write(&other, b"y").unwrap();
        refuse_input_as_output(&other, [&a]).unwrap();
        refuse_input_as_output(Path::new("-"), [&a]).unwrap();
    }

    #[test]
    fn an_output_appears_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, b"old").unwrap();
        let mut f = OutputFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.flush().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        drop(f);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        let mut f = OutputFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }
}
