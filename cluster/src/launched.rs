//! A rank started by a process launcher other than TF_CONFIG's writers — torchrun, Open MPI's
//! or MPICH's `mpirun`, Slurm's `srun` — read from the variables each one sets. Such a
//! launcher gives a process its rank and the world size, not the other ranks' addresses:
//! those come from the rendezvous at rank 0 (`rendezvous.rs`), at the address said here.

use std::fmt;

use crate::hostlist::first_host;
use crate::TfConfigError;

/// The rendezvous port when nothing names one: torchrun's default `MASTER_PORT`.
pub const DEFAULT_RENDEZVOUS_PORT: u16 = 29500;

/// Variable naming the rendezvous port, over every other rule.
pub const RENDEZVOUS_PORT: &str = "ESTIMATOR_RENDEZVOUS_PORT";

/// Which launcher started this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// `torchrun` (or anything setting `RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`).
    Torchrun,
    /// Open MPI's `mpirun` (`OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`).
    OpenMpi,
    /// MPICH's or Intel MPI's `mpirun` / `mpiexec` (`PMI_RANK`, `PMI_SIZE`).
    Pmi,
    /// Slurm's `srun` (`SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_STEP_NODELIST`).
    Slurm,
}

impl Launcher {
    /// The variable holding the rank.
    pub fn rank_variable(self) -> &'static str {
        match self {
            Launcher::Torchrun => "RANK",
            Launcher::OpenMpi => "OMPI_COMM_WORLD_RANK",
            Launcher::Pmi => "PMI_RANK",
            Launcher::Slurm => "SLURM_PROCID",
        }
    }

    /// The variable holding the world size.
    pub fn size_variable(self) -> &'static str {
        match self {
            Launcher::Torchrun => "WORLD_SIZE",
            Launcher::OpenMpi => "OMPI_COMM_WORLD_SIZE",
            Launcher::Pmi => "PMI_SIZE",
            Launcher::Slurm => "SLURM_NTASKS",
        }
    }

    fn local_rank_variable(self) -> &'static str {
        match self {
            Launcher::Torchrun => "LOCAL_RANK",
            Launcher::OpenMpi => "OMPI_COMM_WORLD_LOCAL_RANK",
            Launcher::Pmi => "MPI_LOCALRANKID",
            Launcher::Slurm => "SLURM_LOCALID",
        }
    }

    /// The variable holding the number of ranks on this host, where the launcher sets one.
    fn local_size_variable(self) -> Option<&'static str> {
        match self {
            Launcher::Torchrun => Some("LOCAL_WORLD_SIZE"),
            Launcher::OpenMpi => Some("OMPI_COMM_WORLD_LOCAL_SIZE"),
            Launcher::Pmi => Some("MPI_LOCALNRANKS"),
            Launcher::Slurm => None,
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI's mpirun",
            Launcher::Pmi => "MPICH's or Intel MPI's mpirun (PMI)",
            Launcher::Slurm => "Slurm's srun",
        })
    }
}

/// Where rank 0 listens for the other ranks' addresses, and what said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RendezvousAddress {
    /// Rank 0's host as the other ranks reach it (a name or an IP).
    pub host: String,
    /// The port rank 0 listens on for the rendezvous.
    pub port: u16,
    /// The variables (or default) the address comes from, for messages.
    pub from: String,
}

impl fmt::Display for RendezvousAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", host_port(&self.host, self.port))
    }
}

/// `host:port`, an IPv6 literal in brackets.
pub(crate) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// This process as a launcher started it: a rank of a world of several processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchedRank {
    /// The launcher.
    pub launcher: Launcher,
    /// This process's rank: 0 is the chief, rank r > 0 is worker r − 1.
    pub rank: usize,
    /// How many processes train together.
    pub world_size: usize,
    /// Its rank among the processes of its host, when the launcher says.
    pub local_rank: Option<usize>,
    /// Where the ranks exchange their addresses.
    pub rendezvous: RendezvousAddress,
}

/// What the launcher variables (looked up through `var`) say: `None` when no launcher of
/// [`Launcher`] started this process or when it started it alone (a world of one trains
/// locally); an error naming the variable when they are set but unusable. When several
/// launchers' variables are set, the innermost launcher wins: torchrun (run by srun or
/// mpirun), then mpirun (run inside a Slurm allocation), then Slurm.
pub fn launched_rank(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<LaunchedRank>, TfConfigError> {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let launcher = if set("RANK") || set("WORLD_SIZE") {
        Launcher::Torchrun
    } else if set("OMPI_COMM_WORLD_RANK") || set("OMPI_COMM_WORLD_SIZE") {
        Launcher::OpenMpi
    } else if set("PMI_RANK") || set("PMI_SIZE") {
        Launcher::Pmi
    } else if set("SLURM_PROCID") && set("SLURM_STEP_NODELIST") {
        // A batch script has SLURM_PROCID and SLURM_NTASKS but no step: only srun's tasks
        // are ranks.
        Launcher::Slurm
    } else {
        return Ok(None);
    };
    let number = |name: &str| -> Result<usize, TfConfigError> {
        let value = var(name).ok_or_else(|| {
            TfConfigError::launcher(format!(
                "{name} is not set, though {} is: {launcher} sets both",
                if name == launcher.rank_variable() {
                    launcher.size_variable()
                } else {
                    launcher.rank_variable()
                }
            ))
        })?;
        value.trim().parse().map_err(|_| {
            TfConfigError::launcher(format!(
                "{name} = '{value}' is not a non-negative integer ({launcher})"
            ))
        })
    };
    let world_size = number(launcher.size_variable())?;
    let rank = number(launcher.rank_variable())?;
    if world_size == 0 {
        return Err(TfConfigError::launcher(format!(
            "{} = 0: a world needs at least one process",
            launcher.size_variable()
        )));
    }
    if rank >= world_size {
        return Err(TfConfigError::launcher(format!(
            "{} = {rank} but {} = {world_size}: ranks run from 0 to {}",
            launcher.rank_variable(),
            launcher.size_variable(),
            world_size - 1
        )));
    }
    if world_size == 1 {
        return Ok(None);
    }
    let local = |name: &str| var(name).and_then(|v| v.trim().parse::<usize>().ok());
    let local_rank = local(launcher.local_rank_variable());
    let all_on_one_host = launcher
        .local_size_variable()
        .and_then(local)
        .is_some_and(|local_size| local_size == world_size);
    let rendezvous = rendezvous_address(launcher, &var, all_on_one_host)?;
    Ok(Some(LaunchedRank {
        launcher,
        rank,
        world_size,
        local_rank,
        rendezvous,
    }))
}

/// Rank 0's rendezvous address: `MASTER_ADDR` when set (torchrun always sets it), else the
/// first host of Slurm's step, else this host when mpirun started every rank here.
/// The port: `ESTIMATOR_RENDEZVOUS_PORT`, else `MASTER_PORT` — one above it under torchrun's
/// elastic agent, whose own store already listens on `MASTER_PORT` of rank 0's host — else
/// [`DEFAULT_RENDEZVOUS_PORT`].
fn rendezvous_address(
    launcher: Launcher,
    var: &impl Fn(&str) -> Option<String>,
    all_on_one_host: bool,
) -> Result<RendezvousAddress, TfConfigError> {
    let value = |name: &str| {
        var(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (host, host_from) = match value("MASTER_ADDR") {
        Some(host) => (host, "MASTER_ADDR".to_string()),
        None if launcher == Launcher::Torchrun => {
            return Err(TfConfigError::launcher(
                "MASTER_ADDR is not set, though RANK and WORLD_SIZE are: rank 0's host is \
                 needed to find the other ranks",
            ))
        }
        None if launcher == Launcher::Slurm => {
            let list = value("SLURM_STEP_NODELIST").unwrap_or_default();
            let host = first_host(&list).ok_or_else(|| {
                TfConfigError::launcher(format!(
                    "SLURM_STEP_NODELIST = '{list}' is not a Slurm host list"
                ))
            })?;
            (host, "the first host of SLURM_STEP_NODELIST".to_string())
        }
        None if all_on_one_host => ("127.0.0.1".to_string(), "every rank on this host".into()),
        None => {
            return Err(TfConfigError::launcher(format!(
                "MASTER_ADDR is not set, and {launcher} started ranks on several hosts: set it \
                 to rank 0's host (mpirun -x MASTER_ADDR=…)"
            )))
        }
    };
    let port_from = |name: &str| -> Result<Option<u16>, TfConfigError> {
        match value(name) {
            None => Ok(None),
            Some(text) => match text.parse::<u16>() {
                Ok(port) if port > 0 => Ok(Some(port)),
                _ => Err(TfConfigError::launcher(format!(
                    "{name} = '{text}' is not a port (1 to 65535)"
                ))),
            },
        }
    };
    let agent_store = value("TORCHELASTIC_USE_AGENT_STORE")
        .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let (port, port_from_text) = if let Some(port) = port_from(RENDEZVOUS_PORT)? {
        (port, RENDEZVOUS_PORT.to_string())
    } else if let Some(port) = port_from("MASTER_PORT")? {
        if launcher == Launcher::Torchrun && agent_store {
            let above = port.checked_add(1).ok_or_else(|| {
                TfConfigError::launcher(format!(
                    "MASTER_PORT = {port}: torchrun's agent holds it and there is no port \
                     above it; set {RENDEZVOUS_PORT}"
                ))
            })?;
            (above, "MASTER_PORT + 1, above torchrun's store".to_string())
        } else {
            (port, "MASTER_PORT".to_string())
        }
    } else if launcher == Launcher::Torchrun {
        return Err(TfConfigError::launcher(
            "MASTER_PORT is not set, though RANK and WORLD_SIZE are",
        ));
    } else {
        (DEFAULT_RENDEZVOUS_PORT, "the default port".to_string())
    };
    Ok(RendezvousAddress {
        host,
        port,
        from: format!("{host_from}, {port_from_text}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launched(vars: &[(&str, &str)]) -> Result<Option<LaunchedRank>, TfConfigError> {
        launched_rank(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    fn rank(vars: &[(&str, &str)]) -> LaunchedRank {
        launched(vars).unwrap().expect("a launched rank")
    }

    fn refusal(vars: &[(&str, &str)]) -> String {
        launched(vars).unwrap_err().to_string()
    }

    #[test]
    fn torchrun_gives_rank_world_and_master_address() {
        let me = rank(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29400"),
        ]);
        assert_eq!(me.launcher, Launcher::Torchrun);
        assert_eq!((me.rank, me.world_size, me.local_rank), (1, 2, Some(1)));
        assert_eq!(me.rendezvous.to_string(), "127.0.0.1:29400");
        assert_eq!(me.rendezvous.from, "MASTER_ADDR, MASTER_PORT");
    }

    #[test]
    fn under_torchruns_agent_the_rendezvous_is_one_port_above_its_store() {
        let vars = [
            ("RANK", "0"),
            ("WORLD_SIZE", "4"),
            ("MASTER_ADDR", "node-a"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_USE_AGENT_STORE", "True"),
        ];
        assert_eq!(rank(&vars).rendezvous.to_string(), "node-a:29501");
        let chosen = [&vars[..], &[(RENDEZVOUS_PORT, "40000")]].concat();
        assert_eq!(rank(&chosen).rendezvous.to_string(), "node-a:40000");
    }

    #[test]
    fn mpirun_on_one_host_meets_on_this_host_and_across_hosts_needs_master_addr() {
        let one_host = rank(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert_eq!(one_host.launcher, Launcher::OpenMpi);
        assert_eq!(one_host.rendezvous.to_string(), "127.0.0.1:29500");
        let several = refusal(&[
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "4"),
            ("MPI_LOCALNRANKS", "2"),
        ]);
        assert!(
            several.starts_with("MASTER_ADDR is not set, and MPICH's"),
            "{several}"
        );
        let named = rank(&[
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "4"),
            ("MASTER_ADDR", "fe80::1"),
            ("MASTER_PORT", "7000"),
        ]);
        assert_eq!(named.launcher, Launcher::Pmi);
        assert_eq!(named.rendezvous.to_string(), "[fe80::1]:7000");
    }

    #[test]
    fn slurm_meets_at_the_first_host_of_the_step() {
        let me = rank(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_STEP_NODELIST", "gpu[07-10,12],login1"),
        ]);
        assert_eq!(me.launcher, Launcher::Slurm);
        assert_eq!(me.rendezvous.to_string(), "gpu07:29500");
        assert_eq!(me.local_rank, Some(1));
        // A batch script (no step) is no rank.
        assert_eq!(
            launched(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8")]).unwrap(),
            None
        );
    }

    #[test]
    fn the_innermost_launcher_wins() {
        let me = rank(&[
            ("RANK", "2"),
            ("WORLD_SIZE", "4"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "1"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_STEP_NODELIST", "n1"),
        ]);
        assert_eq!((me.launcher, me.rank), (Launcher::Torchrun, 2));
    }

    proptest::proptest! {
        #[test]
        fn any_values_are_a_rank_a_local_process_or_an_error(
            values in proptest::collection::vec(
                proptest::option::of("[0-9]{0,3}|.{0,12}"),
                10,
            ),
        ) {
            let names = [
                "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID",
                "SLURM_NTASKS", "SLURM_STEP_NODELIST",
            ];
            let result = launched_rank(|name| {
                names.iter().position(|n| *n == name).and_then(|i| values[i].clone())
            });
            if let Ok(Some(me)) = result {
                proptest::prop_assert!(me.rank < me.world_size && me.world_size > 1);
                proptest::prop_assert!(me.rendezvous.port > 0 && !me.rendezvous.host.is_empty());
            }
        }
    }

    #[test]
    fn nothing_or_a_world_of_one_is_local() {
        assert_eq!(launched(&[]).unwrap(), None);
        assert_eq!(
            launched(&[("RANK", "0"), ("WORLD_SIZE", "1")]).unwrap(),
            None
        );
    }

    #[test]
    fn unusable_values_are_refused_naming_the_variable() {
        let base = [("MASTER_ADDR", "h"), ("MASTER_PORT", "29500")];
        let cases: [(&[(&str, &str)], &str); 8] = [
            (
                &[("RANK", "1")],
                "WORLD_SIZE is not set, though RANK is: torchrun sets both",
            ),
            (
                &[("WORLD_SIZE", "2")],
                "RANK is not set, though WORLD_SIZE is",
            ),
            (
                &[("RANK", "x"), ("WORLD_SIZE", "2")],
                "RANK = 'x' is not a non-negative integer",
            ),
            (
                &[("RANK", "2"), ("WORLD_SIZE", "2")],
                "RANK = 2 but WORLD_SIZE = 2: ranks run from 0 to 1",
            ),
            (&[("RANK", "0"), ("WORLD_SIZE", "0")], "WORLD_SIZE = 0"),
            (
                &[("RANK", "99999999999999999999"), ("WORLD_SIZE", "2")],
                "RANK = '99999999999999999999'",
            ),
            (
                &[
                    ("OMPI_COMM_WORLD_RANK", "-1"),
                    ("OMPI_COMM_WORLD_SIZE", "2"),
                ],
                "OMPI_COMM_WORLD_RANK = '-1'",
            ),
            (
                &[("SLURM_PROCID", "0"), ("SLURM_STEP_NODELIST", "n1")],
                "SLURM_NTASKS is not set",
            ),
        ];
        for (vars, expected) in cases {
            let vars = [vars, &base[..]].concat();
            let message = refusal(&vars);
            assert!(message.starts_with(expected), "{vars:?}: {message}");
        }
        let slurm = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_STEP_NODELIST", "n[1-"),
        ];
        assert!(
            refusal(&slurm).starts_with("SLURM_STEP_NODELIST = 'n[1-' is not a Slurm host list")
        );
        let torchrun = [("RANK", "0"), ("WORLD_SIZE", "2")];
        assert!(refusal(&torchrun).starts_with("MASTER_ADDR is not set"));
        let no_port = [&torchrun[..], &[("MASTER_ADDR", "h")]].concat();
        assert!(refusal(&no_port).starts_with("MASTER_PORT is not set"));
        for port in ["0", "65536", "http"] {
            let bad = [
                &torchrun[..],
                &[("MASTER_ADDR", "h"), ("MASTER_PORT", port)],
            ]
            .concat();
            let message = refusal(&bad);
            assert!(
                message.starts_with(&format!("MASTER_PORT = '{port}' is not a port")),
                "{message}"
            );
        }
    }
}
