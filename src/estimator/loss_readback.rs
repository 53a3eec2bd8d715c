//! Which steps' losses the training loop reads back from the device.

use serde::{Deserialize, Serialize};

use crate::device::ResolvedDevice;

/// Which steps' losses the training loop reads back (`RunConfig::loss_readback`).
///
/// On a device that queues work (CUDA) a read waits for everything queued before it, so a
/// loss read drains the queue: read every step, the host waits for the device once a step
/// and the device then idles while the host queues the next one. On the CPU a read costs
/// nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReadback {
    /// [`EveryStep`](Self::EveryStep) on the CPU, [`WhenWanted`](Self::WhenWanted) on a
    /// device that queues work (CUDA).
    #[default]
    Auto,
    /// Every step's loss, one step late (step t's once step t+1 is queued): hooks see each
    /// step's loss, and a NaN stops training one step after it appears.
    EveryStep,
    /// Only the losses that are logged, summarised or checkpointed, and the first and last
    /// steps' (as a PyTorch loop calls `loss.item()` only when it logs): the device never
    /// drains between them. Hooks see the latest loss read (`StepInfo::loss_step` says
    /// whose); a NaN is caught at the next step read, before a scheduled checkpoint holds it
    /// (NaN weights make every later loss NaN).
    WhenWanted,
}

impl LossReadback {
    /// What this readback means on `device`: `Auto` becomes one of the others.
    pub fn on(self, device: ResolvedDevice) -> LossReadback {
        match (self, device) {
            (LossReadback::Auto, ResolvedDevice::Cpu) => LossReadback::EveryStep,
            (LossReadback::Auto, ResolvedDevice::Cuda(_)) => LossReadback::WhenWanted,
            (chosen, _) => chosen,
        }
    }
}

impl std::str::FromStr for LossReadback {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, crate::Error> {
        match s {
            "auto" => Ok(LossReadback::Auto),
            "every_step" | "every-step" => Ok(LossReadback::EveryStep),
            "when_wanted" | "when-wanted" => Ok(LossReadback::WhenWanted),
            other => Err(crate::Error::Config(format!(
                "unknown loss readback {other:?} (expected auto, every-step or when-wanted)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings_and_names_what_it_expected() {
        let parse = |s: &str| s.parse::<LossReadback>().unwrap();
        assert_eq!(parse("every-step"), LossReadback::EveryStep);
        assert_eq!(parse("when_wanted"), LossReadback::WhenWanted);
        assert_eq!(parse("auto"), LossReadback::Auto);
        let err = "sometimes".parse::<LossReadback>().unwrap_err().to_string();
        assert!(
            err.contains("\"sometimes\"") && err.contains("when-wanted"),
            "{err}"
        );
    }

    #[test]
    fn auto_reads_every_step_on_the_cpu_and_only_when_wanted_on_cuda() {
        use LossReadback::*;
        assert_eq!(Auto.on(ResolvedDevice::Cpu), EveryStep);
        assert_eq!(Auto.on(ResolvedDevice::Cuda(1)), WhenWanted);
        for chosen in [EveryStep, WhenWanted] {
            for device in [ResolvedDevice::Cpu, ResolvedDevice::Cuda(0)] {
                assert_eq!(chosen.on(device), chosen);
            }
        }
    }
}
