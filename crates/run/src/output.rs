//! Where a streamed output goes: standard output, a file written through [`flowbundle_ingest::OutputFile`] (renamed
//! into place at the end, so a failed run leaves no half-written file), or an EVE output of Suricata's kinds.

/// A streamed output: standard output (`-`) or a file written through [`flowbundle_ingest::OutputFile`].
pub enum Output {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File(flowbundle_ingest::OutputFile),
    /// An EVE output of Suricata's kinds: a file appended to (and reopened), a Unix socket, Redis.
    Eve(flowbundle_sinks::EveOutput),
}

impl Output {
    /// Open `path` for writing (`-` is standard output), refusing a path that is one of `inputs`.
    pub fn open<P: AsRef<std::path::Path>>(
        path: &std::path::Path,
        inputs: impl IntoIterator<Item = P>,
    ) -> anyhow::Result<Output> {
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout(),
            )));
        }
        flowbundle_ingest::refuse_input_as_output(path, inputs)?;
        Ok(Output::File(flowbundle_ingest::OutputFile::create(path)?))
    }

    /// Flush, and give a file its name.
    pub fn finish(self) -> anyhow::Result<()> {
        self.finish_counted().map(|_| ())
    }

    /// [`Output::finish`], and an EVE output's counters.
    pub fn finish_counted(self) -> anyhow::Result<Option<flowbundle_sinks::OutputCounters>> {
        use std::io::Write as _;
        match self {
            Output::Stdout(mut w) => w.flush()?,
            Output::File(f) => f.commit()?,
            Output::Eve(e) => {
                let what = e.target().to_string();
                return Ok(Some(
                    e.finish().map_err(|err| anyhow::anyhow!("{what}: {err}"))?,
                ));
            }
        }
        Ok(None)
    }
}

impl std::io::Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::Stdout(w) => w.write(buf),
            Output::File(f) => f.write(buf),
            Output::Eve(e) => e.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout(w) => w.write_all(buf),
            Output::File(f) => f.write_all(buf),
            Output::Eve(e) => e.write_all(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Output::Stdout(w) => w.write_vectored(bufs),
            Output::File(f) => f.write_vectored(bufs),
            Output::Eve(e) => e.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Stdout(w) => w.flush(),
            Output::File(f) => f.flush(),
            Output::Eve(e) => e.flush(),
        }
    }
}

/// A failed write to standard output, as an error the binary's `main` can recognise (a closed pipe is not a failure).
pub fn stdout_error(e: std::io::Error) -> anyhow::Error {
    anyhow::Error::new(e).context("cannot write to standard output")
}

/// Write a whole output file (a JSON report): `-` is standard output; a file is refused when it is one of `inputs`,
/// and written through a temporary file renamed at the end, so a failure leaves no half-written file.
pub fn write_output<P: AsRef<std::path::Path>>(
    output: &std::path::Path,
    inputs: impl IntoIterator<Item = P>,
    bytes: impl AsRef<[u8]>,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    if output.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes.as_ref()).map_err(stdout_error)?;
        out.flush().map_err(stdout_error)?;
        return Ok(());
    }
    flowbundle_ingest::refuse_input_as_output(output, inputs)?;
    let mut f = flowbundle_ingest::OutputFile::create(output)?;
    f.write_all(bytes.as_ref())
        .map_err(|e| anyhow::anyhow!("{}: {e}", output.display()))?;
    f.commit()?;
    Ok(())
}
