//! `flowbundle simulate`.

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`flowbundle simulate` is not built yet")
}
