//! One module per command group; each owns its clap arguments and a `run` function.

pub mod bench;
pub mod demo;
pub mod hetero;
pub mod inspect;
pub mod simulate;
pub mod trace;

/// The `--scheduler` list of `bench` and `simulate`: `all` means every policy; any other name must be a known one
/// (`lfb_affinity` is accepted as a spelling of `lfb-affinity`).
pub fn scheduler_list(names: &[String]) -> anyhow::Result<Vec<String>> {
    let all = flowbundle_scheduler::ALL;
    if names.iter().any(|s| s == "all") {
        return Ok(all.iter().map(|s| s.to_string()).collect());
    }
    for s in names {
        if !all.contains(&s.as_str()) && s != "lfb_affinity" {
            anyhow::bail!("unknown scheduler `{s}` (known: {})", all.join(", "));
        }
    }
    Ok(names.to_vec())
}
