//! `flowbundle bench`.

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`flowbundle bench` is not built yet")
}
