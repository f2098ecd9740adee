//! `flowbundle inspect`.

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`flowbundle inspect` is not built yet")
}
