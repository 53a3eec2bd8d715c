//! A rank started by a process launcher other than TF_CONFIG's writers — torchrun, Open MPI's
//! or MPICH's `mpirun`, Slurm's `srun` — read from the variables each one sets. Such a
//! launcher gives a process its rank and the world size, not the other ranks' addresses:
//! those come from the rendezvous at rank 0 (`rendezvous.rs`), at the address said here.

use std::fmt;

use crate::hostlist::first_host;
use crate::Error;

/// The rendezvous port when nothing names one: torchrun's default `MASTER_PORT`.
pub const DEFAULT_RENDEZVOUS_PORT: u16 = 29500;

/// Variable naming the rendezvous port, over every other rule.
pub const RENDEZVOUS_PORT: &str = "ESTIMATOR_RENDEZVOUS_PORT";

/// The largest world a launcher's variables may declare: rank 0 holds a connection and a
/// slot per rank during the rendezvous, so a mistyped size must not become its allocation.
pub(crate) const MAX_WORLD_SIZE: usize = 1 << 20;

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
pub fn launched_rank(var: impl Fn(&str) -> Option<String>) -> Result<Option<LaunchedRank>, Error> {
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
    let number = |name: &str| -> Result<usize, Error> {
        let value = var(name).ok_or_else(|| {
            Error::variable(
                name,
                format!(
                    "{name} is not set, though {} is: {launcher} sets both",
                    if name == launcher.rank_variable() {
                        launcher.size_variable()
                    } else {
                        launcher.rank_variable()
                    }
                ),
            )
        })?;
        value.trim().parse().map_err(|_| {
            Error::variable(
                name,
                format!("{name} = '{value}' is not a non-negative integer ({launcher})"),
            )
        })
    };
    let world_size = number(launcher.size_variable())?;
    let rank = number(launcher.rank_variable())?;
    if world_size == 0 {
        return Err(Error::variable(
            launcher.size_variable(),
            format!(
                "{} = 0: a world needs at least one process",
                launcher.size_variable()
            ),
        ));
    }
    if world_size > MAX_WORLD_SIZE {
        return Err(Error::variable(
            launcher.size_variable(),
            format!(
                "{} = {world_size}: more ranks than rank 0's rendezvous gathers (at most \
                 {MAX_WORLD_SIZE})",
                launcher.size_variable()
            ),
        ));
    }
    if rank >= world_size {
        return Err(Error::variable(
            launcher.rank_variable(),
            format!(
                "{} = {rank} but {} = {world_size}: ranks run from 0 to {}",
                launcher.rank_variable(),
                launcher.size_variable(),
                world_size - 1
            ),
        ));
    }
    if world_size == 1 {
        return Ok(None);
    }
    // Optional, but a value set and unusable is a launcher misread: say so, as for the rank.
    let local = |name: &str| -> Result<Option<usize>, Error> {
        let Some(text) = var(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
        else {
            return Ok(None);
        };
        text.parse().map(Some).map_err(|_| {
            Error::variable(
                name,
                format!("{name} = '{text}' is not a non-negative integer ({launcher})"),
            )
        })
    };
    let local_rank = local(launcher.local_rank_variable())?;
    let all_on_one_host = match launcher.local_size_variable() {
        Some(name) => local(name)? == Some(world_size),
        None => false,
    };
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
) -> Result<RendezvousAddress, Error> {
    let value = |name: &str| {
        var(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (host, host_from) = match value("MASTER_ADDR") {
        Some(host) => (host, "MASTER_ADDR".to_string()),
        None if launcher == Launcher::Torchrun => {
            return Err(Error::variable(
                "MASTER_ADDR",
                "MASTER_ADDR is not set, though RANK and WORLD_SIZE are: rank 0's host is \
                 needed to find the other ranks",
            ))
        }
        None if launcher == Launcher::Slurm => {
            let list = value("SLURM_STEP_NODELIST").unwrap_or_default();
            let host = first_host(&list).ok_or_else(|| {
                Error::variable(
                    "SLURM_STEP_NODELIST",
                    format!("SLURM_STEP_NODELIST = '{list}' is not a Slurm host list"),
                )
            })?;
            (host, "the first host of SLURM_STEP_NODELIST".to_string())
        }
        None if all_on_one_host => ("127.0.0.1".to_string(), "every rank on this host".into()),
        None => {
            return Err(Error::variable(
                "MASTER_ADDR",
                format!(
                "MASTER_ADDR is not set, and {launcher} started ranks on several hosts: set it \
                 to rank 0's host (mpirun -x MASTER_ADDR=…)"
            ),
            ))
        }
    };
    let port_from = |name: &str| -> Result<Option<u16>, Error> {
        match value(name) {
            None => Ok(None),
            Some(text) => match text.parse::<u16>() {
                Ok(port) if port > 0 => Ok(Some(port)),
                _ => Err(Error::variable(
                    name,
                    format!("{name} = '{text}' is not a port (1 to 65535)"),
                )),
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
                Error::variable(
                    RENDEZVOUS_PORT,
                    format!(
                        "MASTER_PORT = {port}: torchrun's agent holds it and there is no port \
                     above it; set {RENDEZVOUS_PORT}"
                    ),
                )
            })?;
            (above, "MASTER_PORT + 1, above torchrun's store".to_string())
        } else {
            (port, "MASTER_PORT".to_string())
        }
    } else if launcher == Launcher::Torchrun {
        return Err(Error::variable(
            "MASTER_PORT",
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
mod tests;
