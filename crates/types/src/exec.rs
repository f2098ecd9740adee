//! How a packet's processing is laid out over the cores: the execution models the runtime runs
//! (`flowbundle inspect --exec`) and the simulator models (`flowbundle simulate --exec`).

/// An execution model (the Verdú thesis, chapters 5–6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exec {
    /// Run-to-completion: every worker runs every stage of the packets it takes.
    Rtc,
    /// Software pipeline: stage groups in a fixed order, every packet through every stage.
    Pipeline,
    /// MultiLayer Processing: a group of workers per state layer, a packet visiting the layers it needs.
    Multilayer,
}

impl Exec {
    /// Every model, in the thesis' order.
    pub const ALL: [Exec; 3] = [Exec::Rtc, Exec::Pipeline, Exec::Multilayer];

    pub fn name(self) -> &'static str {
        match self {
            Exec::Rtc => "rtc",
            Exec::Pipeline => "pipeline",
            Exec::Multilayer => "multilayer",
        }
    }

    pub fn parse(s: &str) -> Option<Exec> {
        Exec::ALL.into_iter().find(|e| e.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in Exec::ALL {
            assert_eq!(Exec::parse(e.name()), Some(e));
        }
        assert_eq!(Exec::parse("mlp"), None);
    }
}
