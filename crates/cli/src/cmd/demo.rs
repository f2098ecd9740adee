//! `flowbundle demo`.

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`flowbundle demo` is not built yet")
}
